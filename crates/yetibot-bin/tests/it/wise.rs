//! `wise` through `yetibot run`, against the fake Wise API of `provider-fixture` on loopback
//! (`:wise :api-url` points at it): balances, statement lines and totals with exact
//! amounts, Wise's own policy (the chat and the balance allowlists, checked before the token
//! is read or anything is sent, and not widened by anything else), the tool through a
//! tool-capable model, and Wise's refusals, whose bodies are never shown.

use std::os::unix::fs::PermissionsExt;

use provider_fixture::wise::{self, Wise};
use provider_fixture::{Fixture, Reply};
use serde_json::Value;

use crate::{Configured, Workdir, printed};

/// The Wise token: it may appear only in the Authorization header.
const TOKEN: &str = "wise-token-canary-8c31f0";

const CLI_CHAT: &str = r#"{:adapter "cli" :connection "cli" :room "cli"}"#;
const SLACK_CHAT: &str = r#"{:adapter "slack" :connection "myteam" :room "C0123456789"}"#;

/// A bot whose Wise account is on `fixture`, allowed in `chats`, with `token` in its key
/// file; `extra` goes inside `:yetibot`.
fn wise_bot(fixture: &Fixture, token: &str, chats: &str, extra: &str) -> Configured {
    let dir = Workdir::new();
    let key = dir.path.join("wise-token");
    std::fs::write(&key, format!("{token}\n")).expect("key file");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let edn = format!(
        r#"{{:yetibot {{:wise {{:key-file "{}" :api-url "{}"
               :profiles [{{:id {} :balances [{{:id 7 :currency "EUR" :name "ops"}}
                                               {{:id 8 :currency "USD" :name "usd"}}]}}]
               :chats [{chats}]}} {extra}}}}}"#,
        key.display(),
        fixture.url("/wise"),
        wise::PROFILE
    );
    Configured::in_dir(dir, &edn)
}

async fn fake(wise: &Wise) -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    wise.mount(&fixture, "/wise");
    fixture
}

