//! The loop's rules, one scripted scenario each.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use yetibot_redaction::Secrets;
use yetibot_tool_policy::trace::{MAX_TRACE_BYTES, MAX_TRACE_ROWS, MAX_VIEW_BYTES, Reason};
use yetibot_tool_policy::{
    Execution, KnownNames, Message, Outcome, PolicyConfig, Provenance, ProviderModelsConfig,
    Selection, ServerRefConfig, ToolId, ToolPolicy, ToolsetConfig,
};

use crate::scripted::{ScriptedExecutor, Turn, answer, call, calls, request, run_loop, run_scoped};

fn outcomes(entries: &[yetibot_tool_policy::LedgerEntry]) -> Vec<Outcome> {
    entries.iter().map(|e| e.outcome).collect()
}

fn none() -> Secrets {
    Secrets::empty()
}

fn failure(run: &crate::scripted::Run) -> &yetibot_tool_policy::trace::FailureTrace {
    match &run.result {
        Err(failure) => &failure.trace,
        Ok(answer) => panic!("expected a failure, got the answer {:?}", answer.text),
    }
}

#[test]
fn an_answer_without_calls_ends_the_loop() {
    let run = run_loop(
        vec![answer("hello")],
        ScriptedExecutor::new(),
        6,
        &none(),
        "hi",
    );
    let answer = run.result.expect("answer");
    assert_eq!(answer.text, "hello");
    assert!(answer.ledger.entries().is_empty());
    let (tools, guidance) = &run.model.seen[0];
    assert_eq!(tools, &["yetibot__history", "web__search", "web__fetch"]);
    let guidance = guidance.expect("guidance with tools");
    assert_eq!(
        (guidance.total, guidance.used, guidance.remaining),
        (6, 0, 6)
    );
}

#[test]
fn a_batch_runs_in_order_and_results_go_back_to_the_model() {
    let run = run_loop(
        vec![
            calls(&[
                call("c1", "web__search", r#"{"query":"rust"}"#),
                call("c2", "web__fetch", r#"{"url":"https://x"}"#),
            ]),
            answer("found it"),
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "find rust",
    );
    let answer = run.result.expect("answer");
    assert_eq!(answer.text, "found it");
    assert_eq!(
        outcomes(answer.ledger.entries()),
        [Outcome::Success, Outcome::Success]
    );
    assert_eq!(answer.budget.used(), 2);
    let ids: Vec<&str> = run
        .executor
        .executed
        .iter()
        .map(|(id, ..)| id.as_str())
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
    let results: Vec<&Message> = run
        .conversation
        .messages
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        matches!(&run.conversation.messages[0], Message::Assistant { calls, .. } if calls.len() == 2)
    );
    let guidance = run.model.seen[1].1.expect("second turn has guidance");
    assert_eq!((guidance.used, guidance.remaining), (2, 4));
    // Progress after each call, with no arguments in it.
    assert_eq!(run.progress.len(), 2);
    assert_eq!(run.progress[1].calls[0].tool.as_deref(), Some("web/search"));
}

#[test]
fn an_invented_tool_refuses_the_whole_batch() {
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "shell__exec", r#"{"cmd":"rm"}"#),
        ])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::UnknownTool);
    assert!(run.executor.executed.is_empty(), "zero calls run");
    assert_eq!(outcomes(&trace.calls), [Outcome::Refused, Outcome::Refused]);
    assert_eq!(trace.calls[1].tool, None, "an invented name is withheld");
    assert_eq!(trace.requested, 2);
    let json = trace.to_json().to_string();
    assert!(!json.contains("shell"), "{json}");
}

