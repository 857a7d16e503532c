//! Wise's own policy against a named toolset that lists `wise` explicitly: the toolset admits
//! the Slack user, but only a chat on `:wise :chats` (matched by the room's platform ID) is
//! offered the tool, and a model that names it elsewhere reaches nothing.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use provider_fixture::wise::Wise;
use provider_fixture::{Fixture, Reply, script};
use yetibot_ai_commands::{
    AiServices, WiseBalanceConfig, WiseChatConfig, WiseConfig, WiseProfileConfig,
};
use yetibot_ai_providers::{Client, ClientOptions, ProviderSet};
use yetibot_command::{Caller, Interpreter, Platform, PlatformError};
use yetibot_conversation::AdapterKind;
use yetibot_mcp_host::{Host, HostOptions, ServerSet};
use yetibot_tool_policy::{
    KnownNames, PolicyConfig, ProviderModelsConfig, ToolPolicy, ToolsetConfig,
};

const TOKEN: &str = "wise-token-for-the-toolset-test";

/// A Slack channel: the caller's room is its name, the platform knows its ID.
struct Channel(&'static str);

impl Platform for Channel {
    fn room_id(&self) -> Option<&str> {
        Some(self.0)
    }

    fn react<'a>(
        &'a self,
        _: &'a str,
        _: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Err(PlatformError::Refused("no reactions here")) })
    }
}

fn caller(channel_id: &'static str) -> Caller {
    Caller {
        adapter: AdapterKind::Slack,
        connection: "slack".into(),
        room: "#general".into(),
        user_id: "U1".into(),
        user_name: "alice".into(),
        trusted: true,
        message_id: Some("1.0".into()),
        platform: Some(Arc::new(Channel(channel_id))),
    }
}

/// The bot with provider `local` and the toolset `money` (search, no servers, natives
/// `["wise"]` explicitly, for U1 on Slack), Wise allowed in channel `C-ALLOWED` only.
fn bot(fixture: &Fixture, dir: &std::path::Path) -> Interpreter {
    let toolsets = [ToolsetConfig {
        name: Some("money".into()),
        kind: Some("search".into()),
        servers: Some(Vec::new()),
        native_tools: Some(vec!["wise".into()]),
        users: Some(vec!["U1".into()]),
        adapters: Some(vec!["slack".into()]),
        providers: Some(vec![ProviderModelsConfig {
            name: Some("local".into()),
            models: Some(vec!["m1".into()]),
        }]),
        ..ToolsetConfig::default()
    }];
    let natives = yetibot_ai_commands::native_tools();
    let known = KnownNames {
        servers: Vec::new(),
        providers: vec!["local"],
        with_github_api_token: Vec::new(),
        native_tools: &natives,
    };
    let policy = ToolPolicy::from_config(
        &PolicyConfig {
            toolsets: &toolsets,
            default_toolset: Some("money"),
            max_tool_calls: None,
        },
        &known,
    )
    .expect("a valid policy");
    let providers = ProviderSet::from_config(
        None,
        &[crate::ai::provider("local", fixture.url("/v1"), Some("m1"))],
    )
    .expect("providers");
    let key = dir.join("wise-token");
    std::fs::write(&key, TOKEN).expect("key file");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let wise = yetibot_ai_commands::wise_account(&WiseConfig {
        key_file: Some(key.to_str().expect("utf-8").to_owned()),
        api_url: Some(fixture.url("/wise")),
        profiles: Some(vec![WiseProfileConfig {
            id: Some(provider_fixture::wise::PROFILE),
            balances: Some(vec![WiseBalanceConfig {
                id: Some(7),
                currency: Some("EUR".into()),
                name: Some("ops".into()),
            }]),
        }]),
        chats: Some(vec![WiseChatConfig {
            adapter: Some("slack".into()),
            connection: Some("slack".into()),
            room: Some("C-ALLOWED".into()),
        }]),
    })
    .expect("valid")
    .expect("configured");
    let services = AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        policy,
        Arc::new(tokio::time::Instant::now),
    )
    .with_wise(wise);
    crate::ai::bot(services, &[])
}

#[tokio::test]
async fn an_explicit_toolset_cannot_widen_wise_s_chat_allowlist() {
    let fixture = Fixture::start().await.expect("fixture");
    Wise::new(TOKEN).mount(&fixture, "/wise");
    let dir = std::env::temp_dir().join(format!("yetibot-wise-toolset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bot = bot(&fixture, &dir);

    let listed = bot.run(&caller("C-ALLOWED"), "ai tools yetibot").await;
    assert!(
        listed.messages().join("\n").contains("yetibot/wise"),
        "{listed:?}"
    );
    // Same user, same toolset, another channel (whose name may even be the same).
    let elsewhere = bot.run(&caller("C-OTHER"), "ai tools yetibot").await;
    assert!(
        !elsewhere.messages().join("\n").contains("yetibot/wise"),
        "{elsewhere:?}"
    );
    let refused = bot.run(&caller("C-OTHER"), "wise balances").await;
    assert!(
        refused
            .error
            .is_some_and(|e| e.contains("not allowed in this chat"))
    );

    // A model that names the tool anyway, in the channel that is not allowed.
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_tool_call(
            "c1",
            "yetibot__wise",
            r#"{"action":"balances"}"#,
        )),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Not here.")),
    );
    let _ = bot.run(&caller("C-OTHER"), "ai what is in ops?").await;
    assert!(
        !fixture
            .requests()
            .iter()
            .any(|r| r.path.starts_with("/wise")),
        "Wise was never asked"
    );
    // In the allowed channel the same toolset reads it.
    let read = bot.run(&caller("C-ALLOWED"), "wise balances").await;
    assert_eq!(read.messages(), ["ops: 1234.50 EUR"]);
    let _ = std::fs::remove_dir_all(&dir);
}
