//! The guarded pull-request workflow end to end against a fake GitHub on loopback: the
//! GitHub MCP server's read and write tools over Streamable HTTP (with `get_commit`
//! answering without parents) and GitHub's REST commit read for ancestry, both in this
//! process and sharing one set of repositories. The model is the provider fixture; it stages
//! through `stage_changes`, and the requester reviews, approves or cancels by typing `ai`
//! commands.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use mcp_fixture::github::{FakeGithub, Fault};
use provider_fixture::{Fixture, Reply, script};
use serde_json::json;
use yetibot_ai_commands::{AiServices, AuditEvent, AuditStep, IntentRouter};
use yetibot_ai_providers::{Client, ClientOptions, WorkersAccount};
use yetibot_command::{
    Caller, Interpreter, Platform, PlatformError, Reply as CommandReply, Settings, ThreadError,
    ThreadMessage, ThreadSource, builtins,
};
use yetibot_conversation::AdapterKind;
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerConfig, ServerSet};
use yetibot_redaction::{Secret, Secrets};
use yetibot_tool_policy::{KnownNames, ProviderModelsConfig, ServerRefConfig, ToolsetConfig};

const REPO: &str = "your-org/your-repo";
const READ_TOKEN: &str = "github-read-token-canary-0001";
const WRITE_TOKEN: &str = "github-write-token-canary-0002";
const BEFORE: &str = "(ns example)\n\n(defn greet [] \"helo\")\n";
const AFTER: &str = "(ns example)\n\n(defn greet [] \"hello\")\n";
/// The GitHub MCP server's supported reads and the writer's fixed subset, as the policy
/// names them.
const READS: &[&str] = yetibot_tool_policy::GITHUB_READ_TOOLS;
const WRITES: &[&str] = yetibot_tool_policy::GITHUB_WRITE_TOOLS;

/// A Slack message: its channel ID, its thread, and whether it is new as sent.
struct Chat {
    room_id: &'static str,
    thread: Option<Thread>,
    original: bool,
}

struct Thread(&'static str);

impl ThreadSource for Thread {
    fn key(&self) -> String {
        self.0.to_owned()
    }

    fn history(&self) -> BoxFuture<'_, Result<Vec<ThreadMessage>, ThreadError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

impl Platform for Chat {
    fn room_id(&self) -> Option<&str> {
        Some(self.room_id)
    }

    fn is_original_message(&self) -> bool {
        self.original
    }

    fn thread(&self) -> Option<&dyn ThreadSource> {
        self.thread.as_ref().map(|t| t as &dyn ThreadSource)
    }

    fn react<'a>(
        &'a self,
        _: &'a str,
        _: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Err(PlatformError::Refused("no reactions here")) })
    }
}

/// A Slack caller in channel `#dev`, in `thread` if any, whose message is `original` or an
/// edit.
pub(crate) fn person(user: &str, thread: Option<&'static str>, original: bool) -> Caller {
    Caller {
        adapter: AdapterKind::Slack,
        connection: "slack".into(),
        room: "#dev".into(),
        user_id: user.into(),
        user_name: user.to_lowercase(),
        trusted: true,
        message_id: Some("1.0".into()),
        platform: Some(Arc::new(Chat {
            room_id: "C-DEV",
            thread: thread.map(Thread),
            original,
        })),
    }
}

pub(crate) fn alice() -> Caller {
    person("U1", None, true)
}

/// The world of one test: the fake GitHub, the model, Clef, the bot, its clock and audit
/// log.
struct World {
    github: FakeGithub,
    model: Fixture,
    cloudflare: Fixture,
    bot: Interpreter,
    minutes: Arc<AtomicU64>,
    audit: Arc<Mutex<Vec<AuditEvent>>>,
    _key: KeyDir,
}

/// A private directory holding the Clef token file, removed on drop.
struct KeyDir(std::path::PathBuf);

impl Drop for KeyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
const CF_TOKEN: &str = "cf-routing-token-canary-5150";
const CLEF: &str =
    "/client/v4/accounts/0123456789abcdef0123456789abcdef/ai/run/@cf/cloudflare/clef";

/// How a world is set up.
#[derive(Default)]
struct Setup {
    /// The MCP operation timeout.
    timeout_ms: Option<i64>,
    /// Automatic routing with this threshold.
    routing: Option<f64>,
    /// More approved repositories than `your-org/your-repo`.
    more_repositories: Vec<&'static str>,
    /// This GitHub instead of a new one (a restarted bot).
    github: Option<FakeGithub>,
}

