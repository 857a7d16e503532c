//! Toolset and budget configuration as operators write it, and its validation into
//! [`ToolPolicy`].

use std::collections::HashSet;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::error::Error;

/// Budget used when neither the configuration nor the request picks one.
pub const FALLBACK_TOOL_CALLS: u8 = 6;
/// The host's ceiling for any budget, configured or requested.
pub const MAX_TOOL_CALLS: u8 = 20;
/// Names of the bot's own (native) tools that a toolset may list in `:native-tools`.
pub const NATIVE_TOOL_NAMES: &[&str] = &[
    "help",
    "history",
    "history_count",
    "release_info",
    "meme",
    "gi",
    "clef",
    "clairic",
    "ai",
    "cf",
    "wise",
    "util",
    "react",
];

/// The `:mcp` entries this crate owns: `:toolsets`, `:default-toolset`, `:max-tool-calls`.
#[derive(Debug, Clone, Default)]
pub struct PolicyConfig<'a> {
    /// `:toolsets`.
    pub toolsets: &'a [ToolsetConfig],
    /// `:default-toolset`.
    pub default_toolset: Option<&'a str>,
    /// `:max-tool-calls`.
    pub max_tool_calls: Option<i64>,
}

/// Names defined elsewhere in the configuration that toolsets may refer to.
#[derive(Debug, Clone, Default)]
pub struct KnownNames<'a> {
    /// Configured MCP servers and their explicit `:tools` allowlists (`None` = whole catalog).
    pub servers: Vec<(&'a str, Option<&'a [String]>)>,
    /// Configured AI provider names.
    pub providers: Vec<&'a str>,
}

/// One entry of `:yetibot :ai :mcp :toolsets`, exactly as configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ToolsetConfig {
    /// Unique toolset name, selected with `--toolset NAME`.
    pub name: Option<String>,
    /// `search`, `github-read` or `github-pr`.
    pub kind: Option<String>,
    /// References to configured MCP servers, optionally narrowing their tools.
    pub servers: Option<Vec<ServerRefConfig>>,
    /// Explicit native tool allowlist; `[]` disables native tools.
    pub native_tools: Option<Vec<String>>,
    /// Platform user IDs allowed to use the toolset.
    pub users: Option<Vec<String>>,
    /// Adapters allowed to use the toolset: `slack`, `discord`.
    pub adapters: Option<Vec<String>>,
    /// Providers and exact model IDs allowed with the toolset.
    pub providers: Option<Vec<ProviderModelsConfig>>,
    /// GitHub repositories (`owner/repo`) a GitHub toolset may touch.
    pub repositories: Option<Vec<String>>,
    /// Branches a `github-pr` toolset may target.
    pub base_branches: Option<Vec<String>>,
    /// Literal path prefixes a `github-pr` toolset may change.
    pub allowed_paths: Option<Vec<String>>,
    /// Literal path prefixes a `github-pr` toolset must not change.
    pub denied_paths: Option<Vec<String>>,
    /// Prefix of the branches a `github-pr` toolset creates.
    pub branch_prefix: Option<String>,
    /// The server that performs a `github-pr` toolset's writes.
    pub write_server: Option<String>,
    /// Legacy conversation allowlist: accepted and ignored.
    pub conversations: Option<IgnoredAny>,
}

/// A toolset's reference to a configured server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ServerRefConfig {
    /// The server's name.
    pub name: Option<String>,
    /// Narrows the server's tools; never widens an explicit allowlist.
    pub tools: Option<Vec<String>>,
}

/// A provider and the exact models a toolset allows on it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProviderModelsConfig {
    /// The provider's name.
    pub name: Option<String>,
    /// Exact model IDs.
    pub models: Option<Vec<String>>,
}

/// What a toolset is for; it decides which tools and checks apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsetKind {
    /// Search and general tools.
    Search,
    /// Read-only GitHub tools with repository policy.
    GithubRead,
    /// GitHub reads plus the guarded pull-request workflow.
    GithubPr,
}

impl ToolsetKind {
    /// The configuration spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Search => "search",
            Self::GithubRead => "github-read",
            Self::GithubPr => "github-pr",
        }
    }

    fn is_github(self) -> bool {
        !matches!(self, Self::Search)
    }
}

/// A chat platform a toolset may be used from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdapterKind {
    /// Slack.
    Slack,
    /// Discord.
    Discord,
}

/// A toolset's reference to a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRef {
    /// The server's name.
    pub name: String,
    /// The narrowed tool list, or `None` to inherit the server's.
    pub tools: Option<Vec<String>>,
}

