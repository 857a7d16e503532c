//! The store traits a database implements, aliases and chat history, the records they
//! read and write, the scope every read is confined to, and the in-memory alias store.

use std::collections::BTreeMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;

use crate::limits::{MAX_HISTORY_BODY_CHARS, MAX_HISTORY_NAME_CHARS, MAX_MEMORY_ALIASES};

/// A user-defined command: `alias name = "expression"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The command word it defines.
    pub name: String,
    /// The expression it runs, with `$s`, `$1`.. placeholders.
    pub expression: String,
    /// Who defined it (platform user ID).
    pub user_id: String,
}

/// Why a store could not answer. The message is safe to show in chat and to a model: it
/// never carries a database's own error text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached now.
    #[error("the database is unavailable; try again later")]
    Unavailable,
    /// The query ran past its time budget and was stopped; nothing of it is returned.
    #[error("the database query took too long and was stopped")]
    TimedOut,
    /// The store refused the request.
    #[error("{0}")]
    Refused(&'static str),
}

/// Where aliases live. Names are looked up globally (as upstream Yetibot does), while each
/// alias records the user who defined it.
pub trait AliasStore: Send + Sync {
    /// The alias named `name`.
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Alias>, StoreError>>;
    /// Saves `alias`, returning the one it replaced.
    fn put(&self, alias: Alias) -> BoxFuture<'_, Result<Option<Alias>, StoreError>>;
    /// Removes the alias named `name`, returning it.
    fn remove<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Alias>, StoreError>>;
    /// Every alias, by name.
    fn list(&self) -> BoxFuture<'_, Result<Vec<Alias>, StoreError>>;
}

/// Aliases kept in memory until a database store is configured.
#[derive(Debug, Default)]
pub struct MemoryAliases {
    aliases: Mutex<BTreeMap<String, Alias>>,
}

impl MemoryAliases {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Alias>> {
        self.aliases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AliasStore for MemoryAliases {
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Alias>, StoreError>> {
        let found = self.lock().get(name).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn put(&self, alias: Alias) -> BoxFuture<'_, Result<Option<Alias>, StoreError>> {
        let mut aliases = self.lock();
        let result = if aliases.len() >= MAX_MEMORY_ALIASES && !aliases.contains_key(&alias.name) {
            Err(StoreError::Refused(
                "there are too many aliases; remove some first",
            ))
        } else {
            Ok(aliases.insert(alias.name.clone(), alias))
        };
        Box::pin(std::future::ready(result))
    }

    fn remove<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Alias>, StoreError>> {
        let removed = self.lock().remove(name);
        Box::pin(std::future::ready(Ok(removed)))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<Alias>, StoreError>> {
        let all = self.lock().values().cloned().collect();
        Box::pin(std::future::ready(Ok(all)))
    }
}

/// Which stored history a read may see: one adapter's key and one stored room key. The
/// command layer makes it only from the caller of a trusted event, so no argument of a
/// command or a tool can name another room, adapter or user.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HistoryScope {
    adapter: String,
    room: String,
}

impl HistoryScope {
    /// The scope of a room of the adapter connection named `connection`: the adapter key as
    /// upstream Yetibot stores it (the connection's configured name after a colon,
    /// `:myteam`) and the room as the adapter reported it.
    #[must_use]
    pub fn new(connection: &str, room: &str) -> Self {
        Self {
            adapter: format!(":{connection}"),
            room: room.to_owned(),
        }
    }

    /// The stored adapter key (`chat_source_adapter`).
    #[must_use]
    pub fn adapter(&self) -> &str {
        &self.adapter
    }

    /// The stored room key (`chat_source_room`).
    #[must_use]
    pub fn room(&self) -> &str {
        &self.room
    }
}

/// One row to write to the history: a chat message or one of the bot's replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRecord {
    /// Where it was said.
    pub scope: HistoryScope,
    /// Who said it (the bot's own ID on its replies).
    pub user_id: String,
    /// Their display name.
    pub user_name: String,
    /// The text as posted.
    pub body: String,
    /// On a reply, the expression that produced it; empty on chat messages.
    pub command: String,
    /// Links a message and the replies to it.
    pub correlation_id: String,
    /// Whether the bot wrote it.
    pub is_yetibot: bool,
    /// Whether it was said in a private conversation.
    pub is_private: bool,
    /// Whether it is a reply reporting an error.
    pub is_error: bool,
    /// Whether it is a message that ran a command.
    pub is_command: bool,
    /// What makes the row unique within its scope: the platform's message ID for a
    /// message, the message ID and the reply's number (`<id>/1`) for a reply. A row whose
    /// key is already stored is not written again; rows without a key always are.
    pub message_key: Option<String>,
}

/// One stored history row as a read returns it, with long text already cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    /// The row's ID, increasing with time.
    pub id: i64,
    /// When it was stored, as `YYYY-MM-DDTHH:MM:SS.mmm` in the database's time.
    pub created_at: String,
    /// The user ID, cut to [`MAX_HISTORY_NAME_CHARS`].
    pub user_id: String,
    /// The user name, cut to [`MAX_HISTORY_NAME_CHARS`].
    pub user_name: String,
    /// The body, cut to [`MAX_HISTORY_BODY_CHARS`].
    pub body: String,
    /// Whether the bot wrote it.
    pub is_yetibot: bool,
    /// Whether it ran a command.
    pub is_command: bool,
    /// Whether it reported an error.
    pub is_error: bool,
    /// Which of the text fields were cut.
    pub truncated: Truncated,
}

