//! The GitHub MCP tool names this host knows: the read operations GitHub toolsets may offer,
//! the writer's fixed subset, the tools host-side snapshots need, and the reserved names
//! that search toolsets never offer.

/// The GitHub read operations the host supports. A GitHub toolset offers the model these and
/// nothing else: no unknown operation and no raw mutation.
pub const GITHUB_READ_TOOLS: &[&str] = &[
    "get_file_contents",
    "get_commit",
    "list_branches",
    "issue_read",
    "pull_request_read",
    "search_code",
];

/// The read operations a `github-pr` toolset needs for host-side snapshots.
pub const GITHUB_SNAPSHOT_TOOLS: &[&str] = &["get_commit", "get_file_contents"];

/// The writer connection's fixed subset: the only tools the host calls on a `github-pr`
/// toolset's `:write-server`, and never offered to the model.
pub const GITHUB_WRITE_TOOLS: &[&str] = &["create_branch", "push_files", "create_pull_request"];

/// Further well-known GitHub MCP mutations, reserved like the names above.
const OTHER_GITHUB_MUTATIONS: &[&str] = &[
    "create_or_update_file",
    "delete_file",
    "merge_pull_request",
    "update_pull_request",
    "update_pull_request_branch",
    "create_repository",
    "fork_repository",
];

/// Whether `name` is a reserved GitHub tool name: a supported read operation, a writer tool
/// or another well-known GitHub mutation. Search toolsets (and the legacy flat scope) never
/// offer a tool of that name, whichever server lists it.
#[must_use]
pub fn is_reserved_github_tool(name: &str) -> bool {
    [
        GITHUB_READ_TOOLS,
        GITHUB_WRITE_TOOLS,
        OTHER_GITHUB_MUTATIONS,
    ]
    .iter()
    .any(|names| names.contains(&name))
}