/// A provider and its allowed models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderModels {
    /// The provider's name.
    pub name: String,
    /// Exact model IDs.
    pub models: Vec<String>,
}

/// The GitHub fields of a GitHub toolset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GithubPolicy {
    /// `owner/repo` names.
    pub repositories: Vec<String>,
    /// Branches pull requests may target (`github-pr` only).
    pub base_branches: Vec<String>,
    /// Path prefixes that may change (`github-pr` only).
    pub allowed_paths: Vec<String>,
    /// Path prefixes that must not change (`github-pr` only).
    pub denied_paths: Vec<String>,
    /// Prefix of created branches (`github-pr` only).
    pub branch_prefix: Option<String>,
    /// The writer connection (`github-pr` only).
    pub write_server: Option<String>,
}

/// A validated toolset.
#[derive(Debug, Clone)]
pub struct Toolset {
    /// Its unique name.
    pub name: String,
    /// What it is for.
    pub kind: ToolsetKind,
    /// Servers it connects.
    pub servers: Vec<ServerRef>,
    /// `None`: the implicit native defaults for its kind; `Some`: exactly these.
    pub native_tools: Option<Vec<String>>,
    /// Allowed platform user IDs (empty: anyone who may run `ai`).
    pub users: Vec<String>,
    /// Allowed adapters (empty: any).
    pub adapters: Vec<AdapterKind>,
    /// Allowed providers and models (empty: any).
    pub providers: Vec<ProviderModels>,
    /// GitHub fields, present exactly on GitHub kinds.
    pub github: Option<GithubPolicy>,
}

/// Validated toolsets plus the configured call budget ceiling.
#[derive(Debug, Clone, Default)]
pub struct ToolPolicy {
    toolsets: Vec<Toolset>,
    default: Option<usize>,
    max_tool_calls: Option<u8>,
}

impl ToolPolicy {
    /// Validates the toolset part of the `:mcp` map against the names defined elsewhere.
    ///
    /// # Errors
    ///
    /// Every problem found, each an [`Error::InvalidConfig`] with a path relative to the
    /// `:mcp` map (`toolsets[1].servers[0].name`).
    pub fn from_config(
        config: &PolicyConfig<'_>,
        known: &KnownNames<'_>,
    ) -> Result<Self, Vec<Error>> {
        let mut problems = Vec::new();
        let max_tool_calls = match config.max_tool_calls {
            None => None,
            Some(n) => match u8::try_from(n) {
                Ok(n) if (1..=MAX_TOOL_CALLS).contains(&n) => Some(n),
                _ => {
                    problems.push(Error::config(
                        "max-tool-calls",
                        "must be an integer from 1 to 20",
                    ));
                    None
                }
            },
        };
        let mut toolsets = Vec::with_capacity(config.toolsets.len());
        let mut seen = HashSet::new();
        for (index, raw) in config.toolsets.iter().enumerate() {
            let before = problems.len();
            let toolset = validate_toolset(raw, known, &mut |field, reason| {
                problems.push(Error::config(format!("toolsets[{index}].{field}"), reason));
            });
            if let Some(toolset) = toolset.filter(|_| problems.len() == before) {
                if seen.insert(toolset.name.clone()) {
                    toolsets.push(toolset);
                } else {
                    problems.push(Error::config(
                        format!("toolsets[{index}].name"),
                        "duplicates an earlier toolset's name",
                    ));
                }
            }
        }
        let default = match config.default_toolset {
            None => (!toolsets.is_empty()).then_some(0),
            Some(name) => {
                let found = toolsets.iter().position(|t| t.name == name);
                let named = config
                    .toolsets
                    .iter()
                    .any(|t| t.name.as_deref() == Some(name));
                if !named {
                    problems.push(Error::config(
                        "default-toolset",
                        "does not name a configured toolset",
                    ));
                }
                found
            }
        };
        if problems.is_empty() {
            Ok(Self {
                toolsets,
                default,
                max_tool_calls,
            })
        } else {
            Err(problems)
        }
    }

    /// The named toolsets in configuration order (empty for legacy flat configuration).
    #[must_use]
    pub fn toolsets(&self) -> &[Toolset] {
        &self.toolsets
    }

    /// The toolset with this exact name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Toolset> {
        self.toolsets.iter().find(|t| t.name == name)
    }

    /// The toolset used when a request names none: `:default-toolset`, else the first.
    #[must_use]
    pub fn default_toolset(&self) -> Option<&Toolset> {
        self.default.and_then(|i| self.toolsets.get(i))
    }

    /// The operator's ceiling from `:max-tool-calls`, if configured.
    #[must_use]
    pub fn max_tool_calls(&self) -> Option<u8> {
        self.max_tool_calls
    }
}