#[test]
fn bad_arguments_refuse_the_whole_batch() {
    let cases: Vec<(&str, String, Reason)> = vec![
        ("not json", "{".into(), Reason::InvalidArguments),
        ("not an object", "[1,2]".into(), Reason::InvalidArguments),
        (
            "too long",
            format!(r#"{{"q":"{}"}}"#, "x".repeat(16_384)),
            Reason::ArgumentsTooLong,
        ),
    ];
    for (label, arguments, reason) in cases {
        let run = run_loop(
            vec![calls(&[
                call("c1", "web__search", "{}"),
                call("c2", "web__fetch", &arguments),
            ])],
            ScriptedExecutor::new(),
            6,
            &none(),
            "p",
        );
        assert_eq!(failure(&run).reason, reason, "{label}");
        assert!(run.executor.executed.is_empty(), "{label}");
    }
    // Exactly 16,384 characters (multi-byte ones) are accepted.
    let exact = format!(r#"{{"q":"{}"}}"#, "é".repeat(16_384 - 8));
    assert_eq!(exact.chars().count(), 16_384);
    let run = run_loop(
        vec![calls(&[call("c1", "web__search", &exact)])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert!(run.result.is_ok());
    // The tool's own static check is part of preflight.
    let mut executor = ScriptedExecutor::new();
    executor.invalid.push("fetch".into());
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "web__fetch", "{}"),
        ])],
        executor,
        6,
        &none(),
        "p",
    );
    assert_eq!(failure(&run).reason, Reason::InvalidArguments);
    assert!(run.executor.executed.is_empty());
}

