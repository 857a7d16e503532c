//! The kind rules across toolsets and servers: what search and GitHub toolsets may
//! reference, what a github-pr toolset needs, and how discovery is narrowed by kind.

use yetibot_tool_policy::{
    KnownNames, PolicyConfig, ProviderModelsConfig, Selection, ServerRefConfig, ToolPolicy,
    ToolsetConfig, filter_listed,
};

fn strings(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| (*s).to_owned()).collect())
}

const READ_TOOLS: &[&str] = &[
    "get_file_contents",
    "get_commit",
    "list_branches",
    "issue_read",
    "pull_request_read",
    "search_code",
];
const WRITE_TOOLS: &[&str] = &["create_branch", "push_files", "create_pull_request"];

/// A reference by name, optionally narrowed.
fn to(name: &str, tools: Option<&[&str]>) -> ServerRefConfig {
    ServerRefConfig {
        name: Some(name.into()),
        tools: tools.and_then(strings),
    }
}

fn search(name: &str, servers: Vec<ServerRefConfig>) -> ToolsetConfig {
    ToolsetConfig {
        name: Some(name.into()),
        kind: Some("search".into()),
        servers: Some(servers),
        ..ToolsetConfig::default()
    }
}

fn github_read(name: &str, servers: Vec<ServerRefConfig>) -> ToolsetConfig {
    ToolsetConfig {
        name: Some(name.into()),
        kind: Some("github-read".into()),
        servers: Some(servers),
        users: strings(&["U1"]),
        adapters: strings(&["slack"]),
        repositories: strings(&["o/r"]),
        ..ToolsetConfig::default()
    }
}

fn github_pr(name: &str, servers: Vec<ServerRefConfig>, writer: &str) -> ToolsetConfig {
    ToolsetConfig {
        kind: Some("github-pr".into()),
        providers: Some(vec![ProviderModelsConfig {
            name: Some("local".into()),
            models: strings(&["m"]),
        }]),
        base_branches: strings(&["main"]),
        allowed_paths: strings(&["src/"]),
        branch_prefix: Some("yetibot/ai-".into()),
        write_server: Some(writer.into()),
        ..github_read(name, servers)
    }
}

/// The servers of the specification's recipe plus a plain one: `web` (a search tool),
/// `github-read` (the six read tools, with a token), `github-write` (the three write
/// tools), `open` (no allowlist) and `tokened` (no allowlist, with a token).
fn servers() -> Vec<(&'static str, Option<Vec<String>>)> {
    vec![
        ("web", strings(&["web_search_exa"])),
        ("github-read", strings(READ_TOOLS)),
        ("github-write", strings(WRITE_TOOLS)),
        ("open", None),
        ("tokened", None),
    ]
}

const TOKENS: &[&str] = &["github-read", "tokened"];

/// Validates `toolsets` against [`servers`], with or without the token facts, and returns
/// the problems as `path: reason` lines.
fn problems_with(toolsets: &[ToolsetConfig], tokens: &[&'static str]) -> Vec<String> {
    let servers = servers();
    let known = KnownNames {
        servers: servers
            .iter()
            .map(|(name, tools)| (*name, tools.as_deref()))
            .collect(),
        providers: vec!["local"],
        with_github_api_token: tokens.to_vec(),
        native_tools: &[],
    };
    let config = PolicyConfig {
        toolsets,
        default_toolset: None,
        max_tool_calls: None,
    };
    match ToolPolicy::from_config(&config, &known) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.iter().map(ToString::to_string).collect(),
    }
}

fn check(toolsets: &[ToolsetConfig], expect: &[&str]) {
    assert_eq!(problems_with(toolsets, TOKENS), expect);
}

/// The specification's three toolsets.
fn recipe() -> Vec<ToolsetConfig> {
    vec![
        search("search", vec![to("web", None)]),
        github_read("github-read", vec![to("github-read", None)]),
        github_pr("github-pr", vec![to("github-read", None)], "github-write"),
    ]
}

#[test]
fn the_specification_recipe_is_valid() {
    check(&recipe(), &[]);
}

