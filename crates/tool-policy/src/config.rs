//! Toolset and budget configuration as operators write it, and its validation into
//! [`ToolPolicy`].

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde::de::IgnoredAny;
use yetibot_conversation::AdapterKind;

use crate::error::Error;
use crate::github::{
    GITHUB_READ_TOOLS, GITHUB_SNAPSHOT_TOOLS, GITHUB_WRITE_TOOLS, is_reserved_github_tool,
};
use crate::native::NativeTool;

/// Budget used when neither the configuration nor the request picks one.
pub const FALLBACK_TOOL_CALLS: u8 = 6;
/// The host's ceiling for any budget, configured or requested.
pub const MAX_TOOL_CALLS: u8 = 20;

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
    /// The configured MCP servers that have a `:github-api-token` (which makes a server a
    /// GitHub connection, and which a `github-pr` toolset's snapshot server needs).
    pub with_github_api_token: Vec<&'a str>,
    /// The native tools the AI commands registered: the names `:native-tools` may list,
    /// and the kinds the access rules apply. The policy keeps a copy.
    pub native_tools: &'a [NativeTool],
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
    /// Adapters allowed to use the toolset: `slack`, `discord` (the adapters whose events
    /// carry platform user IDs).
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
    /// The kind a configuration spelling names, if any.
    #[must_use]
    pub fn parse(spelling: &str) -> Option<Self> {
        match spelling {
            "search" => Some(Self::Search),
            "github-read" => Some(Self::GithubRead),
            "github-pr" => Some(Self::GithubPr),
            _ => None,
        }
    }

    /// The configuration spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Search => "search",
            Self::GithubRead => "github-read",
            Self::GithubPr => "github-pr",
        }
    }

    /// Whether this is a GitHub kind (`github-read` or `github-pr`).
    #[must_use]
    pub fn is_github(self) -> bool {
        !matches!(self, Self::Search)
    }
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

/// Validated toolsets plus the configured call budget ceiling and the registered native
/// tools.
#[derive(Debug, Clone, Default)]
pub struct ToolPolicy {
    toolsets: Vec<Toolset>,
    default: Option<usize>,
    max_tool_calls: Option<u8>,
    natives: Vec<NativeTool>,
}

impl ToolPolicy {
    /// Validates the toolset part of the `:mcp` map against the names defined elsewhere.
    ///
    /// Besides each toolset's own fields, the kind rules are checked across toolsets and
    /// servers (see the crate documentation): a writer connection is never referenced, a
    /// search toolset never references a GitHub connection, a GitHub toolset offers only the
    /// supported GitHub read operations, and a `github-pr` toolset can take snapshots and
    /// write. With no toolsets at all, no server may be a GitHub connection, since the legacy
    /// scope offers every server to everyone.
    ///
    /// # Errors
    ///
    /// Every problem found, each an [`Error::InvalidConfig`] with a path relative to the
    /// `:mcp` map (`toolsets[1].servers[0].name`). Reasons name toolsets, servers and tools,
    /// never a credential or any other value.
    pub fn from_config(
        config: &PolicyConfig<'_>,
        known: &KnownNames<'_>,
    ) -> Result<Self, Vec<Error>> {
        Self::validate(config, known)
    }