#[test]
fn call_ids_never_repeat_within_a_batch_or_a_request() {
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", r#"{"q":1}"#),
            call("c1", "web__search", r#"{"q":2}"#),
        ])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert_eq!(failure(&run).reason, Reason::DuplicateCallId);
    assert!(run.executor.executed.is_empty());

    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", r#"{"q":1}"#)]),
            calls(&[call("c1", "web__search", r#"{"q":2}"#)]),
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert_eq!(failure(&run).reason, Reason::DuplicateCallId);
    assert_eq!(run.executor.executed.len(), 1, "only the first batch ran");

    let run = run_loop(
        vec![calls(&[call("", "web__search", "{}")])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert_eq!(
        failure(&run).reason,
        Reason::DuplicateCallId,
        "an empty ID is refused too"
    );
}

#[test]
fn an_identical_action_never_repeats() {
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", r#"{"q":"a","n":1}"#)]),
            calls(&[call("c2", "web__search", r#"{"n":1, "q":"a"}"#)]),
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert_eq!(
        failure(&run).reason,
        Reason::RepeatedAction,
        "key order does not make a new action"
    );
    assert_eq!(run.executor.executed.len(), 1);

    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", r#"{"q":"a"}"#),
            call("c2", "web__search", r#"{"q":"a"}"#),
        ])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert_eq!(failure(&run).reason, Reason::RepeatedAction);
    assert!(run.executor.executed.is_empty());
    // The same arguments on another tool are another action.
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", r#"{"q":"a"}"#),
            call("c2", "web__fetch", r#"{"q":"a"}"#),
        ])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert!(run.result.is_ok());
}

#[test]
fn a_number_rewritten_as_1_0_or_1e0_repeats_the_action() {
    // The check used to compare serde_json's text, so a model could repeat a paid call by
    // respelling a number. Every spelling below is the value 1, in a later turn or later in
    // the same batch.
    for spelling in ["1.0", "1e0", "10E-1", "1.000"] {
        let later = format!(r#"{{"page":{spelling},"q":"a"}}"#);
        let run = run_loop(
            vec![
                calls(&[call("c1", "web__search", r#"{"q":"a","page":1}"#)]),
                calls(&[call("c2", "web__search", &later)]),
            ],
            ScriptedExecutor::new(),
            6,
            &none(),
            "p",
        );
        assert_eq!(failure(&run).reason, Reason::RepeatedAction, "{spelling}");
        assert_eq!(run.executor.executed.len(), 1, "{spelling}");

        let run = run_loop(
            vec![calls(&[
                call("c1", "web__search", r#"{"q":"a","page":1}"#),
                call("c2", "web__search", &later),
            ])],
            ScriptedExecutor::new(),
            6,
            &none(),
            "p",
        );
        assert_eq!(failure(&run).reason, Reason::RepeatedAction, "{spelling}");
        assert!(run.executor.executed.is_empty(), "{spelling}");
    }
}

#[test]
fn zero_and_minus_zero_are_one_action() {
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", r#"{"offset":0}"#)]),
            calls(&[call("c2", "web__search", r#"{"offset":-0}"#)]),
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert_eq!(failure(&run).reason, Reason::RepeatedAction);
    assert_eq!(run.executor.executed.len(), 1);
    // A different number is a different action.
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", r#"{"offset":0}"#)]),
            calls(&[call("c2", "web__search", r#"{"offset":0.5}"#)]),
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert!(run.result.is_ok());
    assert_eq!(run.executor.executed.len(), 2);
}

#[test]
fn a_duplicate_argument_key_refuses_the_batch() {
    // serde_json kept the last of two equal keys, so the check and the tool could read
    // different values; now the call is malformed and nothing of its batch runs.
    for duplicated in [
        r#"{"q":"cats","q":"dogs"}"#,
        r#"{"q":"cats","\u0071":"dogs"}"#,
        r#"{"filter":{"a":1,"a":2}}"#,
    ] {
        let run = run_loop(
            vec![calls(&[
                call("c1", "web__search", r#"{"q":"first"}"#),
                call("c2", "web__fetch", duplicated),
            ])],
            ScriptedExecutor::new(),
            6,
            &none(),
            "p",
        );
        let trace = failure(&run);
        assert_eq!(trace.reason, Reason::InvalidArguments, "{duplicated}");
        assert_eq!(outcomes(&trace.calls), [Outcome::Refused, Outcome::Refused]);
        assert!(run.executor.executed.is_empty(), "{duplicated}");
    }
}

#[test]
fn arguments_reach_the_tool_as_the_model_wrote_them() {
    let raw = r#"{ "amount": 1.50, "id": 123456789012345678901234567890, "q": "\u0061" }"#;
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", raw), call("c2", "web__fetch", "")]),
            answer("ok"),
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    assert!(run.result.is_ok());
    let sent: Vec<&str> = run
        .executor
        .executed
        .iter()
        .map(|(_, _, arguments)| arguments.as_str())
        .collect();
    assert_eq!(sent, [raw, "{}"], "exact text; no arguments read as {{}}");
}

#[test]
fn a_batch_over_the_remaining_budget_runs_nothing() {
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", r#"{"q":1}"#)]),
            calls(&[
                call("c2", "web__search", r#"{"q":2}"#),
                call("c3", "web__search", r#"{"q":3}"#),
            ]),
        ],
        ScriptedExecutor::new(),
        2,
        &none(),
        "p",
    );
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::OverBudget);
    assert_eq!(
        (trace.total, trace.used, trace.remaining, trace.requested),
        (2, 1, 1, 2)
    );
    assert_eq!(run.executor.executed.len(), 1);
    assert_eq!(
        outcomes(&trace.calls),
        [Outcome::Success, Outcome::Refused, Outcome::Refused]
    );
}

#[test]
fn an_unknown_outcome_skips_the_rest_and_turns_tools_off() {
    let run = run_loop(
        vec![
            calls(&[
                call("c1", "web__search", r#"{"q":1}"#),
                call("c2", "web__fetch", r#"{"q":2}"#),
                call("c3", "yetibot__history", "{}"),
            ]),
            answer("partial answer"),
        ],
        ScriptedExecutor::new().with("c2", Execution::Unknown),
        6,
        &none(),
        "p",
    );
    let answer = run.result.expect("the model still answers");
    assert_eq!(answer.text, "partial answer");
    assert_eq!(
        outcomes(answer.ledger.entries()),
        [Outcome::Success, Outcome::Unconfirmed, Outcome::Skipped]
    );
    let ids: Vec<&str> = run
        .executor
        .executed
        .iter()
        .map(|(id, ..)| id.as_str())
        .collect();
    assert_eq!(ids, ["c1", "c2"], "never retried, nothing after it");
    let (tools, guidance) = &run.model.seen[1];
    assert!(tools.is_empty(), "the final turn offers no tools");
    assert!(guidance.is_none());
    assert_eq!(run.model.seen.len(), 2, "no extra closing turn");
    // Every call of the assistant message has a result, as providers require.
    let results = run
        .conversation
        .messages
        .iter()
        .filter(|m| matches!(m, Message::ToolResult { .. }))
        .count();
    assert_eq!(results, 3);
}

#[test]
fn at_exhaustion_the_last_turn_has_no_tools() {
    let run = run_loop(
        vec![calls(&[call("c1", "web__search", "{}")]), answer("final")],
        ScriptedExecutor::new(),
        1,
        &none(),
        "p",
    );
    assert_eq!(run.result.expect("answer").text, "final");
    assert!(run.model.seen[1].0.is_empty());
    assert_eq!(run.model.seen.len(), 2);
}

#[test]
fn calls_after_tools_are_off_are_refused() {
    // With text, the answer stands and the calls are recorded as refused.
    let with_text = yetibot_tool_policy::ModelResponse {
        text: "here is what I have".into(),
        calls: vec![call("c2", "web__search", r#"{"q":2}"#)],
        opaque: vec![],
    };
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", "{}")]),
            Turn::Respond(with_text),
        ],
        ScriptedExecutor::new(),
        1,
        &none(),
        "p",
    );
    let answer = run.result.expect("answer");
    assert_eq!(
        outcomes(answer.ledger.entries()),
        [Outcome::Success, Outcome::Refused]
    );
    assert_eq!(run.executor.executed.len(), 1);
    // Without text, the loop fails.
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", "{}")]),
            calls(&[call("c2", "web__search", r#"{"q":2}"#)]),
        ],
        ScriptedExecutor::new(),
        1,
        &none(),
        "p",
    );
    assert_eq!(failure(&run).reason, Reason::ToolsDisabled);
    assert_eq!(run.executor.executed.len(), 1);
}

#[test]
fn a_model_failure_keeps_earlier_calls_in_the_trace() {
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", r#"{"action":"list","limit":5}"#)]),
            Turn::Fail,
        ],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    let Err(failure) = &run.result else {
        panic!("expected failure")
    };
    assert_eq!(failure.trace.reason, Reason::ModelFailed);
    assert!(failure.model_error.is_some());
    assert_eq!(outcomes(&failure.trace.calls), [Outcome::Success]);
    assert_eq!(
        failure.trace.calls[0].arguments,
        serde_json::json!({"action": "list", "limit": 5})
    );
}

#[test]
fn authorization_is_rechecked_before_each_execution() {
    let mut executor = ScriptedExecutor::new();
    executor.forbidden.push("fetch".into());
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "web__fetch", "{}"),
            call("c3", "yetibot__history", "{}"),
        ])],
        executor,
        6,
        &none(),
        "p",
    );
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::Unauthorized);
    assert_eq!(
        outcomes(&trace.calls),
        [Outcome::Success, Outcome::Refused, Outcome::Refused]
    );
    assert_eq!(run.executor.executed.len(), 1);
}

#[test]
fn a_tools_authorization_revoked_mid_request_refuses_its_next_call() {
    // Within a batch: executing c1 revokes the fetch tool (say, the user lost admin status).
    let revoke_fetch = |id: &str, forbidden: &mut Vec<String>| {
        if id == "c1" {
            forbidden.push("fetch".into());
        }
    };
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "web__fetch", "{}"),
            call("c3", "yetibot__history", "{}"),
        ])],
        ScriptedExecutor::new().after(revoke_fetch),
        6,
        &none(),
        "p",
    );
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::Unauthorized);
    assert_eq!(
        outcomes(&trace.calls),
        [Outcome::Success, Outcome::Refused, Outcome::Refused]
    );
    assert_eq!(trace.calls[1].tool, Some(ToolId::new("web", "fetch")));
    assert_eq!(
        (trace.used, trace.remaining),
        (1, 5),
        "refused calls cost nothing"
    );
    assert_eq!(run.executor.executed.len(), 1);
    // Across turns: the catalog still offers fetch, but it no longer runs.
    let run = run_loop(
        vec![
            calls(&[call("c1", "web__search", "{}")]),
            calls(&[call("c2", "web__fetch", "{}")]),
        ],
        ScriptedExecutor::new().after(revoke_fetch),
        6,
        &none(),
        "p",
    );
    assert_eq!(run.model.seen[1].0.len(), 3, "fetch was still offered");
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::Unauthorized);
    assert_eq!(outcomes(&trace.calls), [Outcome::Success, Outcome::Refused]);
    assert_eq!(run.executor.executed.len(), 1);
}

/// A search toolset for user U1 on Slack with provider `local` and model `m` only, or an
/// unrestricted one.
fn search_policy(restricted: bool) -> ToolPolicy {
    let strings = |list: &[&str]| Some(list.iter().map(|s| (*s).to_owned()).collect());
    let mut toolset = ToolsetConfig {
        name: Some("search".into()),
        kind: Some("search".into()),
        servers: Some(vec![ServerRefConfig {
            name: Some("web".into()),
            tools: None,
        }]),
        ..ToolsetConfig::default()
    };
    if restricted {
        toolset.users = strings(&["U1"]);
        toolset.adapters = strings(&["slack"]);
        toolset.providers = Some(vec![ProviderModelsConfig {
            name: Some("local".into()),
            models: strings(&["m"]),
        }]);
    }
    let toolsets = [toolset];
    let natives = crate::specified_native_tools();
    let known = KnownNames {
        servers: vec![("web", None)],
        providers: vec!["local"],
        with_github_api_token: Vec::new(),
        native_tools: &natives,
    };
    let config = PolicyConfig {
        toolsets: &toolsets,
        default_toolset: None,
        max_tool_calls: None,
    };
    ToolPolicy::from_config(&config, &known).expect("valid policy")
}

#[test]
fn a_toolset_rule_broken_mid_request_is_caught_before_execution() {
    // The recheck before each execution used to re-run the same immutable request, so it
    // could never fail. Now it reads the caller's shared state: here the request's model is
    // re-pinned to one the toolset does not allow while c1 runs, and c2 must not run.
    let policy = search_policy(true);
    let selection = Selection::choose(&policy, None).expect("toolset");
    let state = Arc::new(Mutex::new(request()));
    let reader = Arc::clone(&state);
    let access = move || reader.lock().expect("state").clone();
    let writer = Arc::clone(&state);
    let executor = ScriptedExecutor::new().after(move |id, _| {
        if id == "c1" {
            writer.lock().expect("state").model = "m2".into();
        }
    });
    let run = run_scoped(
        selection,
        &access,
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "web__fetch", "{}"),
        ])],
        executor,
    );
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::Unauthorized);
    assert_eq!(outcomes(&trace.calls), [Outcome::Success, Outcome::Refused]);
    assert_eq!(trace.requested, 2);
    assert_eq!(run.executor.executed.len(), 1, "c2 never ran");
    assert_eq!(
        run.progress.last().map(|p| p.calls.len()),
        Some(2),
        "progress shows the refusal too"
    );

    // Without the change, the same toolset runs both calls.
    let access = request;
    let run = run_scoped(
        Selection::choose(&policy, None).expect("toolset"),
        &access,
        vec![
            calls(&[
                call("c1", "web__search", "{}"),
                call("c2", "web__fetch", "{}"),
            ]),
            answer("ok"),
        ],
        ScriptedExecutor::new(),
    );
    assert!(run.result.is_ok());
    assert_eq!(run.executor.executed.len(), 2);
}

