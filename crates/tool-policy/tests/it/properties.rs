//! Properties over arbitrary sequences of batches: the budget, call IDs, refusals, unknown
//! outcomes and trace bounds hold whatever the model does.

use std::collections::HashSet;

use proptest::prelude::*;
use yetibot_redaction::Secrets;
use yetibot_tool_policy::trace::{MAX_TRACE_BYTES, MAX_TRACE_ROWS};
use yetibot_tool_policy::{Execution, Message, Outcome};

use crate::scripted::{ScriptedExecutor, Turn, answer, call, calls, run_loop};

const SECRET: &str = "sk-prop-secret-42";
const FUNCTIONS: &[&str] = &[
    "web__search",
    "web__fetch",
    "yetibot__history",
    "invented__x",
];
const ARGUMENTS: &[&str] = &[
    "{}",
    r#"{"q":1}"#,
    r#"{"q":2}"#,
    "[1]",
    r#"{"action":"sk-prop-secret-42"}"#,
    r#"{"query":"sk-prop-\u0073ecret-42"}"#,
];

fn turn() -> impl Strategy<Value = Turn> {
    let one_call = (0..10usize, 0..FUNCTIONS.len(), 0..ARGUMENTS.len())
        .prop_map(|(id, f, a)| call(&format!("c{id}"), FUNCTIONS[f], ARGUMENTS[a]));
    prop_oneof![
        1 => Just(answer("done")),
        4 => prop::collection::vec(one_call, 1..5).prop_map(|list| calls(&list)),
    ]
}

fn execution() -> impl Strategy<Value = Execution> {
    prop_oneof![
        3 => Just(Execution::Success(format!("found {SECRET}"))),
        1 => Just(Execution::ToolError("no such page".into())),
        1 => Just(Execution::Unknown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_loop_keeps_its_promises(
        turns in prop::collection::vec(turn(), 0..7),
        outcomes in prop::collection::vec(execution(), 10),
        budget in 1u8..=8,
    ) {
        let secrets = Secrets::new([SECRET]).expect("secrets");
        let mut executor = ScriptedExecutor::new();
        for (i, e) in outcomes.into_iter().enumerate() {
            executor = executor.with(&format!("c{i}"), e);
        }
        let run = run_loop(turns, executor, budget, &secrets, "user prompt text");

        let executed = &run.executor.executed;
        prop_assert!(executed.len() <= usize::from(budget), "budget exceeded");
        let ids: HashSet<&str> = executed.iter().map(|(id, ..)| id.as_str()).collect();
        prop_assert_eq!(ids.len(), executed.len(), "a call ID executed twice");

        let entries = match &run.result {
            Ok(answer) => answer.ledger.entries().to_vec(),
            Err(failure) => failure.trace.calls.clone(),
        };
        let attempted = entries.iter().filter(|e| e.outcome.was_attempted()).count();
        prop_assert_eq!(attempted, executed.len(), "ledger and executions disagree");
        // Refusals end the tool work: nothing attempted after a refused call.
        if let Some(first_refused) = entries.iter().position(|e| e.outcome == Outcome::Refused) {
            prop_assert!(entries[first_refused..].iter().all(|e| !e.outcome.was_attempted()));
        }
        // After an unknown outcome nothing executes.
        if let Some(unknown) = entries.iter().position(|e| e.outcome == Outcome::Unconfirmed) {
            prop_assert!(entries[unknown + 1..].iter().all(|e| !e.outcome.was_attempted()));
        }
        if let Err(failure) = &run.result {
            let json = serde_json::to_string(&failure.trace.to_json()).expect("json");
            prop_assert!(failure.trace.calls.len() <= MAX_TRACE_ROWS);
            prop_assert!(json.len() < MAX_TRACE_BYTES);
            prop_assert!(!secrets.contains_secret(&json), "secret in trace: {}", json);
            prop_assert!(!json.contains("user prompt text"));
            let summary = failure.trace.chat_summary(2_000);
            prop_assert!(summary.chars().count() <= 2_000);
        }
        for message in &run.conversation.messages {
            if let Message::ToolResult { content, .. } = message {
                prop_assert!(!secrets.contains_secret(content), "secret in a result");
            }
        }
    }
}
