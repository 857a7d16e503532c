//! The bot's own (native) tools as the policy sees them: a name and the kind its rules
//! depend on. The AI commands register them; the policy never names a native tool itself.

use serde_json::Value;
use yetibot_conversation::{AdapterKind, ToolDefinition, ToolId};

/// What kind of native tool a registration is. The kind alone decides which requests may be
/// offered the tool; every kind needs a trusted request (an adapter's own event with a
/// platform user), and an explicit `:native-tools` list can only narrow what the kind allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NativeKind {
    /// Reads the bot's own context and nothing beyond it, with no credential and no
    /// inference: command help, the requesting channel's history, the running release. The
    /// only kind GitHub toolsets get, and they get every tool of it.
    Context,
    /// Works only on data the call itself supplies, with no service behind it (the JSON
    /// utility). Offered by default to search toolsets and the legacy scope.
    Computation,
    /// Uses an outside service that the host may or may not have configured (media,
    /// inference, delegation, bank data). Offered only when [`NativeServices`] names the tool
    /// as configured, explicit lists included.
    ///
    /// [`NativeServices`]: crate::NativeServices
    Service,
    /// Acts on one chat platform (a reaction on Discord): offered only to requests that came
    /// from that adapter, explicit lists included.
    PlatformAction(AdapterKind),
    /// Stages a change to a repository as a proposal for the host to check and a person to
    /// approve (`stage_changes`): offered under `github-pr` toolsets, and only there,
    /// whatever an explicit list says.
    GithubStaging,
}

impl NativeKind {
    /// Whether GitHub toolsets get tools of this kind.
    #[must_use]
    pub fn offered_to_github(self) -> bool {
        matches!(self, Self::Context)
    }
}

/// One native tool as registered with the policy: its name (the tool is `yetibot/<name>`)
/// and its [`NativeKind`]. Its description and argument schema belong to the tool itself;
/// [`NativeTool::definition`] joins them into what a model is offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeTool {
    name: String,
    kind: NativeKind,
}

impl NativeTool {
    /// The native tool `name` of `kind`.
    #[must_use]
    pub fn new(name: impl Into<String>, kind: NativeKind) -> Self {
        Self {
            name: name.into(),
            kind,
        }
    }

    /// Its name, as `:native-tools` lists name it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its kind.
    #[must_use]
    pub fn kind(&self) -> NativeKind {
        self.kind
    }

    /// Its identity, `yetibot/<name>`.
    #[must_use]
    pub fn id(&self) -> ToolId {
        ToolId::native(self.name.as_str())
    }

    /// What a model is offered for this tool, given the tool's own description and argument
    /// schema.
    #[must_use]
    pub fn definition(&self, description: impl Into<String>, parameters: Value) -> ToolDefinition {
        ToolDefinition::new(self.id(), description, parameters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_tool_is_offered_under_the_native_source() {
        let help = NativeTool::new("help", NativeKind::Context);
        let definition = help.definition("Pages through help topics.", serde_json::json!({}));
        assert_eq!(definition.id(), &ToolId::native("help"));
        assert_eq!(definition.function_name(), "yetibot__help");
        assert!(NativeKind::Context.offered_to_github());
        for kind in [
            NativeKind::Computation,
            NativeKind::Service,
            NativeKind::PlatformAction(AdapterKind::Discord),
        ] {
            assert!(!kind.offered_to_github(), "{kind:?}");
        }
    }
}
