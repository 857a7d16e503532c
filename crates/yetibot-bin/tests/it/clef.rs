//! `clef` and `clairic` through `yetibot run`, against the fake Workers AI endpoint of
//! `provider-fixture` on loopback (`:ai :intent-router :api-url` points the fixed request
//! paths at it): every example of the specification's "Standalone Clef and Clairic"
//! sections that needs no image, with the documented result, and the failures (a 4xx whose
//! body must not be echoed, a 5xx, a connection cut after the request, bad options and
//! schemas, no account).

use std::os::unix::fs::PermissionsExt;

use provider_fixture::{End, Fixture, Recorded, Reply};
use serde_json::Value;

use crate::Workdir;

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
/// The token in the key file: it may appear only in the Authorization header.
const TOKEN: &str = "cf-token-canary-7e2b9d41";
/// A marker in the fake's error bodies, which must never be printed.
const BODY_CANARY: &str = "body-canary-41c9";

fn run_path(model: &str) -> String {
    format!("/client/v4/accounts/{ACCOUNT}/ai/run/@cf/cloudflare/{model}")
}

/// A bot whose intent router account is on the fixture, with a gateway; `extra` goes inside
/// `:intent-router`.
struct Setup {
    dir: Workdir,
    config: String,
}

impl Setup {
    fn new(fixture: &Fixture, extra: &str) -> Self {
        let api = fixture.url("/client/v4");
        Self::with_key(|key| {
            format!(
                r#"{{:yetibot {{:ai {{:intent-router {{:enabled false :account-id "{ACCOUNT}"
                     :key-file "{key}" :gateway-id "my-gateway" :api-url "{api}" {extra}}}}}}}}}"#
            )
        })
    }

    /// A working directory with the token in a private key file, and the configuration
    /// `edn(key file path)`.
    fn with_key(edn: impl FnOnce(&str) -> String) -> Self {
        let dir = Workdir::new();
        let key = dir.path.join("clef-token");
        std::fs::write(&key, format!("{TOKEN}\n")).expect("key file");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn(key.to_str().expect("utf-8"))).expect("config");
        let config = file.to_str().expect("utf-8").to_owned();
        Self { dir, config }
    }

    async fn run(&self, args: &[&str]) -> std::process::Output {
        let dir = self.dir.path.clone();
        let config = self.config.clone();
        let args: Vec<String> = std::iter::once("run")
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            crate::yetibot(&dir, &[("CONFIG_PATH", &config)])
                .args(&args)
                .output()
                .expect("the binary runs")
        })
        .await
        .expect("the run finishes")
    }
}

async fn fake() -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    for model in ["clef", "clairic"] {
        fixture.respond_with(&run_path(model), provider_fixture::workers::answer);
    }
    fixture
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn body(request: &Recorded) -> Value {
    serde_json::from_slice(&request.body).expect("JSON body")
}

