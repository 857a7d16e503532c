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

/// Why a GitHub read call was refused by its toolset's `:repositories`. The texts are fixed
/// and name no repository, so a refusal tells the model nothing it did not already send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryRefusal {
    /// The call names no `owner` and `repo` (strings), or only one of them.
    #[error("this GitHub read needs both owner and repo")]
    MissingRepository,
    /// The call names a repository outside the toolset's list.
    #[error("this repository is not one this toolset may read")]
    OutsideList,
    /// A search query carries an `org:` or `user:` qualifier, or a `repo:` one outside the
    /// list: the host adds the repository qualifiers itself.
    #[error(
        "search takes plain terms; the host adds the repositories (no org:, user: or other repo: qualifiers)"
    )]
    Qualifier,
    /// A search call has no `query` string.
    #[error("this search needs a query")]
    MissingQuery,
}

/// Whether `owner/repo` is on `repositories` (GitHub names compare without case): the one
/// repository rule of reads, proposals and their execution.
#[must_use]
pub fn is_listed_repository(repositories: &[String], owner: &str, repo: &str) -> bool {
    repositories.iter().any(|listed| {
        listed
            .split_once('/')
            .is_some_and(|(o, r)| o.eq_ignore_ascii_case(owner) && r.eq_ignore_ascii_case(repo))
    })
}

/// Checks one call of a GitHub read tool (`tool`, one of [`GITHUB_READ_TOOLS`]) against a
/// toolset's `repositories`, and returns the arguments to send.
///
/// - A structured read (`get_file_contents`, `get_commit`, `list_branches`, `issue_read`,
///   `pull_request_read`) must name `owner` and `repo` on the list; it is sent unchanged.
/// - `search_code` may not widen itself: an `org:` or `user:` qualifier, or a `repo:` one
///   off the list (negated or not, quoted or not), is refused; the host then appends a
///   `repo:` qualifier for every listed repository, so the search never leaves them.
///
/// Another tool name is not a GitHub read and passes unchanged.
///
/// # Errors
///
/// The [`RepositoryRefusal`] that applies; nothing is sent then.
pub fn guard_github_read(
    tool: &str,
    arguments: &serde_json::Map<String, serde_json::Value>,
    repositories: &[String],
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, RepositoryRefusal> {
    if !GITHUB_READ_TOOLS.contains(&tool) {
        return Ok(None);
    }
    if tool != "search_code" {
        let text = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str);
        let (Some(owner), Some(repo)) = (text("owner"), text("repo")) else {
            return Err(RepositoryRefusal::MissingRepository);
        };
        return if is_listed_repository(repositories, owner, repo) {
            Ok(None)
        } else {
            Err(RepositoryRefusal::OutsideList)
        };
    }
    let Some(query) = arguments.get("query").and_then(serde_json::Value::as_str) else {
        return Err(RepositoryRefusal::MissingQuery);
    };
    for token in query.split_whitespace() {
        // Quotes and a leading `-` (exclusion) do not hide a qualifier from this check.
        let token = token
            .trim_start_matches(['"', '(', '-'])
            .trim_end_matches(['"', ')']);
        let Some((name, value)) = token.split_once(':') else {
            continue;
        };
        match name.to_ascii_lowercase().as_str() {
            "org" | "user" => return Err(RepositoryRefusal::Qualifier),
            "repo" => {
                let inside = value
                    .split_once('/')
                    .is_some_and(|(owner, repo)| is_listed_repository(repositories, owner, repo));
                if !inside {
                    return Err(RepositoryRefusal::Qualifier);
                }
            }
            _ => {}
        }
    }
    let mut scoped = query.trim().to_owned();
    for repository in repositories {
        scoped.push_str(" repo:");
        scoped.push_str(repository);
    }
    let mut sent = arguments.clone();
    sent.insert("query".to_owned(), serde_json::Value::String(scoped));
    Ok(Some(sent))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    fn list() -> Vec<String> {
        vec!["your-org/your-repo".to_owned(), "your-org/docs".to_owned()]
    }

    #[test]
    fn structured_reads_stay_on_the_list() {
        let ok = args(json!({"owner": "Your-Org", "repo": "your-repo", "path": "README.md"}));
        assert_eq!(
            guard_github_read("get_file_contents", &ok, &list()),
            Ok(None)
        );
        let other = args(json!({"owner": "your-org", "repo": "secrets"}));
        assert_eq!(
            guard_github_read("get_commit", &other, &list()),
            Err(RepositoryRefusal::OutsideList)
        );
        let half = args(json!({"owner": "your-org"}));
        assert_eq!(
            guard_github_read("list_branches", &half, &list()),
            Err(RepositoryRefusal::MissingRepository)
        );
        let not_text = args(json!({"owner": "your-org", "repo": ["your-repo"]}));
        assert_eq!(
            guard_github_read("issue_read", &not_text, &list()),
            Err(RepositoryRefusal::MissingRepository)
        );
        // Not a GitHub read: not this guard's business.
        assert_eq!(guard_github_read("web_search", &other, &list()), Ok(None));
    }

    #[test]
    fn searches_are_scoped_to_the_list_and_cannot_widen_themselves() {
        let plain = args(json!({"query": "fn main", "perPage": 5}));
        let sent = guard_github_read("search_code", &plain, &list())
            .expect("allowed")
            .expect("rewritten");
        assert_eq!(
            sent["query"],
            "fn main repo:your-org/your-repo repo:your-org/docs"
        );
        assert_eq!(sent["perPage"], 5);
        for query in [
            "token org:your-org",
            "token user:someone",
            "token repo:other/secret",
            "token -repo:other/secret",
            "token \"repo:other/secret\"",
            "token REPO:other/secret",
            "token (repo:other/secret)",
        ] {
            let refused = guard_github_read("search_code", &args(json!({"query": query})), &list());
            assert_eq!(refused, Err(RepositoryRefusal::Qualifier), "{query}");
        }
        let inside = args(json!({"query": "fn main repo:your-org/docs"}));
        assert!(guard_github_read("search_code", &inside, &list()).is_ok());
        assert_eq!(
            guard_github_read("search_code", &args(json!({"q": "x"})), &list()),
            Err(RepositoryRefusal::MissingQuery)
        );
    }

    proptest! {
        /// Whatever the query, a search that is sent names only listed repositories.
        #[test]
        fn a_sent_search_names_only_listed_repositories(query in "[a-z:/ \"()-]{0,40}") {
            let sent = guard_github_read("search_code", &args(json!({"query": query})), &list());
            if let Ok(Some(sent)) = sent {
                let text = sent["query"].as_str().unwrap_or_default().to_owned();
                for token in text.split_whitespace() {
                    let token = token.trim_start_matches(['"', '(', '-']).trim_end_matches(['"', ')']);
                    if let Some((name, value)) = token.split_once(':') {
                        let name = name.to_ascii_lowercase();
                        prop_assert!(name != "org" && name != "user", "{}", text);
                        if name == "repo" {
                            prop_assert!(list().iter().any(|l| l.eq_ignore_ascii_case(value)), "{}", text);
                        }
                    }
                }
                prop_assert!(text.ends_with("repo:your-org/docs"));
            }
        }
    }
}
