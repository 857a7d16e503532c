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
use yetibot_ai_commands::{AiServices, AuditEvent, AuditStep};
use yetibot_ai_providers::{Client, ClientOptions, ProviderConfig, ProviderSet};
use yetibot_command::{
    Caller, Interpreter, Platform, PlatformError, Reply as CommandReply, Settings, ThreadError,
    ThreadMessage, ThreadSource, builtins,
};
use yetibot_conversation::AdapterKind;
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerConfig, ServerSet};
use yetibot_redaction::{Secret, Secrets};
use yetibot_tool_policy::{
    KnownNames, PolicyConfig, ProviderModelsConfig, ServerRefConfig, ToolPolicy, ToolsetConfig,
};

const REPO: &str = "your-org/your-repo";
const READ_TOKEN: &str = "github-read-token-canary-0001";
const WRITE_TOKEN: &str = "github-write-token-canary-0002";
const BEFORE: &str = "(ns example)\n\n(defn greet [] \"helo\")\n";
const AFTER: &str = "(ns example)\n\n(defn greet [] \"hello\")\n";
const READS: [&str; 6] = [
    "get_file_contents",
    "get_commit",
    "list_branches",
    "issue_read",
    "pull_request_read",
    "search_code",
];
const WRITES: [&str; 3] = ["create_branch", "push_files", "create_pull_request"];

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

fn person(user: &str, thread: Option<&'static str>, original: bool) -> Caller {
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

fn alice() -> Caller {
    person("U1", None, true)
}

/// The world of one test: the fake GitHub, the model, the bot, its clock and audit log.
struct World {
    github: FakeGithub,
    model: Fixture,
    bot: Interpreter,
    minutes: Arc<AtomicU64>,
    audit: Arc<Mutex<Vec<AuditEvent>>>,
}

async fn world(timeout_ms: Option<i64>) -> World {
    // The MCP host's HTTP transport takes the process's TLS provider, as the binary installs.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let github = FakeGithub::new().with_repo(
        REPO,
        &[
            ("src/example.clj", BEFORE),
            ("src/util.clj", "(ns util)\n"),
            ("README.md", "# Example\n"),
        ],
    );
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
    let toolsets = [ToolsetConfig {
        name: Some("github-pr".into()),
        kind: Some("github-pr".into()),
        users: Some(vec!["U1".into(), "U2".into()]),
        adapters: Some(vec!["slack".into()]),
        repositories: Some(vec![REPO.into()]),
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
    }];
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
    let policy = ToolPolicy::from_config(
        &PolicyConfig {
            toolsets: &toolsets,
            default_toolset: None,
            max_tool_calls: None,
        },
        &known,
    )
    .expect("a valid policy");
    let providers = ProviderSet::from_config(
        None,
        &[ProviderConfig {
            name: Some("local".into()),
            url: Some(model.url("/v1")),
            model: Some("m1".into()),
            ..ProviderConfig::default()
        }],
    )
    .expect("providers");
    let secrets = Secrets::new([READ_TOKEN, WRITE_TOKEN]).expect("secrets");
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
    .with_audit(Arc::new(move |event: &AuditEvent| {
        log.lock().expect("audit").push(event.clone());
    }));
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
        bot,
        minutes,
        audit,
    }
}

fn calls(id: &str, name: &str, arguments: &serde_json::Value) -> String {
    json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function",
                 "function": {"name": name, "arguments": arguments.to_string()}}
            ]},
            "finish_reason": "tool_calls",
        }],
    })
    .to_string()
}