fn validate_toolset(
    raw: &ToolsetConfig,
    known: &KnownNames<'_>,
    fail: &mut dyn FnMut(&str, &str),
) -> Option<Toolset> {
    let name = match raw.name.as_deref() {
        None => {
            fail("name", "is required");
            None
        }
        Some(n) if n.is_empty() || n.chars().any(char::is_whitespace) => {
            fail("name", "must be nonblank without whitespace");
            None
        }
        Some(n) => Some(n.to_owned()),
    };
    let kind = match raw.kind.as_deref() {
        None => {
            fail(
                "kind",
                "is required: \"search\", \"github-read\" or \"github-pr\"",
            );
            None
        }
        Some("search") => Some(ToolsetKind::Search),
        Some("github-read") => Some(ToolsetKind::GithubRead),
        Some("github-pr") => Some(ToolsetKind::GithubPr),
        Some(_) => {
            fail(
                "kind",
                "must be \"search\", \"github-read\" or \"github-pr\"",
            );
            None
        }
    };
    let servers = validate_server_refs(raw.servers.as_deref().unwrap_or_default(), known, fail);
    let native_tools = raw.native_tools.as_ref().map(|tools| {
        let mut seen = HashSet::new();
        for (i, tool) in tools.iter().enumerate() {
            if !NATIVE_TOOL_NAMES.contains(&tool.as_str()) {
                fail(&format!("native-tools[{i}]"), "is not a native tool name");
            } else if !seen.insert(tool) {
                fail(&format!("native-tools[{i}]"), "is listed twice");
            }
        }
        tools.clone()
    });
    let users = nonblank_unique(raw.users.as_deref(), "users", fail);
    let mut adapters = Vec::new();
    for (i, adapter) in raw
        .adapters
        .as_deref()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        match adapter.as_str() {
            "slack" => adapters.push(AdapterKind::Slack),
            "discord" => adapters.push(AdapterKind::Discord),
            _ => fail(
                &format!("adapters[{i}]"),
                "must be \"slack\" or \"discord\"",
            ),
        }
    }
    let providers =
        validate_provider_models(raw.providers.as_deref().unwrap_or_default(), known, fail);

    if native_tools.as_ref().is_some_and(|t| !t.is_empty()) {
        if kind.is_some_and(ToolsetKind::is_github) {
            fail(
                "native-tools",
                "an explicit list is only accepted on search toolsets",
            );
        }
        if users.is_empty() || adapters.is_empty() || providers.is_empty() {
            fail(
                "native-tools",
                "an explicit list needs :users, :adapters and :providers allowlists",
            );
        }
    }
    let github = kind
        .and_then(|kind| validate_github(raw, kind, known, &users, &adapters, &providers, fail));
    Some(Toolset {
        name: name?,
        kind: kind?,
        servers,
        native_tools,
        users,
        adapters,
        providers,
        github: if kind?.is_github() {
            Some(github?)
        } else {
            None
        },
    })
}

fn validate_server_refs(
    refs: &[ServerRefConfig],
    known: &KnownNames<'_>,
    fail: &mut dyn FnMut(&str, &str),
) -> Vec<ServerRef> {
    let mut out = Vec::with_capacity(refs.len());
    let mut seen = HashSet::new();
    for (i, r) in refs.iter().enumerate() {
        let Some(name) = r.name.as_deref() else {
            fail(&format!("servers[{i}].name"), "is required");
            continue;
        };
        let Some((_, allow)) = known.servers.iter().find(|(n, _)| *n == name) else {
            fail(
                &format!("servers[{i}].name"),
                "does not name a configured server",
            );
            continue;
        };
        if !seen.insert(name) {
            fail(&format!("servers[{i}].name"), "is referenced twice");
            continue;
        }
        if let Some(tools) = &r.tools {
            if tools.is_empty() {
                fail(
                    &format!("servers[{i}].tools"),
                    "must list at least one tool (omit it to inherit the server's tools)",
                );
            }
            let mut listed = HashSet::new();
            for (j, tool) in tools.iter().enumerate() {
                if tool.trim().is_empty() {
                    fail(&format!("servers[{i}].tools[{j}]"), "must not be blank");
                } else if !listed.insert(tool) {
                    fail(&format!("servers[{i}].tools[{j}]"), "is listed twice");
                } else if allow.is_some_and(|allow| !allow.contains(tool)) {
                    fail(
                        &format!("servers[{i}].tools[{j}]"),
                        "is not in the server's :tools allowlist (a reference may narrow it, never widen it)",
                    );
                }
            }
        }
        out.push(ServerRef {
            name: name.to_owned(),
            tools: r.tools.clone(),
        });
    }
    out
}