#[test]
fn a_native_tool_is_refused_once_the_request_is_no_longer_trusted() {
    // An unrestricted search toolset serves untrusted requests, but never with native tools.
    let policy = search_policy(false);
    let state = Arc::new(Mutex::new(request()));
    let reader = Arc::clone(&state);
    let access = move || reader.lock().expect("state").clone();
    let writer = Arc::clone(&state);
    let executor = ScriptedExecutor::new().after(move |id, _| {
        if id == "c1" {
            writer.lock().expect("state").provenance = Provenance::Untrusted;
        }
    });
    let run = run_scoped(
        Selection::choose(&policy, None).expect("toolset"),
        &access,
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "yetibot__history", "{}"),
        ])],
        executor,
    );
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::Unauthorized);
    assert_eq!(outcomes(&trace.calls), [Outcome::Success, Outcome::Refused]);
    assert_eq!(run.executor.executed.len(), 1);
}

#[test]
fn results_are_redacted_and_bounded() {
    let secrets = Secrets::new(["sk-result-secret-123"]).expect("secrets");
    let long = format!(
        "{} sk-result-secret-123 {}",
        "a".repeat(100),
        "b".repeat(30_000)
    );
    let run = run_loop(
        vec![calls(&[call("c1", "web__search", "{}")]), answer("ok")],
        ScriptedExecutor::new().with("c1", Execution::Success(long)),
        6,
        &secrets,
        "p",
    );
    assert!(run.result.is_ok());
    let content = run
        .conversation
        .messages
        .iter()
        .find_map(|m| match m {
            Message::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .expect("a result");
    assert!(!content.contains("sk-result-secret-123"));
    assert!(content.contains("[redacted]"));
    assert_eq!(content.chars().count(), 20_000);
    assert!(content.ends_with("[truncated]"));
}

#[test]
fn traces_withhold_freeform_text_secrets_and_prompt_copies() {
    let secrets = Secrets::new(["sk-trace-secret-99"]).expect("secrets");
    let prompt = "tell me about the quarterly numbers";
    let arguments = serde_json::json!({
        "action": "search",
        "limit": 10,
        "query": prompt,
        "amount": 1234.56,
        "path": "/etc/passwd",
        "view": "sk-trace-secret-99",
        "model": "tell me about the quarterly numbers",
        "recent": true,
        "nested": {"action": "x"},
    })
    .to_string();
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", &arguments),
            call("c2", "nope__x", "{}"),
        ])],
        ScriptedExecutor::new(),
        6,
        &secrets,
        prompt,
    );
    let trace = failure(&run);
    let view = &trace.calls[0].arguments;
    assert_eq!(
        view,
        &serde_json::json!({"action": "search", "limit": 10, "recent": true, "withheld": 6})
    );
    let json = trace.to_json().to_string();
    for hidden in ["quarterly", "1234", "passwd", "sk-trace", "nope"] {
        assert!(!json.contains(hidden), "{hidden} in {json}");
    }
}

