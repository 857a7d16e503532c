//! What an adapter hands the bot: one event from a platform, with the identity the platform
//! vouches for. Nothing here is ever read from message text.

use yetibot_conversation::AdapterKind;

/// Where a message lives: the adapter, the connection within it (a Slack workspace, a
/// Discord guild, `local` for the console), the room (channel) and, inside a thread, the
/// thread's platform ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Place {
    /// The adapter.
    pub adapter: AdapterKind,
    /// The connection within the adapter.
    pub connection: String,
    /// The room (channel) ID, as the platform addresses it.
    pub room: String,
    /// The room's name where history keys rooms by name rather than ID (Slack's `#general`,
    /// or the other user's name for a direct message), as upstream Yetibot stores it; `None`
    /// where the ID is the key (Discord, the console).
    pub room_name: Option<String>,
    /// The thread's ID when the message is in a thread.
    pub thread: Option<String>,
}

impl Place {
    /// The same room, outside any thread.
    #[must_use]
    pub fn room_only(&self) -> Self {
        Self {
            thread: None,
            ..self.clone()
        }
    }

    /// The same room, inside `thread`.
    #[must_use]
    pub fn in_thread(&self, thread: impl Into<String>) -> Self {
        Self {
            thread: Some(thread.into()),
            ..self.clone()
        }
    }
}

/// Who sent an event, as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// The platform's user ID.
    pub id: String,
    /// The display name.
    pub name: String,
    /// A bot, a webhook or this bot itself: such messages get no privileges and trigger
    /// nothing.
    pub is_bot: bool,
}

/// One event from a platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Where it happened.
    pub place: Place,
    /// Who did it.
    pub author: Author,
    /// The platform's ID of the message the event is about: the new message, the edited
    /// one, or the message whose button was pressed.
    pub message_id: String,
    /// The message's edit revision: 0 when sent, one more for each edit. A run of an older
    /// revision never publishes over a newer one.
    pub revision: u32,
    /// What happened.
    pub kind: EventKind,
    /// The files attached to the message (new or edited), as the platform described them,
    /// at most [`yetibot_conversation::MAX_ATTACHMENTS`]; empty for reactions and presses.
    pub attachments: Vec<yetibot_conversation::Attachment>,
}

/// What an [`Event`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A new message.
    Message {
        /// Its text.
        text: String,
    },
    /// An existing message was edited.
    Edited {
        /// Its new text.
        text: String,
    },
    /// Someone reacted to a message with an emoji.
    Reacted {
        /// The emoji as the platform names it: a Unicode emoji (`❌`), or a custom emoji's
        /// name (`wastebasket`, `delete-this`).
        emoji: String,
        /// Whether the message reacted to is one of this bot's own.
        on_bot_message: bool,
    },
    /// A button on one of the bot's messages was pressed.
    Pressed {
        /// Which kind of button.
        action: Action,
        /// The button's token, as the bot issued it.
        token: String,
    },
}

/// The buttons the bot puts under its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Run the command again (asks for confirmation first).
    RunAgain,
    /// Confirm a rerun.
    ConfirmRerun,
    /// Cancel a rerun.
    CancelRerun,
    /// Show the command's help.
    Help,
    /// Show the bounded tool-progress snapshot of an AI answer.
    ShowDetails,
}

impl Action {
    /// Every action.
    pub const ALL: [Self; 5] = [
        Self::RunAgain,
        Self::ConfirmRerun,
        Self::CancelRerun,
        Self::Help,
        Self::ShowDetails,
    ];

    /// A stable name, used in button IDs: `run-again`, `confirm-rerun`, `cancel-rerun`,
    /// `help`, `show-details`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RunAgain => "run-again",
            Self::ConfirmRerun => "confirm-rerun",
            Self::CancelRerun => "cancel-rerun",
            Self::Help => "help",
            Self::ShowDetails => "show-details",
        }
    }

    /// The action of a stable name; any other text is `None`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The button's label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::RunAgain => "Run again",
            Self::ConfirmRerun => "Confirm rerun",
            Self::CancelRerun => "Cancel",
            Self::Help => "Help",
            Self::ShowDetails => "Show details",
        }
    }
}

/// Whether a reaction asks the bot to delete its message: ❌ on Discord and in the console,
/// any emoji whose name contains `delete` on Slack (as upstream Yetibot does).
#[must_use]
pub fn is_delete_reaction(adapter: AdapterKind, emoji: &str) -> bool {
    match adapter {
        AdapterKind::Slack => emoji.to_ascii_lowercase().contains("delete"),
        AdapterKind::Discord | AdapterKind::Web | AdapterKind::Cli => {
            emoji.trim_end_matches('\u{fe0f}') == "❌"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_reactions_per_platform() {
        assert!(is_delete_reaction(AdapterKind::Discord, "❌"));
        assert!(is_delete_reaction(AdapterKind::Web, "❌\u{fe0f}"));
        assert!(!is_delete_reaction(AdapterKind::Discord, "x"));
        assert!(!is_delete_reaction(AdapterKind::Discord, "delete"));
        assert!(is_delete_reaction(AdapterKind::Slack, "delete-this"));
        assert!(is_delete_reaction(AdapterKind::Slack, "Delete"));
        assert!(!is_delete_reaction(AdapterKind::Slack, "❌"));
    }

    #[test]
    fn action_names_round_trip_and_nothing_else_parses() {
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(action));
        }
        assert_eq!(Action::parse("Run-Again"), None);
        assert_eq!(Action::parse(""), None);
    }

    #[test]
    fn places_move_in_and_out_of_threads() {
        let room = Place {
            adapter: AdapterKind::Web,
            connection: "local".into(),
            room: "general".into(),
            room_name: None,
            thread: None,
        };
        let thread = room.in_thread("t1");
        assert_eq!(thread.thread.as_deref(), Some("t1"));
        assert_eq!(thread.room_only(), room);
    }
}