    fn validate(config: &PolicyConfig<'_>, known: &KnownNames<'_>) -> Result<Self, Vec<Error>> {
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
        let roles = Roles::of(config.toolsets, known);
        if config.toolsets.is_empty() {
            roles.check_legacy(&mut |field, reason| {
                problems.push(Error::config(field, reason));
            });
        }
        for (index, raw) in config.toolsets.iter().enumerate() {
            let before = problems.len();
            let mut fail = |field: &str, reason: &str| {
                problems.push(Error::config(format!("toolsets[{index}].{field}"), reason));
            };
            let toolset = validate_toolset(raw, known, &mut fail);
            roles.check_toolset(index, raw, &mut fail);
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
                natives: known.native_tools.to_vec(),
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

    /// The native tools registered through [`KnownNames::native_tools`], in registration
    /// order.
    #[must_use]
    pub fn natives(&self) -> &[NativeTool] {
        &self.natives
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
        Some(spelling) => {
            let kind = ToolsetKind::parse(spelling);
            if kind.is_none() {
                fail(
                    "kind",
                    "must be \"search\", \"github-read\" or \"github-pr\"",
                );
            }
            kind
        }
    };
    let servers = validate_server_refs(raw.servers.as_deref().unwrap_or_default(), known, fail);
    let native_tools = raw.native_tools.as_ref().map(|tools| {
        let mut seen = HashSet::new();
        for (i, tool) in tools.iter().enumerate() {
            if !known.native_tools.iter().any(|t| t.name() == tool) {
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
        // Only Slack and Discord events carry the platform user IDs that `:users` lists.
        match adapter.parse::<AdapterKind>() {
            Ok(kind @ (AdapterKind::Slack | AdapterKind::Discord)) => adapters.push(kind),
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
        if policy.allowed_paths.is_empty() {
            fail(
                "allowed-paths",
                "must list at least one path prefix that pull requests may change",
            );
        }
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

/// What each configured server is to the toolsets: which `github-pr` toolset writes through
/// it, which GitHub toolset reads through it, and what its own configuration says. Built
/// once from the raw toolsets, so that a reference is judged by every toolset, not only the
/// earlier ones.
struct Roles<'a, 'k> {
    toolsets: &'a [ToolsetConfig],
    known: &'a KnownNames<'k>,
    /// Server name to the first `github-pr` toolset naming it as `:write-server`.
    writers: HashMap<&'a str, usize>,
    /// Server name to the first GitHub toolset referencing it in `:servers`.
    github_readers: HashMap<&'a str, usize>,
}

impl<'a, 'k> Roles<'a, 'k> {
    fn of(toolsets: &'a [ToolsetConfig], known: &'a KnownNames<'k>) -> Self {
        let mut writers = HashMap::new();
        let mut github_readers = HashMap::new();
        for (index, raw) in toolsets.iter().enumerate() {
            let Some(kind) = raw.kind.as_deref().and_then(ToolsetKind::parse) else {
                continue;
            };
            if kind == ToolsetKind::GithubPr
                && let Some(writer) = raw.write_server.as_deref()
            {
                writers.entry(writer).or_insert(index);
            }
            if kind.is_github() {
                for name in server_names(raw) {
                    github_readers.entry(name).or_insert(index);
                }
            }
        }
        Self {
            toolsets,
            known,
            writers,
            github_readers,
        }
    }

    /// The configured server of this name and its `:tools`.
    fn server(&self, name: &str) -> Option<Option<&'k [String]>> {
        self.known
            .servers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, tools)| *tools)
    }

    fn has_token(&self, name: &str) -> bool {
        self.known.with_github_api_token.contains(&name)
    }

    /// Why the server's own configuration makes it a GitHub connection, if it does.
    fn own_github_mark(&self, name: &str) -> Option<String> {
        if self.has_token(name) {
            return Some("it has a :github-api-token".to_owned());
        }
        let tools = self.server(name).flatten().unwrap_or_default();
        let tool = tools.iter().find(|t| is_reserved_github_tool(t))?;
        Some(format!("its :tools lists the GitHub tool {tool:?}"))
    }

    /// A toolset's name for a problem text.
    fn label(&self, index: usize) -> String {
        let raw = self.toolsets.get(index);
        let kind = raw.and_then(|t| t.kind.as_deref()).unwrap_or("unnamed");
        match raw.and_then(|t| t.name.as_deref()) {
            Some(name) => format!("{kind} toolset {name:?}"),
            None => format!("{kind} toolset toolsets[{index}]"),
        }
    }

    /// With no toolsets every server is offered to everyone, so none may be a GitHub
    /// connection.
    fn check_legacy(&self, fail: &mut dyn FnMut(&str, &str)) {
        for (name, _) in &self.known.servers {
            if let Some(why) = self.own_github_mark(name) {
                fail(
                    "toolsets",
                    &format!(
                        "none are configured, so every server is offered to everyone who can run ai, but server {name:?} is a GitHub connection ({why}); add a github-read or github-pr toolset that references it"
                    ),
                );
            }
        }
    }

    /// The kind rules for one toolset's server references and, for `github-pr`, its
    /// snapshot and write capabilities. Fields are relative to the toolset.
    fn check_toolset(&self, index: usize, raw: &ToolsetConfig, fail: &mut dyn FnMut(&str, &str)) {
        let Some(kind) = raw.kind.as_deref().and_then(ToolsetKind::parse) else {
            return;
        };
        let this = self.label(index);
        let refs = raw.servers.as_deref().unwrap_or_default();
        for (j, r) in refs.iter().enumerate() {
            let Some(name) = r.name.as_deref() else {
                continue;
            };
            // An unknown name is already reported by the toolset's own checks.
            let Some(server_tools) = self.server(name) else {
                continue;
            };
            let field = format!("servers[{j}].name");
            if let Some(&writer) = self.writers.get(name) {
                let owner = if writer == index {
                    "its own :write-server".to_owned()
                } else {
                    format!("the :write-server of {}", self.label(writer))
                };
                fail(
                    &field,
                    &format!(
                        "{this} must not reference server {name:?}: it is {owner}, and a writer connection is used only by the host, never offered to the model"
                    ),
                );
                continue;
            }
            if kind == ToolsetKind::Search {
                let why = self
                    .github_readers
                    .get(name)
                    .map(|&reader| format!("{} references it", self.label(reader)))
                    .or_else(|| self.own_github_mark(name));
                if let Some(why) = why {
                    fail(
                        &field,
                        &format!(
                            "{this} must not reference server {name:?}: it is a GitHub connection ({why}); reference it from a github-read or github-pr toolset, whose identity and repository rules apply"
                        ),
                    );
                    continue;
                }
                for (t, tool) in r.tools.iter().flatten().enumerate() {
                    if is_reserved_github_tool(tool) {
                        fail(
                            &format!("servers[{j}].tools[{t}]"),
                            &format!(
                                "{this} must not offer the GitHub tool {tool:?}; use a github-read or github-pr toolset"
                            ),
                        );
                    }
                }
            } else if let Some(tools) = &r.tools {
                for (t, tool) in tools.iter().enumerate() {
                    if !GITHUB_READ_TOOLS.contains(&tool.as_str()) {
                        fail(
                            &format!("servers[{j}].tools[{t}]"),
                            &format!(
                                "{this} offers only the supported GitHub read operations ({}), and {tool:?} is not one",
                                GITHUB_READ_TOOLS.join(", ")
                            ),
                        );
                    }
                }
            } else if let Some(tool) = server_tools
                .unwrap_or_default()
                .iter()
                .find(|t| !GITHUB_READ_TOOLS.contains(&t.as_str()))
            {
                fail(
                    &field,
                    &format!(
                        "server {name:?} offers {tool:?}, but {this} offers only the supported GitHub read operations ({}); give the reference a :tools list of those",
                        GITHUB_READ_TOOLS.join(", ")
                    ),
                );
            }
        }
        if kind == ToolsetKind::GithubPr {
            self.check_pull_requests(raw, &this, fail);
        }
    }

    /// A `github-pr` toolset must be able to take snapshots (`get_commit` with its own
    /// `:github-api-token`, and `get_file_contents`) and to write (the writer's fixed subset).
    /// What an omitted `:tools` will discover is unknown here; the request then fails closed
    /// if a capability is missing.
    fn check_pull_requests(
        &self,
        raw: &ToolsetConfig,
        this: &str,
        fail: &mut dyn FnMut(&str, &str),
    ) {
        // Each known reference with its effective allowlist (`None`: live discovery).
        let refs: Vec<(usize, &str, Option<&[String]>)> = raw
            .servers
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(j, r)| {
                let name = r.name.as_deref()?;
                let server_tools = self.server(name)?;
                Some((j, name, r.tools.as_deref().or(server_tools)))
            })
            .filter(|(_, name, _)| !self.writers.contains_key(name))
            .collect();
        let offered = |tool: &str| {
            refs.iter()
                .any(|(_, _, tools)| tools.is_some_and(|list| list.iter().any(|t| t == tool)))
        };
        let discovers = refs.iter().any(|(_, _, tools)| tools.is_none());
        let missing: Vec<&str> = GITHUB_SNAPSHOT_TOOLS
            .iter()
            .copied()
            .filter(|tool| !offered(tool))
            .collect();
        if !missing.is_empty() && !discovers {
            fail(
                "servers",
                &format!(
                    "{this} needs get_commit and get_file_contents for host-side snapshots, and none of its servers offers {}",
                    missing.join(" or ")
                ),
            );
        }
        // The server that answers get_commit also serves the host's ancestry reads, with its
        // own token. If no allowlist names get_commit, any discovering reference may be it.
        let explicit = offered("get_commit");
        for (j, name, tools) in &refs {
            let candidate = match tools {
                Some(list) => list.iter().any(|t| t == "get_commit"),
                None => !explicit,
            };
            if candidate && !self.has_token(name) {
                fail(
                    &format!("servers[{j}].name"),
                    &format!(
                        "server {name:?} may answer get_commit for {this}, so it needs its own :github-api-token for the host's ancestry reads (it is never taken from :headers or :env)"
                    ),
                );
            }
        }
        let Some(writer) = raw.write_server.as_deref() else {
            return;
        };
        if let Some(Some(tools)) = self.server(writer) {
            let missing: Vec<&str> = GITHUB_WRITE_TOOLS
                .iter()
                .copied()
                .filter(|tool| !tools.iter().any(|t| t == tool))
                .collect();
            if !missing.is_empty() {
                fail(
                    "write-server",
                    &format!(
                        "server {writer:?} must offer {} for {this}, but its :tools lacks {}",
                        GITHUB_WRITE_TOOLS.join(", "),
                        missing.join(", ")
                    ),
                );
            }
        }
    }
}

/// The server names a toolset references, skipping unnamed references.
fn server_names(raw: &ToolsetConfig) -> impl Iterator<Item = &str> {
    raw.servers
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r.name.as_deref())
}
