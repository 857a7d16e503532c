//! What the command layer remembers: aliases, behind a store trait that a database can
//! implement, and the last lines and commands of each channel, kept in memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::registry::BoxFuture;

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

/// Why the alias store could not answer. The message is safe to show in chat.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached now.
    #[error("the alias store is unavailable")]
    Unavailable,
    /// The store refused the change.
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

/// The most aliases [`MemoryAliases`] holds.
pub const MAX_MEMORY_ALIASES: usize = 1024;

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

/// The most channels [`Recent`] remembers; the least recently used is forgotten first.
pub const MAX_REMEMBERED_CHANNELS: usize = 1024;
/// The longest line or command [`Recent`] keeps, in bytes (a command's longest line).
pub const MAX_REMEMBERED_BYTES: usize = crate::syntax::MAX_LINE_BYTES;
/// The most users per channel whose last command [`Recent`] remembers.
pub const MAX_REMEMBERED_USERS: usize = 256;

/// The last chat line, the last command, and each user's last command, per channel.
#[derive(Debug, Default)]
pub struct Recent {
    channels: Mutex<RecentChannels>,
}

#[derive(Debug, Default)]
struct RecentChannels {
    tick: u64,
    by_channel: HashMap<String, Channel>,
}

#[derive(Debug, Default)]
struct Channel {
    used: u64,
    last_line: Option<String>,
    last_command: Option<String>,
    by_user: HashMap<String, (u64, String)>,
}

impl Recent {
    /// Nothing remembered yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers a chat line that was not a command, cut to [`MAX_REMEMBERED_BYTES`].
    pub fn line(&self, channel: &str, text: &str) {
        let mut end = text.len().min(MAX_REMEMBERED_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.update(channel, |c, _| c.last_line = Some(text[..end].to_owned()));
    }

    /// Remembers a command `user` ran (without its prefix). One longer than a command may
    /// be ([`MAX_REMEMBERED_BYTES`]) is not remembered: it could never run again.
    pub fn command(&self, channel: &str, user: &str, expression: &str) {
        if expression.len() > MAX_REMEMBERED_BYTES {
            return;
        }
        self.update(channel, |c, tick| {
            c.last_command = Some(expression.to_owned());
            if c.by_user.len() >= MAX_REMEMBERED_USERS
                && !c.by_user.contains_key(user)
                && let Some(oldest) = c
                    .by_user
                    .iter()
                    .min_by_key(|(_, (used, _))| *used)
                    .map(|(k, _)| k.clone())
            {
                c.by_user.remove(&oldest);
            }
            c.by_user
                .insert(user.to_owned(), (tick, expression.to_owned()));
        });
    }

    /// The last chat line of `channel` that was not a command.
    #[must_use]
    pub fn last_line(&self, channel: &str) -> Option<String> {
        self.lock().by_channel.get(channel)?.last_line.clone()
    }

    /// The last command anyone ran in `channel`.
    #[must_use]
    pub fn last_command(&self, channel: &str) -> Option<String> {
        self.lock().by_channel.get(channel)?.last_command.clone()
    }

    /// The last command `user` ran in `channel`.
    #[must_use]
    pub fn last_command_of(&self, channel: &str, user: &str) -> Option<String> {
        let channels = self.lock();
        Some(
            channels
                .by_channel
                .get(channel)?
                .by_user
                .get(user)?
                .1
                .clone(),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RecentChannels> {
        self.channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn update(&self, channel: &str, change: impl FnOnce(&mut Channel, u64)) {
        let mut channels = self.lock();
        channels.tick += 1;
        let tick = channels.tick;
        if channels.by_channel.len() >= MAX_REMEMBERED_CHANNELS
            && !channels.by_channel.contains_key(channel)
            && let Some(oldest) = channels
                .by_channel
                .iter()
                .min_by_key(|(_, c)| c.used)
                .map(|(k, _)| k.clone())
        {
            channels.by_channel.remove(&oldest);
        }
        let entry = channels.by_channel.entry(channel.to_owned()).or_default();
        entry.used = tick;
        change(entry, tick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_memory_is_bounded() {
        let recent = Recent::new();
        for i in 0..MAX_REMEMBERED_CHANNELS + 10 {
            recent.line(&format!("c{i}"), "hi");
        }
        assert_eq!(recent.lock().by_channel.len(), MAX_REMEMBERED_CHANNELS);
        assert_eq!(
            recent.last_line("c0"),
            None,
            "the oldest channel is forgotten"
        );
        assert_eq!(
            recent
                .last_line(&format!("c{}", MAX_REMEMBERED_CHANNELS + 9))
                .as_deref(),
            Some("hi")
        );
        for i in 0..MAX_REMEMBERED_USERS + 5 {
            recent.command("room", &format!("u{i}"), "echo");
        }
        assert_eq!(
            recent.lock().by_channel["room"].by_user.len(),
            MAX_REMEMBERED_USERS
        );
        assert_eq!(recent.last_command_of("room", "u0"), None);
        assert_eq!(recent.last_command("room").as_deref(), Some("echo"));
    }
}