/// A world with automatic routing at this threshold.
async fn routed(min_probability: f64) -> World {
    world_with(Setup {
        routing: Some(min_probability),
        ..Setup::default()
    })
    .await
}

async fn world(timeout_ms: Option<i64>) -> World {
    world_with(Setup {
        timeout_ms,
        ..Setup::default()
    })
    .await
}

/// A world whose proposal Alice has staged and read every page of, with its ID.
async fn reviewed(timeout_ms: Option<i64>) -> (World, String) {
    let w = world(timeout_ms).await;
    let id = w.propose().await;
    w.review(&id).await;
    (w, id)
}

async fn world_with(setup: Setup) -> World {
    let timeout_ms = setup.timeout_ms;
    // The MCP host's HTTP transport takes the process's TLS provider, as the binary installs.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let github = setup.github.clone().unwrap_or_else(|| {
        FakeGithub::new()
            .with_repo(
                REPO,
                &[
                    ("src/example.clj", BEFORE),
                    ("src/util.clj", "(ns util)\n"),
                    ("README.md", "# Example\n"),
                ],
            )
            .with_repo("your-org/docs", &[("doc/index.md", "# Docs\n")])
    });
    let cloudflare = Fixture::start().await.expect("Cloudflare fixture");
    let dir = std::env::temp_dir().join(format!(
        "yetibot-routing-{}-{}",
        std::process::id(),
        cloudflare.addr().port()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let key = dir.join("token");
    std::fs::write(&key, CF_TOKEN).expect("key");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("mode");
    let mcp = github.serve_mcp().await.expect("fake GitHub MCP");
    let rest = github.serve_rest().await.expect("fake GitHub REST");
    let model = Fixture::start().await.expect("provider fixture");
    let read_token = Secret::new(READ_TOKEN.to_owned());
    let servers = ServerSet::from_config(
        &[
            ServerConfig {
                name: Some("github-read".into()),
                url: Some(mcp.clone()),
                tools: Some(READS.iter().map(|t| (*t).to_owned()).collect()),
                github_api_token: Some(read_token),
                ..ServerConfig::default()
            },
            ServerConfig {
                name: Some("github-write".into()),
                url: Some(mcp),
                headers: Some(
                    [(
                        "Authorization".to_owned(),
                        Secret::new(format!("Bearer {WRITE_TOKEN}")),
                    )]
                    .into(),
                ),
                tools: Some(WRITES.iter().map(|t| (*t).to_owned()).collect()),
                ..ServerConfig::default()
            },
        ],
        timeout_ms,
    )
    .expect("servers");
    let mut repositories = vec![REPO.to_owned()];
    repositories.extend(setup.more_repositories.iter().map(|r| (*r).to_owned()));
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
            users: Some(vec!["U1".into(), "U2".into()]),
            adapters: Some(vec!["slack".into()]),
            repositories: Some(repositories),
            providers: Some(vec![ProviderModelsConfig {
                name: Some("local".into()),
                models: Some(vec!["m1".into()]),
            }]),
            base_branches: Some(vec!["main".into()]),
            allowed_paths: Some(vec!["src/".into(), "doc/".into()]),
            denied_paths: Some(vec!["src/credentials/".into()]),
            branch_prefix: Some("yetibot/ai-".into()),
            write_server: Some("github-write".into()),
            servers: Some(vec![ServerRefConfig {
                name: Some("github-read".into()),
                tools: None,
            }]),
            ..ToolsetConfig::default()
        },
    ];
    let natives = yetibot_ai_commands::native_tools();
    let read_tools: Vec<String> = READS.iter().map(|t| (*t).to_owned()).collect();
    let write_tools: Vec<String> = WRITES.iter().map(|t| (*t).to_owned()).collect();
    let known = KnownNames {
        servers: vec![
            ("github-read", Some(read_tools.as_slice())),
            ("github-write", Some(write_tools.as_slice())),
        ],
        providers: vec!["local"],
        with_github_api_token: vec!["github-read"],
        native_tools: &natives,
    };
    let policy = crate::policy(&toolsets, &known);
    let providers = crate::local_provider(model.url("/v1"));
    let secrets = Secrets::new([READ_TOKEN, WRITE_TOKEN, CF_TOKEN]).expect("secrets");
    let minutes = Arc::new(AtomicU64::new(0));
    let start = tokio::time::Instant::now();
    let offset = Arc::clone(&minutes);
    let audit = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&audit);
    let services = AiServices::new(
        Client::new(ClientOptions::default())
            .expect("client")
            .with_secrets(secrets.clone()),
        providers,
        Host::new(servers, HostOptions::new().with_secrets(secrets)).expect("host"),
        policy,
        Arc::new(move || start + Duration::from_secs(60 * offset.load(Ordering::SeqCst))),
    )
    .with_github_api_url(rest)
    .with_decisions(WorkersAccount::new(
        &cloudflare.url("/client/v4"),
        ACCOUNT,
        key,
        None,
    ))
    .with_audit(Arc::new(move |event: &AuditEvent| {
        log.lock().expect("audit").push(event.clone());
    }));
    let services = match setup.routing {
        Some(min_probability) => services.with_intent_routing(&IntentRouter {
            enabled: true,
            account_id: ACCOUNT.to_owned(),
            key_file: dir.join("token"),
            gateway_id: None,
            api_url: cloudflare.url("/client/v4"),
            github_toolset: Some("github-pr".to_owned()),
            min_probability,
        }),
        None => services,
    };
    let mut registry = builtins();
    for spec in yetibot_ai_commands::commands(Arc::new(services)) {
        registry.add(spec);
    }
    let bot = Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(5)),
        Settings::default(),
    );
    World {
        github,
        model,
        cloudflare,
        bot,
        minutes,
        audit,
        _key: KeyDir(dir),
    }
}