async fn answer(setup: &Configured, line: &str) -> String {
    let out = setup.run(&[line]).await;
    assert_eq!(out.status.code(), Some(0), "{line}: {}", printed(&out));
    assert!(!printed(&out).contains(TOKEN));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn refused(setup: &Configured, line: &str) -> String {
    let out = setup.run(&[line]).await;
    assert_eq!(out.status.code(), Some(1), "{line}: {}", printed(&out));
    let text = printed(&out);
    for canary in [TOKEN, wise::ERROR_CANARY, "wise-token\""] {
        assert!(!text.contains(canary), "{canary} in {text}");
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balances_transactions_and_totals_are_exact_and_only_the_configured_ones() {
    let fixture = fake(&Wise::new(TOKEN)).await;
    let setup = wise_bot(&fixture, TOKEN, CLI_CHAT, "");
    assert_eq!(
        answer(&setup, "wise balances").await,
        "ops: 1234.50 EUR\nusd: 99.999 USD\n"
    );
    assert_eq!(
        answer(&setup, "wise balances usd | head | data $.amount").await,
        "99.999\n"
    );
    assert_eq!(
        answer(&setup, "wise transactions 2026-11-01 2026-11-30").await,
        "2026-11-28 · 0.20 EUR · Cashback · ops\n\
         2026-11-20 · -0.30 EUR · Fee · ops\n\
         2026-11-03 · -12.50 EUR · Card payment: Yeti Supplies · ops\n\
         2026-11-02 · 1000.10 EUR · Invoice 17 paid · ops\n"
    );
    assert_eq!(
        answer(
            &setup,
            "wise transactions 2026-11-01 2026-11-30 ops | count"
        )
        .await,
        "4\n"
    );
    assert_eq!(
        answer(&setup, "wise totals 2026-11-01 2026-11-30 ops").await,
        "ops: in 1000.30 EUR · out -12.80 EUR · net 987.50 EUR · 4 transactions\n"
    );
    assert_eq!(
        answer(
            &setup,
            "wise totals 2026-11-01 2026-11-30 EUR | head | data $.end_balance"
        )
        .await,
        "1087.50\n"
    );
    // What Wise was asked: only GETs, whole UTC days, the token as a bearer.
    let requests = fixture.requests();
    assert!(requests.iter().all(|r| r.method == "GET"));
    let statement = requests
        .iter()
        .find(|r| r.path.ends_with("/balance-statements/7/statement.json"))
        .expect("a statement request");
    assert_eq!(
        statement.query.as_deref(),
        Some(
            "currency=EUR&intervalStart=2026-11-01T00:00:00.000Z&intervalEnd=2026-11-30T23:59:59.999Z&type=COMPACT"
        )
    );
    assert!(
        !requests.iter().any(|r| r.path.contains("/9/")),
        "the unconfigured balance is never read"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_refuses_before_the_token_is_read_or_anything_is_sent() {
    let fixture = fake(&Wise::new(TOKEN)).await;
    // Allowed only in a Slack channel: `yetibot run` is not that chat.
    let elsewhere = wise_bot(&fixture, TOKEN, SLACK_CHAT, "");
    let out = refused(&elsewhere, "wise balances").await;
    assert!(out.contains("not allowed in this chat"), "{out}");
    // A balance that is not configured, a bad range.
    let setup = wise_bot(&fixture, TOKEN, CLI_CHAT, "");
    let out = refused(&setup, "wise transactions 2026-11-01 2026-11-30 GBP").await;
    assert!(out.contains("no configured balance"), "{out}");
    for line in [
        "wise transactions 2026-11-30 2026-11-01",
        "wise totals 2025-01-01 2026-06-01",
        "wise totals last-week today",
    ] {
        let out = refused(&setup, line).await;
        assert!(out.contains("wise:"), "{out}");
    }
    assert!(fixture.requests().is_empty(), "{:?}", fixture.requests());
    // An unusable token file (writable by others) is refused without its path.
    let loose = wise_bot(&fixture, TOKEN, CLI_CHAT, "");
    let key = loose.dir.path.join("wise-token");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o666)).expect("mode");
    let out = refused(&loose, "wise balances").await;
    assert!(out.contains("token file cannot be used"), "{out}");
    assert!(!out.contains(key.to_str().expect("utf-8")), "{out}");
    assert!(fixture.requests().is_empty());
    // No :wise at all.
    let none = crate::Workdir::new();
    let file = none.path.join("config.edn");
    std::fs::write(&file, "{:yetibot {}}").expect("config");
    let out = crate::run_in(
        &none,
        &[("CONFIG_PATH", file.to_str().expect("utf-8"))],
        &["run", "wise balances"],
    );
    assert!(
        printed(&out).contains("wise needs :yetibot :wise"),
        "{}",
        printed(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wise_s_refusals_are_named_without_its_words() {
    for (fake_wise, token, expected) in [
        (Wise::new(TOKEN), "wise-wrong-token-000000", "401"),
        (
            Wise::new(TOKEN).forbidding(),
            TOKEN,
            "strong customer authentication",
        ),
        (Wise::new(TOKEN).rate_limited(), TOKEN, "30"),
    ] {
        let fixture = fake(&fake_wise).await;
        let setup = wise_bot(&fixture, token, CLI_CHAT, "");
        let out = refused(&setup, "wise balances").await;
        assert!(out.contains(expected), "{expected} in {out}");
        assert!(!out.contains("wise-wrong-token"), "{out}");
        assert_eq!(fixture.requests().len(), 1, "not retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_reads_for_a_model_only_where_the_chat_is_allowed() {
    let fixture = fake(&Wise::new(TOKEN)).await;
    let chat = fixture.url("/v1");
    let provider = format!(r#":ai {{:providers [{{:name "local" :url "{chat}" :model "m1"}}]}}"#);
    let setup = wise_bot(&fixture, TOKEN, CLI_CHAT, &provider);
    let listed = answer(&setup, "ai tools yetibot/wise").await;
    assert!(
        listed.starts_with("`yetibot/wise`") && listed.contains("totals"),
        "{listed}"
    );
    // Not offered, not listed, where the chat is not allowed.
    let elsewhere = wise_bot(&fixture, TOKEN, SLACK_CHAT, &provider);
    assert!(
        !answer(&elsewhere, "ai tools")
            .await
            .contains("yetibot/wise")
    );

    let call = provider_fixture::script::chat_tool_call(
        "c1",
        "yetibot__wise",
        "{\"action\":\"totals\",\"from\":\"2026-11-01\",\"to\":\"2026-11-30\",\"balance\":\"ops\"}",
    );
    fixture.route("/v1/chat/completions", Reply::json(call));
    fixture.route(
        "/v1/chat/completions",
        Reply::json(provider_fixture::script::chat_completion(
            "Net 987.50 EUR in November.",
        )),
    );
    assert_eq!(
        answer(&setup, "ai What did ops net in November 2026?")
            .await
            .lines()
            .next(),
        Some("Net 987.50 EUR in November.")
    );
    for request in fixture.requests() {
        assert!(!String::from_utf8_lossy(&request.body).contains(TOKEN));
    }
    let results = provider_fixture::script::tool_results(&fixture, "/v1/chat/completions");
    let result: Value = serde_json::from_str(&results[0]).expect("JSON");
    assert_eq!(result["records"][0]["net"], "987.50");
    assert_eq!(result["records"][0]["in"], "1000.30");
    assert_eq!(result["records"][0]["currency"], "EUR");
    assert_eq!(result["truncated"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_naming_wise_where_it_is_not_offered_reaches_nothing() {
    let fixture = fake(&Wise::new(TOKEN)).await;
    let chat = fixture.url("/v1");
    let provider = format!(r#":ai {{:providers [{{:name "local" :url "{chat}" :model "m1"}}]}}"#);
    // Allowed only in a Slack channel; the model asks for it from `yetibot run` anyway.
    let elsewhere = wise_bot(&fixture, TOKEN, SLACK_CHAT, &provider);
    fixture.route(
        "/v1/chat/completions",
        Reply::json(provider_fixture::script::chat_tool_call(
            "c1",
            "yetibot__wise",
            r#"{"action":"balances"}"#,
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(provider_fixture::script::chat_completion(
            "I cannot read that here.",
        )),
    );
    let out = elsewhere.run(&["ai What is in the ops balance?"]).await;
    assert!(!printed(&out).contains("1234.50"), "{}", printed(&out));
    assert!(
        !fixture
            .requests()
            .iter()
            .any(|r| r.path.starts_with("/wise")),
        "Wise was never asked"
    );
    let offered = fixture
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions")
        .expect("the model was asked");
    assert!(
        !String::from_utf8_lossy(&offered.body).contains("yetibot__wise"),
        "not offered"
    );
}