#[test]
fn a_search_toolset_cannot_reference_a_github_or_writer_connection() {
    // A search toolset serves anyone allowed to run ai, so a GitHub connection there would
    // bypass the GitHub toolsets' identity and repository rules, and a writer would hand
    // raw mutations to the model. Each way of being such a connection is refused.
    let mut toolsets = recipe();
    toolsets[0] = search(
        "search",
        vec![
            to("web", None),
            to("github-write", None),
            to("github-read", Some(&["search_code"])),
        ],
    );
    check(
        &toolsets,
        &[
            r#"toolsets[0].servers[1].name: search toolset "search" must not reference server "github-write": it is the :write-server of github-pr toolset "github-pr", and a writer connection is used only by the host, never offered to the model"#,
            r#"toolsets[0].servers[2].name: search toolset "search" must not reference server "github-read": it is a GitHub connection (github-read toolset "github-read" references it); reference it from a github-read or github-pr toolset, whose identity and repository rules apply"#,
        ],
    );
    // Without any GitHub toolset, the server's own configuration gives it away.
    check(
        &[search("search", vec![to("github-read", None)])],
        &[
            r#"toolsets[0].servers[0].name: search toolset "search" must not reference server "github-read": it is a GitHub connection (it has a :github-api-token); reference it from a github-read or github-pr toolset, whose identity and repository rules apply"#,
        ],
    );
    check(
        &[search("search", vec![to("github-write", None)])],
        &[
            r#"toolsets[0].servers[0].name: search toolset "search" must not reference server "github-write": it is a GitHub connection (its :tools lists the GitHub tool "create_branch"); reference it from a github-read or github-pr toolset, whose identity and repository rules apply"#,
        ],
    );
    check(
        &[search("search", vec![to("tokened", None)])],
        &[
            r#"toolsets[0].servers[0].name: search toolset "search" must not reference server "tokened": it is a GitHub connection (it has a :github-api-token); reference it from a github-read or github-pr toolset, whose identity and repository rules apply"#,
        ],
    );
    // A reference cannot pick GitHub tools out of an open catalog either.
    check(
        &[search(
            "search",
            vec![to("open", Some(&["lookup", "push_files"]))],
        )],
        &[
            r#"toolsets[0].servers[0].tools[1]: search toolset "search" must not offer the GitHub tool "push_files"; use a github-read or github-pr toolset"#,
        ],
    );
    // Ordinary servers stay fine.
    check(
        &[search("search", vec![to("web", None), to("open", None)])],
        &[],
    );
}

#[test]
fn a_writer_connection_is_never_offered_to_the_model() {
    let mut toolsets = recipe();
    toolsets[1] = github_read(
        "github-read",
        vec![to("github-read", None), to("github-write", None)],
    );
    toolsets[2] = github_pr(
        "github-pr",
        vec![to("github-read", None), to("github-write", None)],
        "github-write",
    );
    check(
        &toolsets,
        &[
            r#"toolsets[1].servers[1].name: github-read toolset "github-read" must not reference server "github-write": it is the :write-server of github-pr toolset "github-pr", and a writer connection is used only by the host, never offered to the model"#,
            r#"toolsets[2].servers[1].name: github-pr toolset "github-pr" must not reference server "github-write": it is its own :write-server, and a writer connection is used only by the host, never offered to the model"#,
        ],
    );
}

#[test]
fn github_toolsets_offer_only_the_supported_read_operations() {
    check(
        &[github_read(
            "gh",
            vec![to("open", Some(&["get_commit", "delete_file"]))],
        )],
        &[
            r#"toolsets[0].servers[0].tools[1]: github-read toolset "gh" offers only the supported GitHub read operations (get_file_contents, get_commit, list_branches, issue_read, pull_request_read, search_code), and "delete_file" is not one"#,
        ],
    );
    check(
        &[github_read("gh", vec![to("web", None)])],
        &[
            r#"toolsets[0].servers[0].name: server "web" offers "web_search_exa", but github-read toolset "gh" offers only the supported GitHub read operations (get_file_contents, get_commit, list_branches, issue_read, pull_request_read, search_code); give the reference a :tools list of those"#,
        ],
    );
    // Live discovery is allowed; what it finds is narrowed at request time.
    check(&[github_read("gh", vec![to("tokened", None)])], &[]);
}

