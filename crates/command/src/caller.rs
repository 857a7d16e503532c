//! Who runs a command and where, as the platform reported them, and what the request may do
//! on that platform.

use std::sync::Arc;

use yetibot_conversation::AdapterKind;
use yetibot_history::HistoryScope;

use crate::platform::Platform;

/// Who is running a command and where, as the platform reported them, with what the
/// request may do on that platform.
#[derive(Clone)]
pub struct Caller {
    /// The adapter the command came through.
    pub adapter: AdapterKind,
    /// The adapter's connection name: the key it is configured under (`myteam` for
    /// `:yetibot :adapters :myteam`), which history stores as `:myteam`, as upstream
    /// Yetibot does; `web` and `cli` for the local adapters.
    pub connection: String,
    /// The channel (room) the command came from.
    pub room: String,
    /// The platform's user ID.
    pub user_id: String,
    /// The user's display name.
    pub user_name: String,
    /// Whether the identity comes from the platform (a trusted event) rather than from
    /// text or caller-supplied metadata.
    pub trusted: bool,
    /// The platform's ID of the message being handled, when it has one. History records
    /// are written at most once per message ID, so a replayed event is not recorded twice.
    pub message_id: Option<String>,
    /// What the request may do on its platform (react, read the thread it was sent in, show
    /// progress), when it came from a chat adapter; `None` for `yetibot run`.
    pub platform: Option<Arc<dyn Platform>>,
}

impl Caller {
    /// The history this caller may read: their adapter connection's room. It is made from
    /// the platform's identity only, never from an argument.
    #[must_use]
    pub fn history_scope(&self) -> HistoryScope {
        HistoryScope::new(&self.connection, &self.room)
    }
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("adapter", &self.adapter)
            .field("connection", &self.connection)
            .field("room", &self.room)
            .field("user_id", &self.user_id)
            .field("user_name", &self.user_name)
            .field("trusted", &self.trusted)
            .field("message_id", &self.message_id)
            .field("platform", &self.platform.is_some())
            .finish()
    }
}

impl PartialEq for Caller {
    /// Two callers are equal when their identities and places are, and they share one
    /// platform (or have none).
    fn eq(&self, other: &Self) -> bool {
        let same_platform = match (&self.platform, &other.platform) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.adapter == other.adapter
            && self.connection == other.connection
            && self.room == other.room
            && self.user_id == other.user_id
            && self.user_name == other.user_name
            && self.trusted == other.trusted
            && self.message_id == other.message_id
            && same_platform
    }
}

impl Eq for Caller {}