fn validate_provider_models(
    entries: &[ProviderModelsConfig],
    known: &KnownNames<'_>,
    fail: &mut dyn FnMut(&str, &str),
) -> Vec<ProviderModels> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let Some(name) = entry.name.as_deref() else {
            fail(&format!("providers[{i}].name"), "is required");
            continue;
        };
        if !known.providers.contains(&name) {
            fail(
                &format!("providers[{i}].name"),
                "does not name a configured provider",
            );
        }
        let models = nonblank_unique(
            entry.models.as_deref(),
            &format!("providers[{i}].models"),
            fail,
        );
        if models.is_empty() {
            fail(
                &format!("providers[{i}].models"),
                "must list at least one exact model ID",
            );
        }
        out.push(ProviderModels {
            name: name.to_owned(),
            models,
        });
    }
    out
}

fn validate_github(
    raw: &ToolsetConfig,
    kind: ToolsetKind,
    known: &KnownNames<'_>,
    users: &[String],
    adapters: &[AdapterKind],
    providers: &[ProviderModels],
    fail: &mut dyn FnMut(&str, &str),
) -> Option<GithubPolicy> {
    let pr_fields = [
        ("base-branches", raw.base_branches.is_some()),
        ("allowed-paths", raw.allowed_paths.is_some()),
        ("denied-paths", raw.denied_paths.is_some()),
        ("branch-prefix", raw.branch_prefix.is_some()),
        ("write-server", raw.write_server.is_some()),
    ];
    if !kind.is_github() {
        if raw.repositories.is_some() {
            fail(
                "repositories",
                "is only for github-read and github-pr toolsets",
            );
        }
        for (field, set) in pr_fields {
            if set {
                fail(field, "is only for github-pr toolsets");
            }
        }
        return None;
    }
    if kind == ToolsetKind::GithubRead {
        for (field, set) in pr_fields {
            if set {
                fail(field, "is only for github-pr toolsets");
            }
        }
    }
    if users.is_empty() {
        fail(
            "users",
            "is required on GitHub toolsets (platform user IDs)",
        );
    }
    if adapters.is_empty() {
        fail("adapters", "is required on GitHub toolsets");
    }
    let repositories = nonblank_unique(raw.repositories.as_deref(), "repositories", fail);
    if repositories.is_empty() {
        fail("repositories", "must list at least one owner/repo");
    }
    for (i, repo) in repositories.iter().enumerate() {
        if !is_repository_name(repo) {
            fail(
                &format!("repositories[{i}]"),
                "must have the form owner/repo",
            );
        }
    }
    let mut policy = GithubPolicy {
        repositories,
        ..GithubPolicy::default()
    };
    if kind == ToolsetKind::GithubPr {
        if providers.is_empty() {
            fail(
                "providers",
                "is required on github-pr toolsets (exact providers and models)",
            );
        }
        policy.base_branches = nonblank_unique(raw.base_branches.as_deref(), "base-branches", fail);
        if policy.base_branches.is_empty() {
            fail("base-branches", "must list at least one branch");
        }
        policy.allowed_paths = nonblank_unique(raw.allowed_paths.as_deref(), "allowed-paths", fail);
        policy.denied_paths = nonblank_unique(raw.denied_paths.as_deref(), "denied-paths", fail);
        policy.branch_prefix = match raw.branch_prefix.as_deref() {
            Some(p) if p.trim().is_empty() || p.chars().any(char::is_whitespace) => {
                fail("branch-prefix", "must be nonblank without whitespace");
                None
            }
            other => other.map(str::to_owned),
        };
        policy.write_server = match raw.write_server.as_deref() {
            None => {
                fail("write-server", "is required on github-pr toolsets");
                None
            }
            Some(name) if !known.servers.iter().any(|(n, _)| *n == name) => {
                fail("write-server", "does not name a configured server");
                None
            }
            Some(name) => Some(name.to_owned()),
        };
    }
    Some(policy)
}

fn nonblank_unique(
    values: Option<&[String]>,
    field: &str,
    fail: &mut dyn FnMut(&str, &str),
) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, value) in values.unwrap_or_default().iter().enumerate() {
        if value.trim().is_empty() {
            fail(&format!("{field}[{i}]"), "must not be blank");
        } else if !seen.insert(value) {
            fail(&format!("{field}[{i}]"), "is listed twice");
        } else {
            out.push(value.clone());
        }
    }
    out
}

fn is_repository_name(repo: &str) -> bool {
    let valid = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    matches!(repo.split_once('/'), Some((owner, name)) if valid(owner) && valid(name))
}
