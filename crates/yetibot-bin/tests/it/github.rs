//! The GitHub setup of the README, from its configuration file through the real binary:
//! `github-read` and `github-pr` toolsets over a fake GitHub (its MCP server and REST API on
//! loopback, in this process), a writer connection, `:github-api-url`, and automatic routing
//! with Clef on the provider fixture. `yetibot run` and the web console carry no platform
//! identity, so neither can reach a GitHub toolset, start automatic routing or approve a
//! proposal, and a console request that copies a Slack user's identity is refused outright.

use std::os::unix::fs::PermissionsExt;

use mcp_fixture::github::FakeGithub;
use provider_fixture::{Fixture, Reply, script};

use crate::{Configured, Workdir, printed};

const READ_TOKEN: &str = "github-read-token-canary-bin-1";
const WRITE_TOKEN: &str = "github-write-token-canary-bin-2";
const CF_TOKEN: &str = "cf-token-canary-bin-3";
const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
pub(crate) const CLEF: &str =
    "/cf/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/run/@cf/cloudflare/clef";

/// The README's GitHub configuration, pointed at the fakes.
fn edn(model: &Fixture, mcp: &str, rest: &str, key: &std::path::Path) -> String {
    format!(
        r#"{{:yetibot
 {{:ai
  {{:providers [{{:name "local" :url "{model}" :model "m1"
                 :tool-calling true :tool-choice "standard"}}]
   :default-provider "local"
   :mcp
   {{:default-toolset "search"
     :github-api-url "{rest}"
     :servers
     [{{:name "github-read" :url "{mcp}"
        :github-api-token "{READ_TOKEN}"
        :tools ["get_file_contents" "get_commit" "list_branches"
                "issue_read" "pull_request_read" "search_code"]}}
      {{:name "github-write" :url "{mcp}"
        :headers {{"Authorization" "Bearer {WRITE_TOKEN}"}}
        :tools ["create_branch" "push_files" "create_pull_request"]}}]
     :toolsets
     [{{:name "search" :kind "search" :servers []}}
      {{:name "github-read" :kind "github-read"
        :users ["U1"] :adapters ["slack"]
        :repositories ["your-org/your-repo"]
        :providers [{{:name "local" :models ["m1"]}}]
        :servers [{{:name "github-read"}}]}}
      {{:name "github-pr" :kind "github-pr"
        :users ["U1"] :adapters ["slack"]
        :repositories ["your-org/your-repo"]
        :providers [{{:name "local" :models ["m1"]}}]
        :base-branches ["main"]
        :allowed-paths ["src/" "test/" "doc/"]
        :denied-paths ["src/credentials/"]
        :branch-prefix "yetibot/ai-"
        :write-server "github-write"
        :servers [{{:name "github-read"}}]}}]}}
   :intent-router
   {{:enabled true
     :account-id "{ACCOUNT}"
     :key-file "{key}"
     :api-url "{clef}"
     :github-toolset "github-pr"
     :min-probability 0.95}}}}}}}}"#,
        model = model.url("/v1"),
        clef = model.url("/cf/client/v4"),
        key = key.display(),
    )
}

/// The fakes and the bot's working directory with the configuration.
pub(crate) struct Setup {
    pub(crate) github: FakeGithub,
    pub(crate) model: Fixture,
    pub(crate) bot: Configured,
}

/// The fakes, a Clef that finds every request an explicit change, a model that only
/// explains, and the configuration.
pub(crate) async fn setup() -> Setup {
    let github = FakeGithub::new().with_repo(
        "your-org/your-repo",
        &[(
            "src/example.clj",
            "(ns example)\n(defn greet [] \"helo\")\n",
        )],
    );
    let mcp = github.serve_mcp().await.expect("fake GitHub MCP");
    let rest = github.serve_rest().await.expect("fake GitHub REST");
    let model = Fixture::start().await.expect("provider fixture");
    model.route(
        CLEF,
        provider_fixture::workers::clef_intent("code_change", 0.99, 0.99),
    );
    model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("You would change helo to hello.")),
    );
    let dir = Workdir::new();
    let key = dir.path.join("clef-token");
    std::fs::write(&key, CF_TOKEN).expect("key file");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let edn = edn(&model, &mcp, &rest, &key);
    Setup {
        github,
        model,
        bot: Configured::in_dir(dir, &edn),
    }
}

