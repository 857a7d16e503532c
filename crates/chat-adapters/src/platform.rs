//! The chat platforms the bot speaks to.

use std::fmt;

/// A chat platform. Identity, limits and formatting follow from the platform, never from
/// message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Platform {
    /// Discord, over the gateway and REST API.
    Discord,
    /// Slack, over Socket Mode and the Web API.
    Slack,
    /// The local web console.
    Web,
    /// A terminal session.
    Console,
}

impl Platform {
    /// The lower-case name used in configuration (`:adapters ["slack"]`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Discord => "discord",
            Self::Slack => "slack",
            Self::Web => "web",
            Self::Console => "console",
        }
    }

    /// Whether events from this platform carry a platform-verified user ID, the only kind of
    /// identity that toolset allowlists accept.
    #[must_use]
    pub fn has_verified_users(self) -> bool {
        matches!(self, Self::Discord | Self::Slack)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
