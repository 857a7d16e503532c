//! JSON as Discord sends it: messages, reactions, interactions, threads and gateway frames,
//! with the fields twilight requires.

use serde_json::{Value, json};

/// A user.
#[must_use]
pub fn user(id: u64, name: &str, bot: bool) -> Value {
    json!({"id": id.to_string(), "username": name, "discriminator": "0", "avatar": null, "bot": bot})
}

/// A message by `author` in `channel`.
#[must_use]
pub fn message(id: u64, channel: u64, author: &Value, content: &str) -> Value {
    json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "guild_id": "1",
        "author": author, "content": content, "type": 0,
        "attachments": [], "embeds": [], "mentions": [], "mention_roles": [],
        "mention_everyone": false, "pinned": false, "tts": false,
        "timestamp": "2026-01-01T00:00:00.000000+00:00", "edited_timestamp": null,
    })
}

/// `message` edited at second `at` of the day.
#[must_use]
pub fn edited(mut message: Value, content: &str, at: u32) -> Value {
    message["content"] = Value::from(content);
    message["edited_timestamp"] = Value::from(format!(
        "2026-01-01T00:{:02}:{:02}.000000+00:00",
        at / 60,
        at % 60
    ));
    message
}

/// A reaction by `user` on `message`.
#[must_use]
pub fn reaction(channel: u64, message: u64, user: u64, emoji: &str, author: Option<u64>) -> Value {
    let mut value = json!({
        "channel_id": channel.to_string(), "message_id": message.to_string(),
        "user_id": user.to_string(), "guild_id": "1", "burst": false,
        "emoji": {"id": null, "name": emoji},
    });
    if let Some(author) = author {
        value["message_author_id"] = Value::from(author.to_string());
    }
    value
}

/// A button press by `clicker` on `message` in `channel`.
#[must_use]
pub fn press(id: u64, channel: u64, message: &Value, clicker: &Value, custom_id: &str) -> Value {
    json!({
        "id": id.to_string(), "application_id": "77", "type": 3, "token": format!("tok-{id}"),
        "version": 1, "attachment_size_limit": 1024, "authorizing_integration_owners": {},
        "entitlements": [], "guild_id": "1", "channel_id": channel.to_string(),
        "channel": {"id": channel.to_string(), "type": 0},
        "member": {"user": clicker, "roles": [], "joined_at": "2026-01-01T00:00:00.000000+00:00",
                   "deaf": false, "mute": false, "flags": 0},
        "message": message,
        "data": {"custom_id": custom_id, "component_type": 2},
    })
}

/// A public thread `id` in `parent`.
#[must_use]
pub fn thread(id: u64, parent: u64) -> Value {
    json!({"id": id.to_string(), "type": 11, "parent_id": parent.to_string(), "guild_id": "1", "name": "t"})
}

/// A gateway dispatch frame.
#[must_use]
pub fn dispatch(kind: &str, seq: u64, data: &Value) -> String {
    json!({"op": 0, "t": kind, "s": seq, "d": data}).to_string()
}
