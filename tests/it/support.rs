//! The bot as the binary runs it, for tests that drive it through a chat adapter: the real
//! interpreter (built-ins, the AI commands against a scripted provider, and a `wait` command
//! the test releases) and the conductor, fed from an adapter's intake with one task per event,
//! as the binary's supervisor does.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use provider_fixture::Fixture;
use tokio::sync::{Notify, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use yetibot_ai_providers::{Client, ClientOptions, ProviderConfig, ProviderSet};
use yetibot_chat_adapters::Intake;
use yetibot_command::{
    Call, Category, CommandSpec, Handler, Interpreter, Outcome, Settings, builtins,
};
use yetibot_conductor::{Conductor, ConductorOptions};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerSet};
use yetibot_tool_policy::{KnownNames, PolicyConfig, ToolPolicy};

/// `wait`: finishes only when the test adds a permit to the gate.
struct Gate(Arc<Semaphore>);

impl Handler for Gate {
    fn run<'a>(&'a self, _call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            if let Ok(permit) = self.0.acquire().await {
                permit.forget();
            }
            Outcome::text("waited")
        })
    }
}

fn policy() -> ToolPolicy {
    let natives = yetibot_ai_commands::native_tools();
    let config = PolicyConfig {
        toolsets: &[],
        default_toolset: None,
        max_tool_calls: None,
    };
    let known = KnownNames {
        servers: Vec::new(),
        providers: Vec::new(),
        with_github_api_token: Vec::new(),
        native_tools: &natives,
    };
    ToolPolicy::from_config(&config, &known).expect("an empty policy is valid")
}

/// The xAI key of `gi`, which the fixture's fake image API (at `/x/v1`) accepts.
pub(crate) const XAI_KEY: &str = "xai-image-key-for-platform-tests";

/// The Wise token of the platform tests, which the fixture's fake Wise API (at `/wise`)
/// accepts.
pub(crate) const WISE_TOKEN: &str = "wise-token-for-platform-tests";