/// Which text fields of a [`HistoryRow`] were cut to their bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Truncated {
    /// The body was longer than [`MAX_HISTORY_BODY_CHARS`].
    pub body: bool,
    /// The user name was longer than [`MAX_HISTORY_NAME_CHARS`].
    pub user_name: bool,
    /// The user ID was longer than [`MAX_HISTORY_NAME_CHARS`].
    pub user_id: bool,
}

impl Truncated {
    /// Whether any field was cut.
    #[must_use]
    pub fn any(self) -> bool {
        self.body || self.user_name || self.user_id
    }
}

/// The columns of a row as a store read them, each at most one character past its bound
/// (the query fetches `bound + 1` characters, so a longer value shows as too long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawHistoryRow {
    /// `id`.
    pub id: i64,
    /// `created_at`, formatted.
    pub created_at: String,
    /// `user_id`, at most 101 characters.
    pub user_id: String,
    /// `user_name`, at most 101 characters.
    pub user_name: String,
    /// `body`, at most 1001 characters.
    pub body: String,
    /// `is_yetibot`.
    pub is_yetibot: bool,
    /// `is_command`.
    pub is_command: bool,
    /// `is_error`.
    pub is_error: bool,
}

impl From<RawHistoryRow> for HistoryRow {
    /// Cuts each text field to its bound and records which were cut.
    fn from(raw: RawHistoryRow) -> Self {
        let (body, body_cut) = cut(raw.body, MAX_HISTORY_BODY_CHARS);
        let (user_name, name_cut) = cut(raw.user_name, MAX_HISTORY_NAME_CHARS);
        let (user_id, id_cut) = cut(raw.user_id, MAX_HISTORY_NAME_CHARS);
        Self {
            id: raw.id,
            created_at: raw.created_at,
            user_id,
            user_name,
            body,
            is_yetibot: raw.is_yetibot,
            is_command: raw.is_command,
            is_error: raw.is_error,
            truncated: Truncated {
                body: body_cut,
                user_name: name_cut,
                user_id: id_cut,
            },
        }
    }
}

/// `text` cut to `max` characters, and whether it was longer.
fn cut(mut text: String, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => {
            text.truncate(at);
            (text, true)
        }
        None => (text, false),
    }
}

/// How rows match text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextMatch {
    /// The body contains this text, compared without regard to case; `%`, `_` and `\` are
    /// ordinary characters.
    Contains(String),
    /// The body contains a match of this case-insensitive regular expression (the `regex`
    /// crate's syntax, checked before it reaches the store).
    Pattern(String),
}

/// Which rows of a scope a read counts or returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only rows whose body matches.
    pub text: Option<TextMatch>,
    /// Leave out command messages whose body starts with this text (the `history` command
    /// leaves out `!history` lines, so that it never counts itself).
    pub skip_commands_starting_with: Option<String>,
}

/// The order rows come back in: by `created_at`, then by ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryOrder {
    /// Oldest first.
    OldestFirst,
    /// Newest first.
    NewestFirst,
}

/// A read of rows: which, from where, in what order, how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Which rows.
    pub filter: HistoryFilter,
    /// Only rows older than this row (by `created_at`, then ID), which must itself belong
    /// to the scope: a row of another scope, or none, gives no rows at all.
    pub before_id: Option<i64>,
    /// The order.
    pub order: HistoryOrder,
    /// How many matching rows to skip first.
    pub offset: u64,
    /// The most rows to return.
    pub limit: u32,
}

/// Where chat history lives: written through the recorder's queue, read by the `history`
/// command and the `history` and `history_count` tools. Every read is confined to one
/// [`HistoryScope`].
pub trait HistoryStore: Send + Sync {
    /// Writes `records` in order, skipping any whose [`HistoryRecord::message_key`] is
    /// already stored in its scope.
    fn append(&self, records: Vec<HistoryRecord>) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The rows of `scope` that `query` selects.
    fn rows<'a>(
        &'a self,
        scope: &'a HistoryScope,
        query: &'a HistoryQuery,
    ) -> BoxFuture<'a, Result<Vec<HistoryRow>, StoreError>>;
    /// The exact number of rows of `scope` that `filter` selects.
    fn count<'a>(
        &'a self,
        scope: &'a HistoryScope,
        filter: &'a HistoryFilter,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_rows_are_cut_to_their_bounds_and_flagged() {
        let raw = RawHistoryRow {
            id: 1,
            created_at: "2026-01-01T00:00:00.000".into(),
            user_id: "u".repeat(MAX_HISTORY_NAME_CHARS),
            user_name: "é".repeat(MAX_HISTORY_NAME_CHARS + 1),
            body: "b".repeat(MAX_HISTORY_BODY_CHARS + 1),
            is_yetibot: false,
            is_command: false,
            is_error: false,
        };
        let row = HistoryRow::from(raw);
        assert_eq!(row.body.chars().count(), MAX_HISTORY_BODY_CHARS);
        assert_eq!(row.user_name.chars().count(), MAX_HISTORY_NAME_CHARS);
        assert_eq!(
            row.truncated,
            Truncated {
                body: true,
                user_name: true,
                user_id: false
            }
        );
    }
}
