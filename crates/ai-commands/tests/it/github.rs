//! A GitHub read toolset holds the model to its `:repositories`: a search gets the host's
//! `repo:` qualifiers, and a read or search that names another repository never reaches the
//! server. The server is the in-repo MCP fixture offering GitHub's tool names, over stdio.

use std::sync::Arc;

use provider_fixture::{Fixture, Reply, script};
use yetibot_ai_commands::AiServices;
use yetibot_ai_providers::{Client, ClientOptions};
use yetibot_command::{Caller, Interpreter, Settings, builtins};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerConfig, ServerSet};
use yetibot_tool_policy::{KnownNames, ProviderModelsConfig, ServerRefConfig, ToolsetConfig};

fn fixture_binary() -> String {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        mcp_fixture::build_binary(env!("CARGO"))
            .expect("the MCP fixture builds")
            .display()
            .to_string()
    })
    .clone()
}

/// The bot with provider `local` on `fixture` and toolset `gh` (github-read, one
/// repository) over the MCP fixture's GitHub tools, for user U1 on Slack.
fn bot(fixture: &Fixture) -> Interpreter {
    let tools = vec!["get_file_contents".to_owned(), "search_code".to_owned()];
    let servers = ServerSet::from_config(
        &[ServerConfig {
            name: Some("gh".into()),
            command: Some(fixture_binary()),
            args: Some(vec!["--github".into()]),
            tools: Some(tools.clone()),
            ..ServerConfig::default()
        }],
        None,
    )
    .expect("servers");
    let toolsets = [ToolsetConfig {
        name: Some("gh".into()),
        kind: Some("github-read".into()),
        users: Some(vec!["U1".into()]),
        adapters: Some(vec!["slack".into()]),
        repositories: Some(vec!["your-org/your-repo".into()]),
        providers: Some(vec![ProviderModelsConfig {
            name: Some("local".into()),
            models: Some(vec!["m1".into()]),
        }]),
        servers: Some(vec![ServerRefConfig {
            name: Some("gh".into()),
            tools: None,
        }]),
        ..ToolsetConfig::default()
    }];
    let natives = yetibot_ai_commands::native_tools();
    let known = KnownNames {
        servers: vec![("gh", Some(tools.as_slice()))],
        providers: vec!["local"],
        with_github_api_token: Vec::new(),
        native_tools: &natives,
    };
    let policy = crate::policy(&toolsets, &known);
    let providers = crate::local_provider(fixture.url("/v1"));
    let services = AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(servers, HostOptions::new()).expect("host"),
        policy,
        Arc::new(tokio::time::Instant::now),
    );
    let mut registry = builtins();
    for spec in yetibot_ai_commands::commands(Arc::new(services)) {
        registry.add(spec);
    }
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(5)),
        Settings::default(),
    )
}

fn slack_user() -> Caller {
    crate::github_pr::alice()
}

/// Everything the provider was sent, as text.
fn sent(fixture: &Fixture) -> String {
    fixture
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_is_scoped_to_the_toolsets_repositories() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_tool_call(
            "c1",
            "gh__search_code",
            r#"{"query":"fn main"}"#,
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("found it")),
    );
    let reply = bot(&fixture)
        .run(&slack_user(), "ai --toolset gh where is main?")
        .await;
    assert!(reply.error.is_none(), "{reply:?}");
    let text = sent(&fixture);
    assert!(
        text.contains(r#"github-args: {\"query\":\"fn main repo:your-org/your-repo\"}"#),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_or_search_of_another_repository_never_reaches_the_server() {
    for (tool, arguments) in [
        (
            "gh__get_file_contents",
            r#"{"owner":"someone-else","repo":"secrets","path":"a"}"#,
        ),
        (
            "gh__search_code",
            r#"{"query":"password repo:someone-else/secrets"}"#,
        ),
        (
            "gh__search_code",
            r#"{"query":"password org:someone-else"}"#,
        ),
    ] {
        let fixture = Fixture::start().await.expect("fixture");
        fixture.route(
            "/v1/chat/completions",
            Reply::json(script::chat_tool_call("c1", tool, arguments)),
        );
        fixture.route(
            "/v1/chat/completions",
            Reply::json(script::chat_completion("could not")),
        );
        bot(&fixture)
            .run(&slack_user(), "ai --toolset gh read their secrets")
            .await;
        let text = sent(&fixture);
        assert!(!text.contains("github-args:"), "{arguments}: {text}");
    }
    // The listed repository is read as asked.
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_tool_call(
            "c1",
            "gh__get_file_contents",
            r#"{"owner":"your-org","repo":"your-repo","path":"README.md"}"#,
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("read it")),
    );
    bot(&fixture)
        .run(&slack_user(), "ai --toolset gh read the readme")
        .await;
    assert!(
        sent(&fixture).contains("github-args:"),
        "{}",
        sent(&fixture)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_message_cannot_use_a_github_toolset() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_tool_call(
            "c1",
            "gh__search_code",
            r#"{"query":"fn main"}"#,
        )),
    );
    let reply = bot(&fixture)
        .run(
            &crate::github_pr::person("U1", None, false),
            "ai --toolset gh where is main?",
        )
        .await;
    assert!(
        reply
            .error
            .as_deref()
            .is_some_and(|e| e.contains("an edited message, a reaction or a rerun")),
        "{reply:?}"
    );
    assert!(fixture.requests().is_empty());
}
