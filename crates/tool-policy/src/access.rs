//! Who may use which tools: toolset selection, identity and model checks, and the native
//! tools a request is offered.

use yetibot_conversation::{AdapterKind, Provenance};

use crate::config::{ToolPolicy, Toolset, ToolsetKind};
use crate::error::Error;
use crate::github::{GITHUB_READ_TOOLS, is_reserved_github_tool};
use crate::native::{NativeKind, NativeTool};

/// What access decisions need to know about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    /// Where the request came from.
    pub provenance: Provenance,
    /// The selected provider's name.
    pub provider: String,
    /// The selected model ID.
    pub model: String,
}

/// Which native services are configured on this host (their tools can exist at all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeServices {
    /// Names of the registered [`NativeKind::Service`] tools whose services are configured
    /// (for `wise`, including its own account and chat allowlists for this chat).
    pub configured: Vec<String>,
}

/// The tool scope of one request: a named toolset, or the legacy flat configuration in which
/// every server is available, together with the native tools registered with the policy.
#[derive(Debug, Clone, Copy)]
pub struct Selection<'a> {
    toolset: Option<&'a Toolset>,
    natives: &'a [NativeTool],
}

impl<'a> Selection<'a> {
    /// Picks the toolset for a request: the one named with `--toolset`, else the configured
    /// default, else (with no named toolsets) the legacy flat scope.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownToolset`] when `--toolset` names no configured toolset.
    pub fn choose(policy: &'a ToolPolicy, requested: Option<&str>) -> Result<Self, Error> {
        let toolset = match requested {
            Some(name) => Some(policy.get(name).ok_or(Error::UnknownToolset)?),
            None => policy.default_toolset(),
        };
        Ok(Self {
            toolset,
            natives: policy.natives(),
        })
    }

    /// The selected toolset; `None` for the legacy flat scope (no toolsets are configured:
    /// every server, for everyone who can run `ai`).
    #[must_use]
    pub fn toolset(&self) -> Option<&'a Toolset> {
        self.toolset
    }

    /// Checks the request's identity and model against the toolset's allowlists. Run it
    /// before any tool or model call, and again before each execution.
    ///
    /// # Errors
    ///
    /// [`Error::Denied`] naming the rule that failed (never the identity itself).
    pub fn authorize(&self, request: &RequestContext) -> Result<(), Error> {
        let Some(toolset) = self.toolset else {
            return Ok(());
        };
        check_identity(toolset, &request.provenance)?;
        if !toolset.providers.is_empty() {
            let allowed = toolset
                .providers
                .iter()
                .any(|p| p.name == request.provider && p.models.contains(&request.model));
            if !allowed {
                return Err(Error::Denied(Denial::ProviderModel));
            }
        }
        Ok(())
    }

    /// The native tools this request is offered, in a stable order.
    ///
    /// Untrusted requests get none. An explicit `:native-tools` list is taken as written;
    /// otherwise GitHub toolsets get every [`NativeKind::Context`] tool and search toolsets
    /// and the legacy scope every registered tool, in registration order. Either way a
    /// [`NativeKind::Service`] tool needs its service configured and a
    /// [`NativeKind::PlatformAction`] tool a request from its platform.
    #[must_use]
    pub fn native_tools(
        &self,
        request: &RequestContext,
        services: &NativeServices,
    ) -> Vec<&'a NativeTool> {
        let Some(identity) = request.provenance.identity() else {
            return Vec::new();
        };
        let configured = |tool: &NativeTool| {
            tool.kind() != NativeKind::Service
                || services.configured.iter().any(|c| c == tool.name())
        };
        let candidates: Vec<&'a NativeTool> = match self.toolset {
            Some(Toolset {
                native_tools: Some(explicit),
                ..
            }) => explicit
                .iter()
                .filter_map(|name| self.native(name))
                // Staging is the github-pr workflow itself, listed or not.
                .chain(self.natives.iter().filter(|t| {
                    t.kind() == NativeKind::GithubStaging && !explicit.iter().any(|n| n == t.name())
                }))
                .collect(),
            _ => self.natives.iter().collect(),
        };
        candidates
            .into_iter()
            .filter(|tool| self.permits_native(identity.adapter(), tool) && configured(tool))
            .collect()
    }

    /// Whether the native tool `name` may run for this request as it stands: the tool is
    /// registered, the request is trusted, and the selection's kind, explicit list and
    /// platform allow the tool. Service configuration is not looked at (it cannot change
    /// while the process runs); a tool's own conditions, such as Wise's chat allowlist, are
    /// its executor's to check.
    #[must_use]
    pub fn allows_native(&self, request: &RequestContext, name: &str) -> bool {
        let Some(tool) = self.native(name) else {
            return false;
        };
        request
            .provenance
            .identity()
            .is_some_and(|identity| self.permits_native(identity.adapter(), tool))
    }

    /// The registered native tool of this name.
    fn native(&self, name: &str) -> Option<&'a NativeTool> {
        self.natives.iter().find(|tool| tool.name() == name)
    }

    /// The kind, list and platform rules of [`Selection::native_tools`], for one tool.
    fn permits_native(&self, adapter: AdapterKind, tool: &NativeTool) -> bool {
        if let NativeKind::PlatformAction(platform) = tool.kind()
            && platform != adapter
        {
            return false;
        }
        if tool.kind() == NativeKind::GithubStaging {
            return self
                .toolset
                .is_some_and(|toolset| toolset.kind == ToolsetKind::GithubPr);
        }
        match self.toolset {
            Some(Toolset {
                native_tools: Some(explicit),
                ..
            }) => explicit.iter().any(|n| n == tool.name()),
            Some(toolset) if toolset.kind.is_github() => tool.kind().offered_to_github(),
            _ => true,
        }
    }
}