/// Runs `line` and returns what it printed, asserting success and that the token was never
/// printed.
async fn answer(setup: &Setup, line: &str) -> String {
    let out = setup.run(&[line]).await;
    assert_eq!(out.status.code(), Some(0), "{line}: {}", printed(&out));
    assert!(!printed(&out).contains(TOKEN));
    stdout(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_from_the_specification() {
    let fixture = fake().await;
    let setup = Setup::new(&fixture, "");
    assert_eq!(
        answer(
            &setup,
            "echo service is down | clef Is this an unresolved outage?"
        )
        .await,
        "decision: yes · P(yes) 0.93\n"
    );
    let requests = fixture.requests();
    let request = requests.last().expect("one request");
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, run_path("clef"));
    assert_eq!(
        request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(
        request
            .headers
            .get("cf-aig-gateway-id")
            .and_then(|v| v.to_str().ok()),
        Some("my-gateway")
    );
    let sent = body(request);
    assert_eq!(sent["model"], "clef");
    assert_eq!(sent["state"], "service is down");
    assert_eq!(
        sent["questions"],
        serde_json::json!({"decision": {"type": "noul", "instructions": "Is this an unresolved outage?"}})
    );

    assert_eq!(
        answer(
            &setup,
            r#"echo down | clef --questions '{:x {:type :noul :instructions "Bad?"}}'"#
        )
        .await,
        "x: yes · P(yes) 0.93\n"
    );
    let choice = r#"clef --questions '{:team {:type :choice :instructions "Which team should review this?" :criteria {:ops "Service incidents" :sales "Purchase questions"}}}' the checkout page is down"#;
    assert_eq!(
        answer(&setup, choice).await,
        "team: ops (confidence 0.8) · ops 0.9, sales 0.1\n"
    );
    let sent = body(fixture.requests().last().expect("request"));
    assert_eq!(
        sent["state"], "the checkout page is down",
        "state follows the schema inline"
    );
    assert_eq!(
        sent["questions"]["team"]["criteria"]["sales"],
        "Purchase questions"
    );
    let score = r#"echo disk is 91% full | clef --questions '{:sev {:type :score :instructions "How urgent?" :criteria ["none" "some" "page someone"]}}' | data $.answers.sev.score"#;
    assert_eq!(answer(&setup, score).await, "1.0\n");
    // The complete response stays in the data; the readable line is the value.
    let json = setup
        .run(&["--json", "echo service is down | clef Is it down?"])
        .await;
    let printed_json: Value = serde_json::from_slice(&json.stdout).expect("json");
    let text = printed_json.to_string();
    assert!(
        text.contains("\"noul\":0.93") && text.contains("input_tokens"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extractions_from_the_specification() {
    let fixture = fake().await;
    let setup = Setup::new(&fixture, "");
    let demo = answer(&setup, "clairic demo").await;
    assert!(
        demo.starts_with("demo passed: Clairic read the count 3"),
        "{demo}"
    );
    assert_eq!(
        body(fixture.requests().last().expect("demo")).get("state"),
        Some(&Value::from("Balloon count: 3."))
    );
    // The demo ignores piped input.
    let piped_demo = answer(&setup, "echo 7 | clairic demo").await;
    assert!(piped_demo.starts_with("demo passed"), "{piped_demo}");

    for (line, expected) in [
        (
            "echo red balloon, blue balloon | clairic count balloons",
            "count: 2 (confidence 0.95)\n",
        ),
        (
            "echo callsign TRASH PANDA ONE | clairic read the callsign",
            "text: TRASH PANDA ONE (confidence 0.9)\n",
        ),
        (
            "echo pilots Raccoon and Goose | clairic list the pilots",
            "items: Raccoon, Goose (confidence 0.85)\n",
        ),
        (
            "echo balloons: 2 | clairic count balloons | data $.answers.count.value",
            "2\n",
        ),
        (
            "echo that commute | clairic rate how absurd this commute is",
            "rating: 8/10 (confidence 0.4)\n",
        ),
        (
            "echo that commute | clairic rate it | data $.answers.rating.value",
            "8\n",
        ),
        (
            "echo total 42 | clairic --fields '{:amount :number}'",
            "amount: 42 (confidence 0.95)\n",
        ),
        (
            "echo 42 | clairic --fields '{:x :number}' | data $.answers.x.value",
            "42\n",
        ),
        (
            "echo paid on a Tuesday | clairic --fields '{:paid {:type :date}}'",
            "paid: (not found, best guess 2026-01-01) (confidence 0.2)\n",
        ),
        (
            "echo paid on a Tuesday | clairic --fields '{:paid {:type :date}}' | data $.answers.paid.value",
            "null\n",
        ),
    ] {
        assert_eq!(answer(&setup, line).await, expected, "{line}");
    }
    // The generated fields are in the data beside the answers.
    let fields = answer(
        &setup,
        "echo a b | clairic count cats | data $.request.fields.count.type",
    )
    .await;
    assert_eq!(fields, "number\n");
    let sent = body(fixture.requests().last().expect("request"));
    assert_eq!(sent["model"], "clairic");
    assert_eq!(sent["fields"]["count"]["decimals"], 0);
    // Collections of strings are one line each; structured data is JSON text for Clairic.
    answer(&setup, "list a, b | clairic count letters").await;
    assert_eq!(
        body(fixture.requests().last().expect("request"))["state"],
        "a\nb"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_usage_before_any_network_work() {
    let fixture = fake().await;
    let setup = Setup::new(&fixture, "");
    for line in [
        "clef",
        "clef --questions",
        "clef --questions '{:x {:type :maybe :instructions \"Bad?\"}}' down",
        "clef --questions '{:x (System/exit 0)}' down",
        "clef --verbose is it down?",
        "clairic what is this",
        "clairic --fields '{:x :boolean}' yes",
        "clairic --fields '{:1x :number}' 1",
    ] {
        let out = setup.run(&[line]).await;
        assert_eq!(out.status.code(), Some(1), "{line}: {}", printed(&out));
        assert!(
            stdout(&out).contains("usage: "),
            "{line}: {}",
            printed(&out)
        );
    }
    // A question is not its own state.
    let out = setup.run(&["clef Is this an outage?"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("nothing to read"),
        "{}",
        printed(&out)
    );
    // Too many images, or one that is not public HTTPS, is refused before anything is fetched.
    let out = setup
        .run(&["echo x | clef Bad? http://example.com/a.png"])
        .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(fixture.requests().is_empty(), "nothing reached Cloudflare");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_never_echo_a_body_or_the_token_and_say_when_the_outcome_is_unknown() {
    let fixture = Fixture::start().await.expect("fixture");
    let setup = Setup::new(&fixture, "");
    let path = run_path("clef");
    // The fixture answers each request with the next queued reply.
    fixture.route(
        &path,
        Reply::status_json(
            400,
            format!(
                r#"{{"success":false,"errors":[{{"code":7,"message":"{BODY_CANARY} {TOKEN}"}}]}}"#
            ),
        ),
    );
    fixture.route(
        &path,
        Reply::status_json(
            503,
            format!(r#"{{"errors":[{{"message":"{BODY_CANARY}"}}]}}"#),
        ),
    );
    fixture.route(
        &path,
        Reply::json(r#"{"result":{"answers":{"decision":"#).ending(End::Abort),
    );
    fixture.route(
        &path,
        Reply::json(r#"{"result":{"answers":{}},"success":true}"#),
    );
    let out = setup.run(&["echo down | clef Is it down?"]).await;
    assert_eq!(out.status.code(), Some(1));
    let text = printed(&out);
    assert!(
        !text.contains(BODY_CANARY) && !text.contains(TOKEN),
        "{text}"
    );
    assert!(text.contains("400"), "{text}");

    let out = setup.run(&["echo down | clef Is it down?"]).await;
    let text = printed(&out);
    assert!(
        text.contains("503") && text.contains("not retried") && !text.contains(BODY_CANARY),
        "{text}"
    );

    let before = fixture.count(&path);
    let out = setup.run(&["echo down | clef Is it down?"]).await;
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("may have run and been charged"), "{text}");
    assert_eq!(
        fixture.count(&path),
        before + 1,
        "an unknown outcome is not retried"
    );

    let out = setup.run(&["echo down | clef Is it down?"]).await;
    assert_eq!(stdout(&out), "decision: (no answer)\n", "{}", printed(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_lines_are_cut_and_truncated_input_warns() {
    let fixture = Fixture::start().await.expect("fixture");
    let setup = Setup::new(&fixture, "");
    let long = "x".repeat(400);
    fixture.route(
        &run_path("clairic"),
        Reply::json(format!(r#"{{"result":{{"answers":{{"text":{{"value":"{long}"}}}},"usage":{{}},"truncated":true}},"success":true}}"#)),
    );
    let out = answer(&setup, "echo source | clairic read everything").await;
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first.chars().count(), 160, "{first}");
    assert!(first.ends_with('…'));
    assert!(
        out.contains("shortened to 160 characters") && out.contains("cut the input"),
        "{out}"
    );
    let whole = answer(
        &setup,
        "echo source | clairic read everything | data $.answers.text.value",
    )
    .await;
    assert_eq!(whole.lines().next().map(str::len), Some(400), "{whole}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_account_the_commands_say_how_to_configure_one() {
    let dir = Workdir::new();
    let file = dir.path.join("config.edn");
    std::fs::write(&file, "{:yetibot {}}").expect("config");
    let config = file.to_str().expect("utf-8").to_owned();
    let out = crate::run_in(
        &dir,
        &[("CONFIG_PATH", &config)],
        &["run", "echo down | clef Is it down?"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(":intent-router"), "{}", printed(&out));
    // Without the account the tools are not offered, so there is no help to show.
    std::fs::write(
        &file,
        r#"{:yetibot {:ai {:providers [{:name "local" :url "http://127.0.0.1:9/v1" :model "m1"}]}}}"#,
    )
    .expect("config");
    let out = crate::run_in(
        &dir,
        &[("CONFIG_PATH", &config)],
        &["run", "ai tools yetibot/clef"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("no tool matches"),
        "{}",
        printed(&out)
    );
    let out = crate::run_in(&dir, &[("CONFIG_PATH", &config)], &["run", "ai tools"]);
    assert!(
        !stdout(&out).contains("clef") && !stdout(&out).contains("clairic"),
        "{}",
        printed(&out)
    );
    // A bad API base is a configuration error.
    std::fs::write(
        &file,
        format!(r#"{{:yetibot {{:ai {{:intent-router {{:account-id "{ACCOUNT}" :key-file "/k" :api-url "http://api.example.com/v4"}}}}}}}}"#),
    )
    .expect("config");
    let out = crate::run_in(&dir, &[("CONFIG_PATH", &config)], &["check-config"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        printed(&out).contains("intent-router.api-url"),
        "{}",
        printed(&out)
    );
}

fn chat_call(id: &str, name: &str, arguments: &Value) -> String {
    serde_json::json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}
            ]},
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    })
    .to_string()
}

/// The tool result the model was sent back in the second chat request.
fn tool_result(fixture: &Fixture) -> String {
    let requests = fixture.requests();
    let chat: Vec<&Recorded> = requests
        .iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    let last = body(chat.last().expect("a chat request"));
    last["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_native_tools_run_for_a_tool_capable_model_and_are_listed_when_configured() {
    let fixture = fake().await;
    let with_model = |extra: &str| {
        let extra = extra.to_owned();
        let (chat, api) = (fixture.url("/v1"), fixture.url("/client/v4"));
        Setup::with_key(move |key| {
            format!(
                r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{chat}" :model "m1"}}] {extra}
                   :intent-router {{:account-id "{ACCOUNT}" :key-file "{key}" :api-url "{api}"}}}}}}}}"#
            )
        })
    };
    // Each chat request takes the next queued reply: a tool call, then the answer.
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call(
            "c1",
            "yetibot__clef",
            &serde_json::json!({"question": "Is this an unresolved outage?", "input": "service is down"}),
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(provider_fixture::script::chat_completion(
            "Yes, likely (0.93).",
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call(
            "c2",
            "yetibot__clairic",
            &serde_json::json!({"fields": {"amount": {"type": "number", "unit": "USD"}}, "input": "total USD 42"}),
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(provider_fixture::script::chat_completion("42")),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(chat_call(
            "c3",
            "yetibot__clairic",
            &serde_json::json!({"fields": {"paid": {"type": "boolean"}}, "input": "x"}),
        )),
    );
    let setup = with_model("");
    let listed = answer(&setup, "ai tools yetibot/clef").await;
    assert!(
        listed.starts_with("`yetibot/clef`") && listed.contains("question"),
        "{listed}"
    );
    assert!(
        answer(&setup, "ai tools")
            .await
            .contains("`yetibot/clairic`")
    );

    let out = answer(
        &setup,
        r#"ai Classify this with Clef: is "service is down" an unresolved outage?"#,
    )
    .await;
    assert!(out.starts_with("Yes, likely (0.93)."), "{out}");
    let result = tool_result(&fixture);
    let result: Value = serde_json::from_str(&result).expect("a JSON result");
    assert_eq!(
        result["answers"]["decision"],
        serde_json::json!({"type": "noul", "noul": 0.93})
    );
    assert!(
        result.get("usage").is_none(),
        "provider extras are left out: {result}"
    );
    assert_eq!(result["output_truncated"], false);
    let sent = fixture
        .requests()
        .into_iter()
        .find(|r| r.path == run_path("clef"))
        .map(|r| body(&r))
        .expect("Clef was called");
    assert_eq!(sent["state"], "service is down");

    answer(
        &setup,
        r#"ai Extract the amount as a number with Clairic from "total USD 42"."#,
    )
    .await;
    let result: Value = serde_json::from_str(&tool_result(&fixture)).expect("JSON");
    assert_eq!(
        result["answers"]["amount"],
        serde_json::json!({"value": 42, "confidence": 0.95})
    );

    // An argument outside the tool's subset is refused before anything is sent.
    let clairic_calls = fixture.count(&run_path("clairic"));
    let out = setup.run(&["ai Was it paid?"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("invalid tool arguments"),
        "{}",
        printed(&out)
    );
    assert_eq!(fixture.count(&run_path("clairic")), clairic_calls);

    // Explicit :native-tools lists (which need Slack or Discord allowlists, so no
    // `yetibot run` caller) are the tool policy's, tested there for every kind of tool.
}