/// Fails when `text` holds a configured token.
pub(crate) fn clean(text: &str) {
    for token in [READ_TOKEN, WRITE_TOKEN, CF_TOKEN] {
        assert!(!text.contains(token), "{token} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_platform_identity_nothing_reaches_github_or_clef() {
    let s = setup().await;
    let listed = s.bot.run(&["ai toolsets"]).await;
    let text = printed(&listed);
    assert_eq!(listed.status.code(), Some(0), "{text}");
    assert!(text.contains("search"), "{text}");
    assert!(!text.contains("github-pr"), "{text}");
    assert!(!text.contains("github-write"), "{text}");
    let manual = s
        .bot
        .run(&["ai --toolset github-pr In your-org/your-repo, fix the typo in src/example.clj and propose a draft PR."])
        .await;
    let text = printed(&manual);
    assert_eq!(manual.status.code(), Some(1), "{text}");
    assert!(
        text.contains("not available on this chat platform"),
        "{text}"
    );
    let approve = s.bot.run(&["ai approve 0123456789abcdef"]).await;
    let text = printed(&approve);
    assert_eq!(approve.status.code(), Some(1), "{text}");
    assert!(text.contains("no pending proposal"), "{text}");
    let model_calls = s.model.count("/v1/chat/completions");
    let automatic = s
        .bot
        .run(&["ai In your-org/your-repo, fix the typo in src/example.clj"])
        .await;
    let text = printed(&automatic);
    assert_eq!(automatic.status.code(), Some(0), "{text}");
    assert!(text.contains("You would change helo to hello."), "{text}");
    clean(&text);
    assert_eq!(s.model.count("/v1/chat/completions"), model_calls + 1);
    assert_eq!(s.model.count(CLEF), 0);
    assert!(s.github.called().is_empty());
    assert!(s.github.rest_requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_config_accepts_the_readme_setup_and_prints_no_token() {
    let s = setup().await;
    let out = crate::run_blocking(&s.bot_dir(), &s.bot_config(), &["check-config"]).await;
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("github-pr"), "{text}");
    assert!(text.contains("Intent router: enabled"), "{text}");
    clean(&text);
}

impl Setup {
    pub(crate) fn bot_dir(&self) -> std::path::PathBuf {
        self.bot.dir.path.clone()
    }

    pub(crate) fn bot_config(&self) -> String {
        self.bot.config.clone()
    }
}

const FILE_CANARY: &str = "canary-private-github-file-7b2e";
const ECHO_CANARY: &str = "canary-public-echo-argument-41c9";

/// The bot on the fake Slack with a `github-read` toolset over the fake GitHub and an
/// `echo` toolset over the MCP fixture, logging everything with rmcp's cap lifted (so that
/// rmcp writes whole JSON-RPC messages). A request that uses the echo tool writes its
/// payloads; the request that reads a private file writes nothing more once it chose the
/// GitHub toolset, so neither the file nor the tool call reaches the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_reads_github_writes_nothing_more_to_the_log() {
    use crate::slack::{connected, message, posted};
    use slack_fixture::FakeSlack;

    let github = FakeGithub::new().with_repo(
        "your-org/your-repo",
        &[(
            "src/example.clj",
            &format!("(ns example)\n(def note \"{FILE_CANARY}\")\n"),
        )],
    );
    let mcp = github.serve_mcp().await.expect("fake GitHub MCP");
    let model = Fixture::start().await.expect("provider fixture");
    let echo = serde_json::json!({"text": ECHO_CANARY}).to_string();
    model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_tool_call("c1", "fx__echo", &echo)),
    );
    model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Echoed.")),
    );
    model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_tool_call(
            "c2",
            "github-read__get_file_contents",
            r#"{"owner":"your-org","repo":"your-repo","path":"src/example.clj"}"#,
        )),
    );
    model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("It defines a note.")),
    );
    let slack = FakeSlack::start().await;
    slack.set_channel("C1", serde_json::json!({"id": "C1", "name": "general"}));
    slack.set_user("U1", serde_json::json!({"id": "U1", "name": "ada"}));
    let edn = format!(
        r#"{{:yetibot
 {{:web {{:enabled false}}
  :adapters {{:myteam {{:type "slack" :api-url "{slack}"}}}}
  :ai
  {{:providers [{{:name "local" :url "{model}" :model "m1"
                 :tool-calling true :tool-choice "standard"}}]
   :default-provider "local"
   :mcp
   {{:default-toolset "search"
     :servers
     [{{:name "github-read" :url "{mcp}"
        :github-api-token "{READ_TOKEN}"
        :tools ["get_file_contents"]}}
      {{:name "fx" :command "{fixture}" :tools ["echo"]}}]
     :toolsets
     [{{:name "search" :kind "search" :servers []}}
      {{:name "echo" :kind "search" :servers [{{:name "fx"}}]}}
      {{:name "github-read" :kind "github-read"
        :users ["U1"] :adapters ["slack"]
        :repositories ["your-org/your-repo"]
        :providers [{{:name "local" :models ["m1"]}}]
        :servers [{{:name "github-read"}}]}}]}}}}}}}}"#,
        slack = slack.api_url(),
        model = model.url("/v1"),
        fixture = crate::mcp_fixture(),
    );
    let dir = Workdir::new();
    let bot = connected(&slack, &dir, &edn, "trace,rmcp=trace").await;

    slack.send_event(
        "Ev1",
        message(
            "!ai --toolset echo Echo the canary.",
            "1700000000.000100",
            None,
        ),
    );
    posted(&slack, "Echoed.").await;
    slack.send_event(
        "Ev2",
        message(
            "!ai --toolset github-read What does src/example.clj in your-org/your-repo hold?",
            "1700000001.000100",
            None,
        ),
    );
    posted(&slack, "It defines a note.").await;
    assert_eq!(github.called(), ["get_file_contents"]);
    // The file really reached the model.
    assert!(
        model
            .requests()
            .iter()
            .any(|r| String::from_utf8_lossy(&r.body).contains(FILE_CANARY))
    );

    let (code, lines) = bot.stop();
    assert_eq!(code, Some(0), "{lines:#?}");
    let log = lines.join("\n");
    // With rmcp's cap lifted, an ordinary request's tool call reaches the log...
    assert!(log.contains(ECHO_CANARY), "rmcp logs payloads: {log}");
    // ...but nothing of the private one: not the file, not the call that read it.
    for private in [FILE_CANARY, "src/example.clj"] {
        assert!(!log.contains(private), "{private:?} reached the log: {log}");
    }
    clean(&log);
}