#[test]
fn a_long_trace_is_bounded_and_says_so() {
    // 45 refused calls with bulky, allowed arguments.
    let list: Vec<_> = (0..45)
        .map(|i| {
            let args = serde_json::json!({
                "action": format!("a{i}-{}", "x".repeat(60)),
                "operation": "y".repeat(64),
                "view": "z".repeat(64),
                "kind": "k".repeat(64),
                "mode": "m".repeat(64),
                "limit": i,
            })
            .to_string();
            call(&format!("c{i}"), "web__search", &args)
        })
        .collect();
    let run = run_loop(vec![calls(&list)], ScriptedExecutor::new(), 6, &none(), "p");
    let trace = failure(&run);
    assert_eq!(trace.reason, Reason::OverBudget);
    assert!(trace.calls.len() <= MAX_TRACE_ROWS);
    assert_eq!(trace.calls.len() + trace.omitted, 45);
    let json = trace.to_json();
    assert!(serde_json::to_string(&json).expect("json").len() < MAX_TRACE_BYTES);
    assert!(trace.truncated);
    for row in &trace.calls {
        assert!(serde_json::to_string(&row.arguments).expect("json").len() <= MAX_VIEW_BYTES);
    }
    assert_eq!(json["tool-trace"]["omitted"], Value::from(trace.omitted));
    let summary = trace.chat_summary(2_000);
    assert!(summary.chars().count() <= 2_000);
    assert!(summary.contains("Partial list"), "{summary}");
    assert!(summary.starts_with("Tool calls stopped: the model asked for more tool calls than the budget allows. Budget 0 of 6 used, 6 left; the last batch asked for 45."));
}

#[test]
fn a_short_trace_lists_every_call() {
    let run = run_loop(
        vec![calls(&[
            call("c1", "web__search", "{}"),
            call("c2", "nope__x", "{}"),
        ])],
        ScriptedExecutor::new(),
        6,
        &none(),
        "p",
    );
    let summary = failure(&run).chat_summary(2_000);
    assert_eq!(
        summary,
        "Tool calls stopped: the model asked for a tool it was not offered. Budget 0 of 6 used, 6 left; the last batch asked for 2.\n#1 web/search: refused\n#2 [withheld]: refused"
    );
}
