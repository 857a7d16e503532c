//! The workflow on its own, with no command language or model: a staging is checked,
//! snapshotted through a fake GitHub MCP server on loopback, reviewed, approved and executed
//! into one draft pull request whose commit's only parent is the base; a second approval and
//! another person's are refused.

use std::sync::{Arc, Mutex};

use mcp_fixture::github::FakeGithub;
use serde_json::json;
use yetibot_ai_providers::{Client, ClientOptions};
use yetibot_conversation::AdapterKind;
use yetibot_mcp_host::{Host, HostOptions, ServerConfig, ServerSelection, ServerSet};
use yetibot_pull_requests::{
    Audit, AuditEvent, AuditStep, Consent, Executor, NewProposal, Proposal, Proposals, Reads,
    Requester, State, Verb, check, execute, reader, snapshot,
};
use yetibot_redaction::{Secret, Secrets};
use yetibot_tool_policy::{
    KnownNames, PolicyConfig, ProviderModelsConfig, ServerRefConfig, ToolPolicy, ToolsetConfig,
};

const REPO: &str = "your-org/your-repo";
const READ_TOKEN: &str = "read-token-canary-for-the-crate";

fn policy() -> ToolPolicy {
    let list = |tools: &[&str]| -> Vec<String> { tools.iter().map(|t| (*t).to_owned()).collect() };
    let reads = list(yetibot_tool_policy::GITHUB_READ_TOOLS);
    let writes = list(yetibot_tool_policy::GITHUB_WRITE_TOOLS);
    let toolsets = [ToolsetConfig {
        name: Some("github-pr".into()),
        kind: Some("github-pr".into()),
        users: Some(vec!["U1".into()]),
        adapters: Some(vec!["slack".into()]),
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
    }];
    ToolPolicy::from_config(
        &PolicyConfig {
            toolsets: &toolsets,
            default_toolset: None,
            max_tool_calls: None,
        },
        &KnownNames {
            servers: vec![
                ("github-read", Some(reads.as_slice())),
                ("github-write", Some(writes.as_slice())),
            ],
            providers: vec!["local"],
            with_github_api_token: vec!["github-read"],
            native_tools: &[],
        },
    )
    .expect("a valid policy")
}

fn host(mcp: &str) -> Host {
    let servers = ServerSet::from_config(
        &[
            ServerConfig {
                name: Some("github-read".into()),
                url: Some(mcp.to_owned()),
                github_api_token: Some(Secret::new(READ_TOKEN.to_owned())),
                ..ServerConfig::default()
            },
            ServerConfig {
                name: Some("github-write".into()),
                url: Some(mcp.to_owned()),
                ..ServerConfig::default()
            },
        ],
        None,
    )
    .expect("servers");
    Host::new(servers, HostOptions::new()).expect("host")
}

fn alice() -> Requester {
    Requester {
        adapter: AdapterKind::Slack,
        connection: "team".into(),
        room: "C1".into(),
        thread: None,
        user_id: "U1".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_change_becomes_one_draft_pull_request_on_top_of_its_base() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let github = FakeGithub::new().with_repo(REPO, &[("src/greet.clj", "(def g \"helo\")\n")]);
    let mcp = github.serve_mcp().await.expect("MCP");
    let rest = github.serve_rest().await.expect("REST");
    let policy = policy();
    let host = host(&mcp);
    let toolset = policy.get("github-pr").expect("toolset");
    let github_policy = toolset.github.as_ref().expect("GitHub policy");
    let secrets = Secrets::new([READ_TOKEN]).expect("secrets");

    // Stage: the static check, then the snapshot through the read connection.
    let staging = check(
        &json!({"owner": "your-org", "repo": "your-repo", "base": "main", "title": "Fix greeting",
                "files": [{"path": "src/greet.clj", "content": "(def g \"hello\")\n"}]})
        .to_string(),
        github_policy,
        &secrets,
    )
    .expect("a valid staging");
    let session = host
        .open_selection(&ServerSelection::new().server("github-read"))
        .await
        .expect("session");
    let server = reader(toolset, &session).expect("a snapshot server");
    let mut reads = Reads::new(&session, &server, "your-org", "your-repo");
    let (base, files) = snapshot(&mut reads, &staging, &secrets)
        .await
        .expect("snapshot");
    session.close().await;
    assert_eq!(Some(base.clone()), github.tip(REPO, "main"));
    let now = tokio::time::Instant::now();
    let proposal = Proposal::new(
        NewProposal {
            id: "00112233aabbccdd".into(),
            toolset: "github-pr".into(),
            reader: server,
            requester: alice(),
            provider: "local".into(),
            model: "m1".into(),
            created: now,
            automatic_branch: None,
        },
        staging,
        base.clone(),
        files,
    );
    // The summary, the body, the file.
    assert_eq!(proposal.pages.len(), 3);
    let proposals = Proposals::default();
    proposals.insert(proposal, now).expect("room");

    // Consent: only Alice, only after both pages, only once.
    let events = Mutex::new(Vec::<AuditEvent>::new());
    let audit = |event: &AuditEvent| events.lock().expect("events").push(event.clone());
    let bob = Requester {
        user_id: "U2".into(),
        ..alice()
    };
    let id = "00112233aabbccdd";
    assert!(matches!(
        proposals.consent(id, Verb::Approve, Some(&bob), true, now, &audit),
        Consent::Refused(_)
    ));
    assert!(matches!(
        proposals.consent(id, Verb::Approve, Some(&alice()), true, now, &audit),
        Consent::Refused(why) if why.contains("page(s) 1, 2, 3")
    ));
    for page in [1, 2, 3] {
        assert!(matches!(
            proposals.consent(id, Verb::Review(page), Some(&alice()), true, now, &audit),
            Consent::Page(_)
        ));
    }
    let Consent::Approved(approved) =
        proposals.consent(id, Verb::Approve, Some(&alice()), true, now, &audit)
    else {
        panic!("approved");
    };
    assert!(matches!(
        proposals.consent(id, Verb::Approve, Some(&alice()), true, now, &audit),
        Consent::Refused(why) if why.contains("is being executed")
    ));

    // Execute through the writer, with the two REST reads.
    let client = Client::new(ClientOptions::default()).expect("client");
    let sink = Arc::new(Mutex::new(Vec::<AuditStep>::new()));
    let steps = Arc::clone(&sink);
    let record: Audit = Arc::new(move |event: &AuditEvent| {
        steps.lock().expect("steps").push(event.step);
    });
    let executor = Executor {
        host: &host,
        client: &client,
        policy: &policy,
        github_api: &rest,
        audit: Some(&record),
    };
    let state = execute(&executor, &approved).await;
    let State::Opened(url) = &state else {
        panic!("{state:?}");
    };
    assert_eq!(url, "https://github.com/your-org/your-repo/pull/1");
    proposals.settle(id, state.clone(), now);
    let pull = &github.pulls()[0];
    assert!(pull.draft);
    let head = github.tip(REPO, &pull.head).expect("head");
    assert_eq!(github.parent(&head), Some(base));
    assert_eq!(
        github.file(REPO, &pull.head, "src/greet.clj").as_deref(),
        Some(b"(def g \"hello\")\n".as_slice())
    );
    assert_eq!(
        *sink.lock().expect("steps"),
        [
            AuditStep::Preflight,
            AuditStep::BranchCreated,
            AuditStep::Pushed,
            AuditStep::Verified,
            AuditStep::Opened
        ]
    );
    assert!(
        github
            .rest_requests()
            .iter()
            .all(|(_, auth)| auth.as_deref() == Some(&format!("Bearer {READ_TOKEN}")[..]))
    );
}
