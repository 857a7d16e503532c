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

/// Two providers on the fixture: `local` (Chat Completions at `/v1`, model `m1`, the
/// default) and `grok` (Responses at `/g/v1`, model `g1`).
fn interpreter(provider: &Fixture, gate: &Arc<Semaphore>) -> Interpreter {
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
    let ai = yetibot_ai_commands::AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        policy(),
        Arc::new(tokio::time::Instant::now),
    )
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
        let gate = Arc::new(Semaphore::new(0));
        let conductor = Arc::new(Conductor::new(
            Arc::new(interpreter(provider, &gate)),
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