fn staging(files: serde_json::Value) -> serde_json::Value {
    json!({"owner": "your-org", "repo": "your-repo", "base": "main",
           "title": "Fix the greeting's typo", "body": "Corrects \"helo\".", "files": files})
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
            Reply::json(calls(
                "c1",
                "github-read__get_file_contents",
                &json!({"owner": "your-org", "repo": "your-repo", "path": "src/example.clj"}),
            )),
        );
        self.model.route(
            "/v1/chat/completions",
            Reply::json(calls("c2", "yetibot__stage_changes", &staging(files))),
        );
        self.model.route(
            "/v1/chat/completions",
            Reply::json(script::chat_completion("I staged the fix.")),
        );
    }

    /// Asks for the fix and returns the staged proposal's ID.
    async fn propose(&self) -> String {
        self.script(json!([{"path": "src/example.clj", "content": AFTER}]));
        let reply = self
            .bot
            .run(
                &alice(),
                "ai --toolset github-pr In your-org/your-repo, fix the typo in src/example.clj and propose a draft PR.",
            )
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
    let early = w.run(&alice(), &format!("ai approve {id}")).await;
    assert!(
        early
            .error
            .as_deref()
            .is_some_and(|e| e.contains("read every page")),
        "{early:?}"
    );
    let pages = w.review(&id).await;
    assert!(
        pages[0].contains("Repository: your-org/your-repo"),
        "{}",
        pages[0]
    );
    assert!(pages[0].contains(&format!("Base: main at {}", &base[..12])));
    assert!(pages[0].contains("Hash: sha256:"));
    assert!(pages[0].contains("were not built or tested locally"));
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
    assert!(w.github.pulls().is_empty());
    let approved = w.run(&alice(), &format!("ai approve {id}")).await;
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
    let again = w.run(&alice(), &format!("ai approve {id}")).await;
    assert!(
        again
            .error
            .as_deref()
            .is_some_and(|e| e.contains("already opened")),
        "{again:?}"
    );
    assert_eq!(w.github.pulls().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_or_cancelled_proposal_is_never_executed() {
    let w = world(None).await;
    let id = w.propose().await;
    w.review(&id).await;
    w.minutes.store(10, Ordering::SeqCst);
    let late = w.run(&alice(), &format!("ai approve {id}")).await;
    assert!(
        late.error
            .as_deref()
            .is_some_and(|e| e.contains("no pending proposal")),
        "{late:?}"
    );
    assert!(
        !w.github
            .called()
            .iter()
            .any(|c| WRITES.contains(&c.as_str()))
    );
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
    let approve = w.run(&alice(), &format!("ai approve {id}")).await;
    assert!(
        approve
            .error
            .as_deref()
            .is_some_and(|e| e.contains("was cancelled")),
        "{approve:?}"
    );
    assert!(
        !w.github
            .called()
            .iter()
            .any(|c| WRITES.contains(&c.as_str()))
    );
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
        w.script(files.clone());
        let reply = w
            .run(
                &alice(),
                "ai --toolset github-pr fix src/example.clj in your-org/your-repo",
            )
            .await;
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
    let w = world(None).await;
    let id = w.propose().await;
    w.review(&id).await;
    w.github
        .push(REPO, "main", "src/util.clj", "(ns util)\n;; changed\n");
    let reply = w.run(&alice(), &format!("ai approve {id}")).await;
    assert!(
        reply
            .error
            .as_deref()
            .is_some_and(|e| e.contains("moved since the proposal was staged")),
        "{reply:?}"
    );
    assert!(
        !w.github
            .called()
            .iter()
            .any(|c| WRITES.contains(&c.as_str()))
    );
    // Moved while the branch was created: nothing is pushed.
    let w = world(None).await;
    let id = w.propose().await;
    w.review(&id).await;
    w.github.fault(Fault::MoveBaseOnCreateBranch);
    let reply = w.run(&alice(), &format!("ai approve {id}")).await;
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
    let w = world(None).await;
    let id = w.propose().await;
    w.review(&id).await;
    w.github.fault(Fault::ForgedParent);
    let reply = w.run(&alice(), &format!("ai approve {id}")).await;
    let error = reply.error.unwrap_or_default();
    assert!(error.contains("parent is not the approved base"), "{error}");
    assert!(w.github.pulls().is_empty());
    assert!(
        !w.github
            .called()
            .contains(&"create_pull_request".to_owned())
    );

    let w = world(None).await;
    let id = w.propose().await;
    w.review(&id).await;
    w.github.fault(Fault::RestNotFound);
    let reply = w.run(&alice(), &format!("ai approve {id}")).await;
    let error = reply.error.unwrap_or_default();
    assert!(
        error.contains("stopped at preflight") && error.contains("404"),
        "{error}"
    );
    assert!(
        !w.github
            .called()
            .iter()
            .any(|c| WRITES.contains(&c.as_str()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_stops_answering_leaves_an_unknown_outcome_and_no_retry() {
    let w = world(Some(1_000)).await;
    let id = w.propose().await;
    w.review(&id).await;
    w.github.fault(Fault::PushNeverAnswers);
    let reply = w.run(&alice(), &format!("ai approve {id}")).await;
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
    let again = w.run(&alice(), &format!("ai approve {id}")).await;
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