fn staging(files: serde_json::Value) -> serde_json::Value {
    json!({"owner": "your-org", "repo": "your-repo", "base": "main",
           "title": "Fix the greeting's typo", "body": "Corrects \"helo\".", "files": files})
}

/// Fails unless `reply` is an error that says `expected`.
fn refused(reply: &CommandReply, expected: &str) {
    assert!(
        reply.error.as_deref().is_some_and(|e| e.contains(expected)),
        "{expected}: {reply:?}"
    );
}

fn text(reply: &CommandReply) -> String {
    match &reply.value {
        yetibot_json_util::Value::String(text) => text.clone(),
        other => format!("{other:?}"),
    }
}

impl World {
    /// The model reads the file, stages `files`, then answers.
    fn script(&self, files: serde_json::Value) {
        self.model.route(
            "/v1/chat/completions",
            Reply::json(script::chat_tool_call(
                "c1",
                "github-read__get_file_contents",
                r#"{"owner":"your-org","repo":"your-repo","path":"src/example.clj"}"#,
            )),
        );
        self.model.route(
            "/v1/chat/completions",
            Reply::json(script::chat_tool_call(
                "c2",
                "yetibot__stage_changes",
                &staging(files).to_string(),
            )),
        );
        self.model.route(
            "/v1/chat/completions",
            Reply::json(script::chat_completion("I staged the fix.")),
        );
    }

    /// Alice asks for a fix under `github-pr`, and the model stages `files`.
    async fn stage(&self, files: serde_json::Value) -> CommandReply {
        self.script(files);
        self.run(
            &alice(),
            "ai --toolset github-pr In your-org/your-repo, fix the typo in src/example.clj and propose a draft PR.",
        )
        .await
    }