/// Wise on the fixture, allowed in the platform suite's channel on each platform, by the
/// channel's platform ID (`C1` on Slack, `10` on Discord), and in no other chat.
fn wise_account(provider: &Fixture) -> yetibot_ai_commands::WiseAccount {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!(
        "yetibot-wise-{}-{}",
        std::process::id(),
        provider.addr().port()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let key = dir.join("token");
    std::fs::write(&key, WISE_TOKEN).expect("key file");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let chat = |adapter: &str, connection: &str, room: &str| yetibot_ai_commands::WiseChatConfig {
        adapter: Some(adapter.into()),
        connection: Some(connection.into()),
        room: Some(room.into()),
    };
    let config = yetibot_ai_commands::WiseConfig {
        key_file: Some(key.to_str().expect("utf-8").to_owned()),
        api_url: Some(provider.url("/wise")),
        profiles: Some(vec![yetibot_ai_commands::WiseProfileConfig {
            id: Some(provider_fixture::wise::PROFILE),
            balances: Some(vec![yetibot_ai_commands::WiseBalanceConfig {
                id: Some(7),
                currency: Some("EUR".into()),
                name: Some("ops".into()),
            }]),
        }]),
        chats: Some(vec![
            chat("slack", "myteam", "C1"),
            chat("discord", "main", "10"),
        ]),
    };
    yetibot_ai_commands::wise_account(&config)
        .expect("a valid :wise")
        .expect("configured")
}

/// A fake GitHub for the pull-request cases, and the bot's settings for it: the MCP
/// connections `github-read` (with the REST token) and `github-write` on the fake, a
/// `search` toolset (the default) and a `github-pr` toolset for Alice on both platforms
/// (`U1` on Slack, `42` on Discord), and automatic routing with Clef on the provider
/// fixture (at `/cf/client/v4`).
pub(crate) struct Github {
    pub(crate) fake: mcp_fixture::github::FakeGithub,
    mcp: String,
    rest: String,
    key: std::path::PathBuf,
}

/// The repository of the pull-request cases, and its file before and after the fix.
pub(crate) const REPO: &str = "your-org/your-repo";
pub(crate) const BEFORE: &str = "(ns example)\n\n(defn greet [] \"helo\")\n";
pub(crate) const AFTER: &str = "(ns example)\n\n(defn greet [] \"hello\")\n";
/// The Cloudflare account and the Clef path on the provider fixture.
pub(crate) const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
pub(crate) const CLEF: &str =
    "/cf/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/run/@cf/cloudflare/clef";
const READ_TOKEN: &str = "github-read-token-for-platform-tests";
const WRITE_TOKEN: &str = "github-write-token-for-platform-tests";
const CF_TOKEN: &str = "cf-token-for-platform-tests";
/// The GitHub MCP server's supported reads and the writer's fixed subset, as the policy
/// names them.
const READS: &[&str] = yetibot_tool_policy::GITHUB_READ_TOOLS;
const WRITES: &[&str] = yetibot_tool_policy::GITHUB_WRITE_TOOLS;

impl Github {
    /// Starts the fake and writes Clef's token file.
    pub(crate) async fn start(provider: &Fixture) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let fake = mcp_fixture::github::FakeGithub::new().with_repo(
            REPO,
            &[("src/example.clj", BEFORE), ("README.md", "# Example\n")],
        );
        let mcp = fake.serve_mcp().await.expect("fake GitHub MCP");
        let rest = fake.serve_rest().await.expect("fake GitHub REST");
        let dir = std::env::temp_dir().join(format!(
            "yetibot-github-{}-{}",
            std::process::id(),
            provider.addr().port()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        let key = dir.join("token");
        std::fs::write(&key, CF_TOKEN).expect("key file");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
        Self {
            fake,
            mcp,
            rest,
            key,
        }
    }

    fn servers(&self) -> ServerSet {
        let list = |tools: &[&str]| Some(tools.iter().map(|t| (*t).to_owned()).collect());
        ServerSet::from_config(
            &[
                yetibot_mcp_host::ServerConfig {
                    name: Some("github-read".into()),
                    url: Some(self.mcp.clone()),
                    tools: list(READS),
                    github_api_token: Some(yetibot_redaction::Secret::new(READ_TOKEN.to_owned())),
                    ..yetibot_mcp_host::ServerConfig::default()
                },
                yetibot_mcp_host::ServerConfig {
                    name: Some("github-write".into()),
                    url: Some(self.mcp.clone()),
                    headers: Some(
                        [(
                            "Authorization".to_owned(),
                            yetibot_redaction::Secret::new(format!("Bearer {WRITE_TOKEN}")),
                        )]
                        .into(),
                    ),
                    tools: list(WRITES),
                    ..yetibot_mcp_host::ServerConfig::default()
                },
            ],
            None,
        )
        .expect("GitHub servers")
    }

    fn policy(&self) -> ToolPolicy {
        use yetibot_tool_policy::{ProviderModelsConfig, ServerRefConfig, ToolsetConfig};
        let natives = yetibot_ai_commands::native_tools();
        let toolsets = [
            ToolsetConfig {
                name: Some("search".into()),
                kind: Some("search".into()),
                servers: Some(Vec::new()),
                ..ToolsetConfig::default()
            },
            ToolsetConfig {
                name: Some("github-pr".into()),
                kind: Some("github-pr".into()),
                users: Some(vec!["U1".into(), "42".into()]),
                adapters: Some(vec!["slack".into(), "discord".into()]),
                repositories: Some(vec![REPO.into()]),
                providers: Some(vec![ProviderModelsConfig {
                    name: Some("local".into()),
                    models: Some(vec!["m1".into()]),
                }]),
                base_branches: Some(vec!["main".into()]),
                allowed_paths: Some(vec!["src/".into()]),
                write_server: Some("github-write".into()),
                servers: Some(vec![ServerRefConfig {
                    name: Some("github-read".into()),
                    tools: None,
                }]),
                ..ToolsetConfig::default()
            },
        ];
        let reads: Vec<String> = READS.iter().map(|t| (*t).to_owned()).collect();
        let writes: Vec<String> = WRITES.iter().map(|t| (*t).to_owned()).collect();
        let known = KnownNames {
            servers: vec![
                ("github-read", Some(reads.as_slice())),
                ("github-write", Some(writes.as_slice())),
            ],
            providers: vec!["local", "grok"],
            with_github_api_token: vec!["github-read"],
            native_tools: &natives,
        };
        let config = PolicyConfig {
            toolsets: &toolsets,
            default_toolset: None,
            max_tool_calls: None,
        };
        ToolPolicy::from_config(&config, &known).expect("a valid GitHub policy")
    }

    /// The AI services with this GitHub, its toolsets and automatic routing.
    fn services(
        &self,
        provider: &Fixture,
        providers: ProviderSet,
    ) -> yetibot_ai_commands::AiServices {
        let secrets =
            yetibot_redaction::Secrets::new([READ_TOKEN, WRITE_TOKEN, CF_TOKEN]).expect("secrets");
        let router = yetibot_ai_commands::IntentRouter {
            enabled: true,
            account_id: ACCOUNT.to_owned(),
            key_file: self.key.clone(),
            gateway_id: None,
            api_url: provider.url("/cf/client/v4"),
            github_toolset: Some("github-pr".to_owned()),
            min_probability: 0.95,
        };
        yetibot_ai_commands::AiServices::new(
            Client::new(ClientOptions::default())
                .expect("client")
                .with_secrets(secrets.clone()),
            providers,
            Host::new(self.servers(), HostOptions::new().with_secrets(secrets)).expect("host"),
            self.policy(),
            Arc::new(tokio::time::Instant::now),
        )
        .with_github_api_url(self.rest.clone())
        .with_decisions(router.account())
        .with_intent_routing(&router)
    }
}

impl Drop for Github {
    fn drop(&mut self) {
        if let Some(dir) = self.key.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Two providers on the fixture: `local` (Chat Completions at `/v1`, model `m1`, the
/// default) and `grok` (Responses at `/g/v1`, model `g1`); with `github`, its toolsets and
/// automatic routing.
fn interpreter(provider: &Fixture, gate: &Arc<Semaphore>, github: Option<&Github>) -> Interpreter {
    let mut registry = builtins();
    registry.add(CommandSpec::new("wait", &[Category::UTIL]).route(
        None,
        "wait # waits for the test",
        Gate(Arc::clone(gate)),
    ));
    let providers = ProviderSet::from_config(
        None,
        &[
            ProviderConfig {
                name: Some("local".into()),
                url: Some(provider.url("/v1")),
                model: Some("m1".into()),
                ..ProviderConfig::default()
            },
            ProviderConfig {
                name: Some("grok".into()),
                url: Some(provider.url("/g/v1")),
                model: Some("g1".into()),
                api: Some("responses".into()),
                ..ProviderConfig::default()
            },
        ],
    )
    .expect("providers");
    let ai = match github {
        Some(github) => github.services(provider, providers),
        None => yetibot_ai_commands::AiServices::new(
            Client::new(ClientOptions::default()).expect("client"),
            providers,
            Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
            policy(),
            Arc::new(tokio::time::Instant::now),
        ),
    };
    let ai = ai
        .with_image_generation(yetibot_ai_commands::XaiAccount::new(
            &provider.url("/x/v1"),
            yetibot_redaction::Secret::new(XAI_KEY.to_owned()),
        ))
        .with_wise(wise_account(provider));
    for spec in yetibot_ai_commands::commands(Arc::new(ai)) {
        registry.add(spec);
    }
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(3)),
        Settings::default(),
    )
}

/// The bot behind an adapter: every event the adapter offers to the [`Intake`] is handled
/// by the conductor in a task of its own. Dropping it stops handling.
pub(crate) struct Bot {
    /// Permits for `!wait`.
    pub(crate) gate: Arc<Semaphore>,
    /// Events being handled, and a signal each time one is done.
    busy: Arc<(AtomicUsize, Notify)>,
    pump: JoinHandle<()>,
}

impl Bot {
    /// Starts the bot, posting a status card for a command still running after
    /// `card_delay`; the adapter is to offer its events to the returned intake.
    pub(crate) fn start(provider: &Fixture, card_delay: Duration) -> (Self, Intake) {
        Self::start_with(provider, card_delay, None)
    }

    /// As [`Bot::start`], with `github`'s toolsets and automatic routing when given.
    pub(crate) fn start_with(
        provider: &Fixture,
        card_delay: Duration,
        github: Option<&Github>,
    ) -> (Self, Intake) {
        let gate = Arc::new(Semaphore::new(0));
        let conductor = Arc::new(Conductor::new(
            Arc::new(interpreter(provider, &gate, github)),
            ConductorOptions {
                card_delay,
                ..ConductorOptions::default()
            },
        ));
        let (intake, mut events) = yetibot_chat_adapters::intake(64);
        let busy = Arc::new((AtomicUsize::new(0), Notify::new()));
        let counted = Arc::clone(&busy);
        let pump = tokio::spawn(async move {
            let mut handling = JoinSet::new();
            loop {
                tokio::select! {
                    next = events.next() => match next {
                        Some(incoming) => {
                            let conductor = Arc::clone(&conductor);
                            let counted = Arc::clone(&counted);
                            counted.0.fetch_add(1, Ordering::SeqCst);
                            handling.spawn(async move {
                                conductor.handle(incoming).await;
                                counted.0.fetch_sub(1, Ordering::SeqCst);
                                counted.1.notify_waiters();
                            });
                        }
                        None => break,
                    },
                    Some(_) = handling.join_next(), if !handling.is_empty() => {}
                }
            }
            while handling.join_next().await.is_some() {}
        });
        (Self { gate, busy, pump }, intake)
    }

    /// Waits until every event handed to the conductor so far has been handled to the end,
    /// so that what it recorded after posting (an answer's buttons, a confirmation) is in
    /// place before the test goes on.
    pub(crate) async fn settle(&self) {
        let (handling, done) = &*self.busy;
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let notified = done.notified();
                if handling.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        })
        .await
        .expect("the conductor settles");
    }
}

impl Drop for Bot {
    fn drop(&mut self) {
        self.pump.abort();
    }
}
