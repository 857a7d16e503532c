//! Names for Slack's IDs: a conversation's history key (`#general`, or the other person's
//! user name for a direct message) and people's display names, from `conversations.info`
//! and `users.info`.
//!
//! History keys rooms by name, as upstream Yetibot does, so every command needs its room's
//! name. The cache keeps a bounded number of names and looks each up again once it is
//! older than the refresh interval (a renamed channel takes a new key from then on); when
//! that lookup fails, the name it had is kept rather than failing the command.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::api::{Api, ApiError};

/// How many names of each kind are kept.
pub const NAME_CAPACITY: usize = 4_096;
/// How long a name is used before it is looked up again.
pub const NAME_REFRESH: Duration = Duration::from_secs(30 * 60);

/// Why a name could not be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NameError {
    /// Slack refused: the `*:read` scopes are missing, or the ID is unknown.
    Refused,
    /// Slack did not answer usefully.
    Unavailable,
}

#[derive(Debug)]
struct Entry {
    name: String,
    fetched: Instant,
}

/// The bounded, refreshed cache.
#[derive(Debug)]
pub(crate) struct Names {
    rooms: Mutex<HashMap<String, Entry>>,
    users: Mutex<HashMap<String, Entry>>,
    capacity: usize,
    refresh: Duration,
}

impl Names {
    pub(crate) fn new(capacity: usize, refresh: Duration) -> Self {
        Self {
            rooms: Mutex::new(HashMap::new()),
            users: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            refresh,
        }
    }

    /// The history key of conversation `channel`.
    pub(crate) async fn room(&self, api: &Api, channel: &str) -> Result<String, NameError> {
        if let Some(name) = self.fresh(&self.rooms, channel) {
            return Ok(name);
        }
        let looked_up = async {
            let info = api
                .get("conversations.info", &[("channel", channel)])
                .await
                .map_err(refusal)?;
            let conversation = info.get("channel").ok_or(NameError::Unavailable)?;
            if conversation.get("is_im").and_then(Value::as_bool) == Some(true) {
                let user = conversation
                    .get("user")
                    .and_then(Value::as_str)
                    .ok_or(NameError::Unavailable)?;
                let person = self.user_record(api, user).await?;
                return handle(&person).ok_or(NameError::Unavailable);
            }
            let name = conversation
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| is_name(n))
                .ok_or(NameError::Unavailable)?;
            Ok(format!("#{name}"))
        };
        self.settle(&self.rooms, channel, looked_up.await)
    }

    /// The display name of user `user`.
    pub(crate) async fn user(&self, api: &Api, user: &str) -> Result<String, NameError> {
        if let Some(name) = self.fresh(&self.users, user) {
            return Ok(name);
        }
        let looked_up = async {
            let person = self.user_record(api, user).await?;
            display_name(&person).ok_or(NameError::Unavailable)
        };
        self.settle(&self.users, user, looked_up.await)
    }

    async fn user_record(&self, api: &Api, user: &str) -> Result<Value, NameError> {
        let info = api
            .get("users.info", &[("user", user)])
            .await
            .map_err(refusal)?;
        info.get("user").cloned().ok_or(NameError::Unavailable)
    }

    fn fresh(&self, map: &Mutex<HashMap<String, Entry>>, id: &str) -> Option<String> {
        lock(map)
            .get(id)
            .filter(|e| e.fetched.elapsed() < self.refresh)
            .map(|e| e.name.clone())
    }

    /// Stores a fresh name, or falls back to the stale one when the lookup failed.
    fn settle(
        &self,
        map: &Mutex<HashMap<String, Entry>>,
        id: &str,
        looked_up: Result<String, NameError>,
    ) -> Result<String, NameError> {
        let mut map = lock(map);
        match looked_up {
            Ok(name) => {
                if map.len() >= self.capacity && !map.contains_key(id) {
                    // Full: the oldest entry makes room.
                    if let Some(oldest) = map
                        .iter()
                        .min_by_key(|(_, e)| e.fetched)
                        .map(|(k, _)| k.clone())
                    {
                        map.remove(&oldest);
                    }
                }
                map.insert(
                    id.to_owned(),
                    Entry {
                        name: name.clone(),
                        fetched: Instant::now(),
                    },
                );
                Ok(name)
            }
            Err(error) => map.get(id).map(|e| e.name.clone()).ok_or(error),
        }
    }
}

fn lock(map: &Mutex<HashMap<String, Entry>>) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn refusal(error: ApiError) -> NameError {
    match error {
        ApiError::Refused { .. } => NameError::Refused,
        ApiError::RateLimited | ApiError::Unconfirmed(_) => NameError::Unavailable,
    }
}

/// A name fit for a history key and a chat line: not blank, at most 200 characters, no
/// control characters.
fn is_name(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= 200 && !name.chars().any(char::is_control)
}

/// A user's handle (`name`), the key of a direct message's history.
fn handle(user: &Value) -> Option<String> {
    user.get("name")
        .and_then(Value::as_str)
        .filter(|n| is_name(n))
        .map(str::to_owned)
}

/// How a user is shown: their display name, else their real name, else their handle.
fn display_name(user: &Value) -> Option<String> {
    [
        "/profile/display_name",
        "/profile/real_name",
        "/real_name",
        "/name",
    ]
    .iter()
    .filter_map(|p| user.pointer(p).and_then(Value::as_str))
    .find(|n| is_name(n))
    .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_prefer_what_people_see() {
        let user = json!({"name": "ada", "real_name": "Ada L", "profile": {"display_name": ""}});
        assert_eq!(display_name(&user).as_deref(), Some("Ada L"));
        assert_eq!(handle(&user).as_deref(), Some("ada"));
        assert_eq!(display_name(&json!({"name": "\u{7}"})), None);
    }
}