/// Which access rule denied a request. The variants name rules, never identities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// The toolset restricts identity and the request has no trusted platform identity.
    UntrustedIdentity,
    /// The request's adapter is not in the toolset's `:adapters`.
    Adapter,
    /// The request's user is not in the toolset's `:users`.
    User,
    /// The provider and model are not in the toolset's `:providers`.
    ProviderModel,
    /// The provider has `:tool-calling false`.
    ToolCallingDisabled,
}

impl Denial {
    /// A short explanation for the chat user.
    #[must_use]
    pub fn user_message(self) -> &'static str {
        match self {
            Self::UntrustedIdentity => {
                "this toolset needs a request sent directly from Slack or Discord by an allowed user"
            }
            Self::Adapter => "this toolset is not available on this chat platform",
            Self::User => "you are not allowed to use this toolset",
            Self::ProviderModel => "this toolset does not allow the selected provider and model",
            Self::ToolCallingDisabled => {
                "the selected provider has tool calling turned off; use --no-tools"
            }
        }
    }
}

/// Whether a request from `provenance` passes `toolset`'s identity rules: its users and
/// adapters, and a trusted platform identity for a restricted toolset. The provider and
/// model rule depends on the request's route and is checked by [`Selection::authorize`].
///
/// # Errors
///
/// [`Error::Denied`] naming the rule that failed (never the identity itself).
fn check_identity(toolset: &Toolset, provenance: &Provenance) -> Result<(), Error> {
    let restricted = !toolset.users.is_empty()
        || !toolset.adapters.is_empty()
        || toolset.kind != ToolsetKind::Search;
    let identity = provenance.identity();
    if restricted && identity.is_none() {
        return Err(Error::Denied(Denial::UntrustedIdentity));
    }
    if let Some(identity) = identity {
        if !toolset.adapters.is_empty() && !toolset.adapters.contains(&identity.adapter()) {
            return Err(Error::Denied(Denial::Adapter));
        }
        if !toolset.users.is_empty() && !toolset.users.iter().any(|u| u == identity.user_id()) {
            return Err(Error::Denied(Denial::User));
        }
    }
    Ok(())
}

impl Toolset {
    /// Whether a caller from `provenance` may use this toolset as far as identity goes (its
    /// users and adapters; a restricted toolset needs a trusted platform identity). What
    /// discovery (`ai toolsets`, `ai servers`) shows a caller: a toolset they can never use
    /// is not listed to them.
    #[must_use]
    pub fn admits(&self, provenance: &Provenance) -> bool {
        check_identity(self, provenance).is_ok()
    }
}

/// Rejects a tool-enabled request on a provider configured with `:tool-calling false`,
/// before any discovery. Requests with `--no-tools` always pass.
///
/// # Errors
///
/// [`Error::Denied`] with [`Denial::ToolCallingDisabled`].
pub fn check_tool_calling(provider_tool_calling: bool, no_tools: bool) -> Result<(), Error> {
    if no_tools || provider_tool_calling {
        Ok(())
    } else {
        Err(Error::Denied(Denial::ToolCallingDisabled))
    }
}

/// A server that a request connects, with the tools it may offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUse {
    /// The server's name.
    pub name: String,
    /// The effective allowlist: the reference's narrowing, else the server's `:tools`, else
    /// `None` for the server's whole current catalog.
    pub tools: Option<Vec<String>>,
    /// The kind whose rules apply to what the server lists ([`ToolsetKind::Search`] for the
    /// legacy scope): search never offers a reserved GitHub name, GitHub kinds offer only
    /// the supported read operations.
    pub kind: ToolsetKind,
}

impl Selection<'_> {
    /// The servers this request connects. Only referenced servers connect under a named
    /// toolset, so an unavailable server elsewhere cannot break it; the legacy scope
    /// connects every configured server. `servers` lists each configured server's name and
    /// `:tools`.
    #[must_use]
    pub fn servers(&self, servers: &[(&str, Option<&[String]>)]) -> Vec<ServerUse> {
        match self.toolset {
            None => servers
                .iter()
                .map(|(name, tools)| ServerUse {
                    name: (*name).to_owned(),
                    tools: tools.map(<[String]>::to_vec),
                    kind: ToolsetKind::Search,
                })
                .collect(),
            Some(toolset) => toolset
                .servers
                .iter()
                .filter_map(|r| {
                    let (_, configured) = servers.iter().find(|(n, _)| *n == r.name)?;
                    Some(ServerUse {
                        name: r.name.clone(),
                        tools: r
                            .tools
                            .clone()
                            .or_else(|| configured.map(<[String]>::to_vec)),
                        kind: toolset.kind,
                    })
                })
                .collect(),
        }
    }
}

/// Applies a server's effective allowlist, then its kind's rules, to the tool names it
/// listed. The kind rules matter for live discovery (no allowlist): validation already keeps
/// allowlists within them.
///
/// # Errors
///
/// [`Error::MissingTool`] when the allowlist names a tool the server did not list: the
/// request fails rather than silently answering without it.
pub fn filter_listed(server: &ServerUse, listed: &[String]) -> Result<Vec<String>, Error> {
    if let Some(allow) = &server.tools
        && let Some(missing) = allow.iter().find(|t| !listed.contains(t))
    {
        return Err(Error::MissingTool {
            server: server.name.clone(),
            tool: missing.clone(),
        });
    }
    let kind_allows = |tool: &str| {
        if server.kind.is_github() {
            GITHUB_READ_TOOLS.contains(&tool)
        } else {
            !is_reserved_github_tool(tool)
        }
    };
    Ok(listed
        .iter()
        .filter(|t| server.tools.as_ref().is_none_or(|allow| allow.contains(t)))
        .filter(|t| kind_allows(t))
        .cloned()
        .collect())
}