    /// Asks for the fix and returns the staged proposal's ID.
    async fn propose(&self) -> String {
        let reply = self
            .stage(json!([{"path": "src/example.clj", "content": AFTER}]))
            .await;
        let shown = text(&reply);
        assert!(reply.error.is_none(), "{reply:?}");
        let id = shown
            .split("Proposal ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("a proposal ID in the answer: {reply:?}"))
            .to_owned();
        assert_eq!(id.len(), 16, "{shown}");
        id
    }

    async fn run(&self, caller: &Caller, line: &str) -> CommandReply {
        self.bot.run(caller, line).await
    }

    /// Reads every page of `id` as Alice.
    async fn review(&self, id: &str) -> Vec<String> {
        let first = self.run(&alice(), &format!("ai proposal {id}")).await;
        let first = text(&first);
        let total: usize = first
            .split("page 1/")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("a page count");
        let mut pages = vec![first];
        for page in 2..=total {
            let reply = self
                .run(&alice(), &format!("ai proposal {id} {page}"))
                .await;
            assert!(reply.error.is_none(), "{reply:?}");
            pages.push(text(&reply));
        }
        pages
    }

    /// Alice approves `id`.
    async fn approve(&self, id: &str) -> CommandReply {
        self.run(&alice(), &format!("ai approve {id}")).await
    }

    /// Whether no writer tool was called.
    fn wrote_nothing(&self) -> bool {
        !self
            .github
            .called()
            .iter()
            .any(|c| WRITES.contains(&c.as_str()))
    }

    fn steps(&self) -> Vec<AuditStep> {
        self.audit
            .lock()
            .expect("audit")
            .iter()
            .map(|e| e.step)
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_is_reviewed_approved_and_opened_as_a_draft_pull_request() {
    let w = world(None).await;
    let base = w.github.tip(REPO, "main").expect("main");
    let id = w.propose().await;
    // Staging read the base and the file at that commit; nothing was written.
    assert_eq!(
        w.github.called(),
        [
            "get_file_contents",
            "get_commit",
            "get_file_contents",
            "get_file_contents"
        ]
    );
    let staged_reads = w.github.calls();
    assert_eq!(staged_reads[2].1["sha"], base.as_str());
    // Approval before reading every page is refused.
    let early = w.approve(&id).await;
    refused(&early, "read every page");
    let pages = w.review(&id).await;
    assert!(
        pages[0].contains("Repository: your-org/your-repo"),
        "{}",
        pages[0]
    );
    assert!(pages[0].contains(&format!("Base: main at {}", &base[..12])));
    assert!(pages[0].contains("Hash: sha256:"));
    assert!(pages[1].contains("were not built or tested locally"));
    // Every row is printable ASCII inside a code block: no platform formatting applies.
    assert!(pages[1].contains("```\n") && pages[1].ends_with("```"));
    let diff = pages[1..].join("\n");
    assert!(diff.contains(r#"- "(defn greet [] \"helo\")\n""#), "{diff}");
    assert!(
        diff.contains(r#"+ "(defn greet [] \"hello\")\n""#),
        "{diff}"
    );
    // Someone else, another thread, an edit: not theirs to approve.
    for (caller, expected) in [
        (person("U2", None, true), "no pending proposal"),
        (person("U1", Some("T9"), true), "no pending proposal"),
        (person("U1", None, false), "new message typed by you"),
    ] {
        let reply = w.run(&caller, &format!("ai approve {id}")).await;
        assert!(
            reply.error.as_deref().is_some_and(|e| e.contains(expected)),
            "{reply:?}"
        );
    }
    // Not through a pipe either.
    let piped = w.run(&alice(), &format!("echo x | ai approve {id}")).await;
    assert!(piped.error.is_some(), "{piped:?}");
    // Nor with an ID a sub-expression supplied.
    let made = w.run(&alice(), &format!("ai approve $(echo {id})")).await;
    assert!(
        made.error
            .as_deref()
            .is_some_and(|e| e.contains("typed by you")),
        "{made:?}"
    );
    assert!(w.github.pulls().is_empty());
    let approved = w.approve(&id).await;
    assert!(approved.error.is_none(), "{approved:?}");
    assert!(
        text(&approved)
            .contains("Opened draft pull request https://github.com/your-org/your-repo/pull/1"),
        "{approved:?}"
    );
    let pulls = w.github.pulls();
    assert_eq!(pulls.len(), 1);
    let pull = &pulls[0];
    assert!(pull.draft);
    assert_eq!(pull.base, "main");
    assert!(pull.head.starts_with("yetibot/ai-") && pull.head.len() == "yetibot/ai-".len() + 16);
    assert!(pull.body.contains("Corrects \"helo\"."));
    assert!(pull.body.contains("not built or tested locally"));
    // Exactly the approved bytes, on a commit whose one parent is the base.
    assert_eq!(
        w.github
            .file(REPO, &pull.head, "src/example.clj")
            .as_deref(),
        Some(AFTER.as_bytes())
    );
    let head = w.github.tip(REPO, &pull.head).expect("head");
    assert_eq!(w.github.parent(&head), Some(base.clone()));
    assert_eq!(w.github.tip(REPO, "main"), Some(base));
    let writes: Vec<String> = w.github.called().into_iter().skip(4).collect();
    assert_eq!(
        writes,
        [
            "get_commit",
            "create_branch",
            "push_files",
            "get_file_contents",
            "create_pull_request"
        ]
    );
    // The two ancestry reads, with the read token.
    let rest = w.github.rest_requests();
    assert_eq!(rest.len(), 2);
    assert!(
        rest.iter()
            .all(|(_, auth)| auth.as_deref() == Some(&format!("Bearer {READ_TOKEN}")[..]))
    );
    // Every step was audited, and no event carries contents or tokens.
    let steps = w.steps();
    for step in [
        AuditStep::Staged,
        AuditStep::Reviewed,
        AuditStep::Refused,
        AuditStep::Approved,
        AuditStep::Preflight,
        AuditStep::BranchCreated,
        AuditStep::Pushed,
        AuditStep::Verified,
        AuditStep::Opened,
    ] {
        assert!(steps.contains(&step), "{step:?} in {steps:?}");
    }
    let events = format!("{:?}", w.audit.lock().expect("audit"));
    for private in ["hello", "helo", READ_TOKEN, WRITE_TOKEN, "greet"] {
        assert!(!events.contains(private), "{private} in {events}");
    }
    // One shot.
    let again = w.approve(&id).await;
    refused(&again, "already opened");
    assert_eq!(w.github.pulls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_or_cancelled_proposal_is_never_executed() {
    let (w, id) = reviewed(None).await;
    w.minutes.store(10, Ordering::SeqCst);
    let late = w.approve(&id).await;
    refused(&late, "no pending proposal");
    assert!(w.wrote_nothing());
    // (The model fixture repeats its last answer, so the next proposal needs a new world.)
    let w = world(None).await;
    let id = w.propose().await;
    let other = w
        .run(&person("U2", None, true), &format!("ai cancel {id}"))
        .await;
    assert!(other.error.is_some(), "{other:?}");
    let cancelled = w.run(&alice(), &format!("ai cancel {id}")).await;
    assert!(
        text(&cancelled).contains("Cancelled proposal"),
        "{cancelled:?}"
    );
    w.review(&id).await;
    let approve = w.approve(&id).await;
    refused(&approve, "was cancelled");
    assert!(w.wrote_nothing());
    assert!(w.github.rest_requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staged_paths_and_credentials_outside_the_policy_are_refused_before_any_read() {
    for files in [
        json!([{"path": "README.md", "content": "# Changed\n"}]),
        json!([{"path": "src/credentials/keys.clj", "content": "(ns keys)\n"}]),
        json!([{"path": ".github/workflows/ci.yml", "content": "on: push\n"}]),
        json!([{"path": "src/example.clj", "content": format!("(def token \"{WRITE_TOKEN}\")\n")}]),
    ] {
        let w = world(None).await;
        let reply = w.stage(files.clone()).await;
        assert!(!text(&reply).contains("is staged"), "{files}: {reply:?}");
        let shown = format!("{reply:?}");
        assert!(shown.contains("yetibot/stage_changes: refused"), "{shown}");
        // Only the model's own read reached GitHub.
        assert_eq!(w.github.called(), ["get_file_contents"], "{files}");
        assert!(!w.steps().contains(&AuditStep::Staged));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_that_moved_stops_execution_before_or_at_the_branch() {
    // Moved after staging: the freshness check stops before any write.
    let (w, id) = reviewed(None).await;
    w.github
        .push(REPO, "main", "src/util.clj", "(ns util)\n;; changed\n");
    let reply = w.approve(&id).await;
    refused(&reply, "moved since the proposal was staged");
    assert!(w.wrote_nothing());
    // Moved while the branch was created: nothing is pushed.
    let (w, id) = reviewed(None).await;
    w.github.fault(Fault::MoveBaseOnCreateBranch);
    let reply = w.approve(&id).await;
    let error = reply.error.unwrap_or_default();
    assert!(
        error.contains("stopped at create branch") && error.contains("yetibot/ai-"),
        "{error}"
    );
    assert!(!w.github.called().contains(&"push_files".to_owned()));
    assert!(w.github.pulls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_parent_or_a_missing_commit_opens_no_pull_request() {
    let (w, id) = reviewed(None).await;
    w.github.fault(Fault::ForgedParent);
    let reply = w.approve(&id).await;
    let error = reply.error.unwrap_or_default();
    assert!(error.contains("parent is not the approved base"), "{error}");
    assert!(w.github.pulls().is_empty());
    assert!(
        !w.github
            .called()
            .contains(&"create_pull_request".to_owned())
    );

    let (w, id) = reviewed(None).await;
    w.github.fault(Fault::RestNotFound);
    let reply = w.approve(&id).await;
    let error = reply.error.unwrap_or_default();
    assert!(
        error.contains("stopped at preflight") && error.contains("404"),
        "{error}"
    );
    assert!(w.wrote_nothing());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_stops_answering_leaves_an_unknown_outcome_and_no_retry() {
    let (w, id) = reviewed(Some(1_000)).await;
    w.github.fault(Fault::PushNeverAnswers);
    let reply = w.approve(&id).await;
    let error = reply.error.unwrap_or_default();
    assert!(
        error.contains("unknown outcome") && error.contains("stopped at push"),
        "{error}"
    );
    assert!(error.contains("Inspect branch yetibot/ai-"), "{error}");
    let pushes = w
        .github
        .called()
        .iter()
        .filter(|c| *c == "push_files")
        .count();
    assert_eq!(pushes, 1);
    assert!(w.github.pulls().is_empty());
    assert!(w.steps().contains(&AuditStep::Unknown));
    let shown = w.run(&alice(), &format!("ai proposal {id}")).await;
    assert!(text(&shown).contains("unknown outcome"), "{shown:?}");
    let again = w.approve(&id).await;
    assert!(again.error.is_some(), "{again:?}");
    assert_eq!(
        w.github
            .called()
            .iter()
            .filter(|c| *c == "push_files")
            .count(),
        1
    );
}

/// The automatic example: a change request becomes a draft pull request, no review.
const AUTOMATIC: &str = "ai In your-org/your-repo, fix the typo in src/example.clj";

impl World {
    /// Clef answers every classification with this.
    fn clef(&self, choice: &str, change: f64, explicit: f64) {
        self.cloudflare.route(
            CLEF,
            provider_fixture::workers::clef_intent(choice, change, explicit),
        );
    }

    fn classified(&self) -> usize {
        self.cloudflare.count(CLEF)
    }

    fn model_requests(&self) -> usize {
        self.model.requests().len()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_change_request_becomes_one_draft_pull_request_however_often_it_is_delivered() {
    let w = routed(0.95).await;
    let base = w.github.tip(REPO, "main").expect("main");
    w.clef("code_change", 0.97, 0.96);
    w.script(json!([{"path": "src/example.clj", "content": AFTER}]));
    let reply = w.run(&alice(), AUTOMATIC).await;
    assert!(reply.error.is_none(), "{reply:?}");
    let shown = text(&reply);
    assert!(
        shown.contains("Opened draft pull request https://github.com/your-org/your-repo/pull/1"),
        "{shown}"
    );
    assert!(!shown.contains("ai approve"), "{shown}");
    let pulls = w.github.pulls();
    assert_eq!(pulls.len(), 1);
    let pull = &pulls[0];
    assert!(pull.draft);
    assert!(pull.head.starts_with("yetibot/ai-auto-"), "{}", pull.head);
    assert!(
        pull.body.contains("pushed without review in chat"),
        "{}",
        pull.body
    );
    assert!(pull.body.contains("not built or tested locally"));
    let head = w.github.tip(REPO, &pull.head).expect("head");
    assert_eq!(w.github.parent(&head), Some(base));
    assert_eq!(
        w.github
            .file(REPO, &pull.head, "src/example.clj")
            .as_deref(),
        Some(AFTER.as_bytes())
    );
    // Clef saw the request text and nothing else: no repository content, no credential.
    let sent: Vec<serde_json::Value> = w
        .cloudflare
        .requests()
        .iter()
        .filter(|r| r.path == CLEF)
        .filter_map(|r| serde_json::from_slice(&r.body).ok())
        .collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["state"], AUTOMATIC.trim_start_matches("ai "));
    let body = sent[0].to_string();
    for private in [BEFORE, READ_TOKEN, WRITE_TOKEN, CF_TOKEN] {
        assert!(!body.contains(private), "{private} in {body}");
    }
    // The same message delivered again: its receipt answers, nothing runs again.
    let model_requests = w.model_requests();
    let again = w.run(&alice(), AUTOMATIC).await;
    assert!(text(&again).contains("already handled"), "{again:?}");
    assert!(text(&again).contains("pull/1"), "{again:?}");
    assert_eq!(w.classified(), 1);
    assert_eq!(w.model_requests(), model_requests);
    assert_eq!(w.github.pulls().len(), 1);
    // After a restart (no receipts), the existing branch stops the run before any push.
    let restarted = world_with(Setup {
        routing: Some(0.95),
        github: Some(w.github.clone()),
        ..Setup::default()
    })
    .await;
    restarted.clef("code_change", 0.97, 0.96);
    restarted.script(json!([{"path": "src/example.clj", "content": AFTER}]));
    let pushes = w
        .github
        .called()
        .iter()
        .filter(|c| *c == "push_files")
        .count();
    let replayed = restarted.run(&alice(), AUTOMATIC).await;
    let shown = text(&replayed);
    assert!(shown.contains("stopped at create branch"), "{replayed:?}");
    assert_eq!(
        w.github
            .called()
            .iter()
            .filter(|c| *c == "push_files")
            .count(),
        pushes
    );
    assert_eq!(w.github.pulls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unclear_low_or_malformed_classifications_never_write() {
    // Below either threshold: a clarification, and no model or GitHub call.
    for (change, explicit) in [(0.94, 0.99), (0.99, 0.5)] {
        let w = routed(0.95).await;
        w.clef("code_change", change, explicit);
        let reply = w.run(&alice(), AUTOMATIC).await;
        assert!(text(&reply).contains("not clearly enough"), "{reply:?}");
        assert_eq!(w.model_requests(), 0);
        assert!(w.github.called().is_empty());
    }
    // "unclear": a clarification.
    let w = routed(0.9).await;
    w.clef("unclear", 0.5, 0.5);
    let reply = w.run(&alice(), AUTOMATIC).await;
    assert!(text(&reply).contains("Nothing was changed"), "{reply:?}");
    assert!(w.github.called().is_empty());
    // Malformed answers and an outage: a normal answer under the default toolset, with a
    // note, and no GitHub call at all.
    for broken in [
        Reply::json(
            json!({"result": {"answers": {"intent": {"choice": "code_change"}}}, "success": true})
                .to_string(),
        ),
        Reply::status_json(500, r#"{"success":false,"errors":[{"message":"down"}]}"#),
        Reply::json("not json".to_owned()),
    ] {
        let w = routed(0.95).await;
        w.cloudflare.route(CLEF, broken);
        w.model.route(
            "/v1/chat/completions",
            Reply::json(script::chat_completion("Here is how you would fix it.")),
        );
        let reply = w.run(&alice(), AUTOMATIC).await;
        assert!(reply.error.is_none(), "{reply:?}");
        assert!(
            reply.notes.iter().any(|n| n.contains("could not classify")),
            "{reply:?}"
        );
        assert!(w.github.called().is_empty());
        let sent = String::from_utf8_lossy(&w.model.requests()[0].body).into_owned();
        assert!(!sent.contains("stage_changes"), "{sent}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_normally_and_repositories_must_be_named_once() {
    let w = routed(0.95).await;
    w.clef("answer", 0.02, 0.03);
    w.model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("The parser reads tokens.")),
    );
    let reply = w.run(&alice(), "ai Explain how this parser works").await;
    assert_eq!(
        text(&reply).lines().next(),
        Some("The parser reads tokens.")
    );
    // The answer used the default (search) toolset: no staging tool was offered.
    let sent = String::from_utf8_lossy(&w.model.requests()[0].body).into_owned();
    assert!(!sent.contains("stage_changes"), "{sent}");
    assert!(w.github.called().is_empty());
    // A duplicate of the question reuses the decision.
    w.run(&alice(), "ai Explain how this parser works").await;
    assert_eq!(w.classified(), 1);

    for (line, expected) in [
        ("ai fix the typo in src/example.clj", "Which repository?"),
        (
            "ai In your-org/your-repo and your-org/docs, fix the typos",
            "more than one repository",
        ),
    ] {
        let w = world_with(Setup {
            routing: Some(0.95),
            more_repositories: vec!["your-org/docs"],
            ..Setup::default()
        })
        .await;
        w.clef("code_change", 0.99, 0.99);
        let reply = w.run(&alice(), line).await;
        assert!(text(&reply).contains(expected), "{line}: {reply:?}");
        assert_eq!(w.model_requests(), 0);
        assert!(w.github.called().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_routing_table_excludes_never_reaches_clef() {
    let w = routed(0.95).await;
    w.clef("code_change", 0.99, 0.99);
    w.model.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("answered")),
    );
    for (caller, line) in [
        // Bypasses: --no-tools, an explicit toolset, piped data, a pipeline.
        (
            alice(),
            "ai --no-tools In your-org/your-repo, fix the typo in src/example.clj",
        ),
        (
            alice(),
            "ai --toolset search In your-org/your-repo, fix the typo",
        ),
        (
            alice(),
            "echo x | ai In your-org/your-repo, fix the typo in src/example.clj",
        ),
        (
            alice(),
            "ai In your-org/your-repo, fix the typo in src/example.clj | echo",
        ),
        // Words a sub-expression made: typed, but not all the requester's own.
        (
            alice(),
            "ai $(echo In your-org/your-repo,) fix the typo in src/example.clj",
        ),
        // An edited message, a user the toolset does not name, no platform identity.
        (person("U1", None, false), AUTOMATIC),
        (person("U3", None, true), AUTOMATIC),
        (
            Caller {
                trusted: false,
                ..alice()
            },
            AUTOMATIC,
        ),
    ] {
        let reply = w.run(&caller, line).await;
        assert!(!text(&reply).contains("pull request"), "{line}: {reply:?}");
    }
    // An alias whose body is the automatic example.
    let defined = w
        .run(
            &alice(),
            "alias fixit = \"ai In your-org/your-repo, fix the typo in src/example.clj\"",
        )
        .await;
    assert!(defined.error.is_none(), "{defined:?}");
    let reply = w.run(&alice(), "fixit").await;
    assert!(!text(&reply).contains("pull request"), "{reply:?}");
    assert_eq!(w.classified(), 0);
    assert!(w.github.called().is_empty());
    // A request quoting a credential is refused outright.
    let leak = format!("ai In your-org/your-repo, set the token to {WRITE_TOKEN}");
    let reply = w.run(&alice(), &leak).await;
    refused(&reply, "quotes a configured credential");
    assert_eq!(w.classified(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_approvals_at_once_run_one_execution() {
    let (w, id) = reviewed(None).await;
    let line = format!("ai approve {id}");
    let (first, second) = (alice(), alice());
    let (a, b) = tokio::join!(w.run(&first, &line), w.run(&second, &line));
    let opened = [&a, &b]
        .iter()
        .filter(|r| text(r).contains("Opened draft pull request"))
        .count();
    assert_eq!(opened, 1, "{a:?} {b:?}");
    assert_eq!(w.github.pulls().len(), 1);
    assert_eq!(
        w.github
            .called()
            .iter()
            .filter(|c| *c == "create_branch")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_snapshot_finds_can_refuse_a_staging() {
    /// A staged path, what the repository holds there, and the refusal.
    type Case = (&'static str, fn(&FakeGithub), &'static str);
    let cases: [Case; 5] = [
        (
            "src/link.clj",
            |g| g.add_symlink(REPO, "src/link.clj", "/etc/passwd"),
            "only regular text files",
        ),
        (
            "src/blob.clj",
            |g| g.add_bytes(REPO, "src/blob.clj", b"\x00\x01binary"),
            "not a complete text file",
        ),
        (
            "src/big.clj",
            |g| g.push(REPO, "main", "src/big.clj", &"x".repeat(20_001)),
            "larger than 20,000 bytes",
        ),
        (
            "src/keys.clj",
            |g| {
                g.push(
                    REPO,
                    "main",
                    "src/keys.clj",
                    &format!("(def k \"{READ_TOKEN}\")\n"),
                )
            },
            "contains a configured credential",
        ),
        (
            "src/new/deep.clj",
            |_| {},
            "needs an existing parent directory",
        ),
    ];
    for (path, prepare, expected) in cases {
        let w = world(None).await;
        prepare(&w.github);
        let reply = w
            .stage(json!([{"path": path, "content": "(ns changed)\n"}]))
            .await;
        assert!(!text(&reply).contains("is staged"), "{path}: {reply:?}");
        let sent = w
            .model
            .requests()
            .iter()
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .collect::<String>();
        assert!(sent.contains(expected), "{path}: {expected} not in {sent}");
        assert!(!sent.contains(READ_TOKEN), "{path}");
        assert!(w.wrote_nothing());
        assert!(!w.steps().contains(&AuditStep::Staged), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_stopped_midway_is_recorded_as_an_unknown_outcome() {
    let (w, id) = reviewed(Some(120_000)).await;
    w.github.fault(Fault::PushNeverAnswers);
    // The conductor's deadline drops the request while the push hangs.
    let line = format!("ai approve {id}");
    let caller = alice();
    let stopped = tokio::time::timeout(Duration::from_secs(2), w.run(&caller, &line)).await;
    assert!(stopped.is_err(), "the approval should still be waiting");
    assert_eq!(
        w.github
            .called()
            .iter()
            .filter(|c| *c == "push_files")
            .count(),
        1
    );
    let shown = w.run(&alice(), &format!("ai proposal {id}")).await;
    assert!(text(&shown).contains("stopped while it ran"), "{shown:?}");
    assert!(w.steps().contains(&AuditStep::Unknown));
    let again = w.run(&alice(), &line).await;
    refused(&again, "unknown outcome");
    assert!(w.github.pulls().is_empty());
}