#[test]
fn a_github_pr_toolset_needs_snapshots_a_token_a_writer_and_its_fields() {
    // Snapshot tools: the servers' allowlists must offer get_commit and get_file_contents.
    let narrow = github_pr(
        "pr",
        vec![to("github-read", Some(&["get_file_contents"]))],
        "github-write",
    );
    check(
        &[narrow],
        &[
            r#"toolsets[0].servers: github-pr toolset "pr" needs get_commit and get_file_contents for host-side snapshots, and none of its servers offers get_commit"#,
        ],
    );
    let none = github_pr("pr", vec![], "github-write");
    check(
        &[none],
        &[
            r#"toolsets[0].servers: github-pr toolset "pr" needs get_commit and get_file_contents for host-side snapshots, and none of its servers offers get_commit or get_file_contents"#,
        ],
    );
    // The get_commit server needs its own token; a discovering server may be that server.
    let mut servers = vec![to("open", None)];
    check(
        &[github_pr("pr", servers.clone(), "github-write")],
        &[
            r#"toolsets[0].servers[0].name: server "open" may answer get_commit for github-pr toolset "pr", so it needs its own :github-api-token for the host's ancestry reads (it is never taken from :headers or :env)"#,
        ],
    );
    servers.insert(0, to("github-read", None));
    check(&[github_pr("pr", servers, "github-write")], &[]);
    check(
        &[github_pr("pr", vec![to("tokened", None)], "github-write")],
        &[],
    );
    // The writer must offer the fixed write subset.
    check(
        &[github_pr("pr", vec![to("github-read", None)], "web")],
        &[
            r#"toolsets[0].write-server: server "web" must offer create_branch, push_files, create_pull_request for github-pr toolset "pr", but its :tools lacks create_branch, push_files, create_pull_request"#,
        ],
    );
    check(
        &[github_pr("pr", vec![to("github-read", None)], "open")],
        &[],
    );
    // Required fields.
    let bare = ToolsetConfig {
        name: Some("pr".into()),
        kind: Some("github-pr".into()),
        servers: Some(vec![to("github-read", None)]),
        ..ToolsetConfig::default()
    };
    check(
        &[bare],
        &[
            "toolsets[0].users: is required on GitHub toolsets (platform user IDs)",
            "toolsets[0].adapters: is required on GitHub toolsets",
            "toolsets[0].repositories: must list at least one owner/repo",
            "toolsets[0].providers: is required on github-pr toolsets (exact providers and models)",
            "toolsets[0].base-branches: must list at least one branch",
            "toolsets[0].allowed-paths: must list at least one path prefix that pull requests may change",
            "toolsets[0].write-server: is required on github-pr toolsets",
        ],
    );
}

#[test]
fn flat_configuration_refuses_github_connections() {
    // With no toolsets every server is offered to everyone who can run ai.
    assert_eq!(
        problems_with(&[], TOKENS),
        [
            r#"toolsets: none are configured, so every server is offered to everyone who can run ai, but server "github-read" is a GitHub connection (it has a :github-api-token); add a github-read or github-pr toolset that references it"#,
            r#"toolsets: none are configured, so every server is offered to everyone who can run ai, but server "github-write" is a GitHub connection (its :tools lists the GitHub tool "create_branch"); add a github-read or github-pr toolset that references it"#,
            r#"toolsets: none are configured, so every server is offered to everyone who can run ai, but server "tokened" is a GitHub connection (it has a :github-api-token); add a github-read or github-pr toolset that references it"#,
        ]
    );
}

#[test]
fn problems_never_carry_a_value_beyond_names() {
    // Names of toolsets, servers and tools identify; nothing else from the configuration
    // (repositories, paths, branch prefixes, user IDs) appears in a reason.
    let mut toolsets = recipe();
    toolsets[0] = search("search", vec![to("github-write", None)]);
    toolsets[2].servers = Some(vec![to("open", None)]);
    for problem in problems_with(&toolsets, TOKENS) {
        for value in ["o/r", "src/", "yetibot/ai-", "U1", "main"] {
            assert!(!problem.contains(value), "{value} in {problem}");
        }
    }
}

#[test]
fn discovery_is_narrowed_by_the_toolset_kind() {
    let servers = servers();
    let known = KnownNames {
        servers: servers
            .iter()
            .map(|(name, tools)| (*name, tools.as_deref()))
            .collect(),
        providers: vec!["local"],
        with_github_api_token: TOKENS.to_vec(),
        native_tools: &[],
    };
    let config = PolicyConfig {
        toolsets: &[
            search("search", vec![to("open", None)]),
            github_read("gh", vec![to("tokened", None)]),
        ],
        default_toolset: None,
        max_tool_calls: None,
    };
    let policy = ToolPolicy::from_config(&config, &known).expect("valid policy");
    let listed: Vec<String> = [
        "lookup",
        "get_commit",
        "push_files",
        "actions_run",
        "issue_read",
    ]
    .map(String::from)
    .to_vec();
    let configured: Vec<(&str, Option<&[String]>)> = known.servers.clone();

    // Search never offers a reserved GitHub name, whichever server lists it.
    let search = Selection::choose(&policy, Some("search")).expect("search");
    let open = &search.servers(&configured)[0];
    assert_eq!(
        filter_listed(open, &listed).expect("filtered"),
        ["lookup", "actions_run"]
    );
    // GitHub toolsets offer only the supported read operations.
    let gh = Selection::choose(&policy, Some("gh")).expect("gh");
    let tokened = &gh.servers(&configured)[0];
    assert_eq!(
        filter_listed(tokened, &listed).expect("filtered"),
        ["get_commit", "issue_read"]
    );
    // The legacy scope follows the search rules.
    let flat = ToolPolicy::default();
    let legacy = Selection::choose(&flat, None)
        .expect("legacy")
        .servers(&[("open", None)]);
    assert_eq!(
        filter_listed(&legacy[0], &listed).expect("filtered"),
        ["lookup", "actions_run"]
    );
}
