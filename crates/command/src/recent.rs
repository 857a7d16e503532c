//! The last chat line, the last command, and each user's last command of every channel, kept
//! in bounded memory for `that` and the bare prefix that re-runs a command.

use crate::limits::{MAX_REMEMBERED_BYTES, MAX_REMEMBERED_CHANNELS, MAX_REMEMBERED_USERS};
use std::collections::HashMap;
use std::sync::Mutex;

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
