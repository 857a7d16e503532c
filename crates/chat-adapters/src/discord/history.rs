//! The text a Discord message contributes to a thread's history: its legacy `content` and
//! the text of its Components V2 displays (nested in containers and sections), media links by
//! URL, and for an answer with `answer.md` attached, the excerpt it shows. Files are never
//! downloaded. The bot's own `-#` caption lines are left out: they describe how an answer was
//! made, not what was said.

use twilight_model::channel::Message;
use twilight_model::channel::message::component::Component;

/// The text of `message` for history; empty when it shows none.
pub(crate) fn message_text(message: &Message, from_bot: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !message.content.trim().is_empty() {
        parts.push(message.content.clone());
    }
    for component in &message.components {
        collect(component, from_bot, &mut parts, 0);
    }
    parts.join("\n\n")
}

fn collect(component: &Component, from_bot: bool, parts: &mut Vec<String>, depth: usize) {
    // Discord nests at most a few levels; a deeper payload is not ours to walk.
    if depth > 8 {
        return;
    }
    match component {
        Component::TextDisplay(text) => {
            let caption = from_bot && text.content.starts_with("-# ");
            if !caption && !text.content.trim_matches(['\u{200b}', ' ']).is_empty() {
                parts.push(text.content.clone());
            }
        }
        Component::Container(container) => {
            for inner in &container.components {
                collect(inner, from_bot, parts, depth + 1);
            }
        }
        Component::Section(section) => {
            for inner in &section.components {
                collect(inner, from_bot, parts, depth + 1);
            }
        }
        Component::MediaGallery(gallery) => {
            for item in &gallery.items {
                if !item.media.url.starts_with("attachment://") {
                    parts.push(item.media.url.clone());
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: serde_json::Value) -> Message {
        let mut base = serde_json::json!({
            "attachments": [], "author": {"id": "5", "username": "u", "discriminator": "0", "avatar": null},
            "channel_id": "1", "content": "", "edited_timestamp": null, "embeds": [],
            "id": "9", "type": 0, "mention_everyone": false, "mention_roles": [],
            "mentions": [], "pinned": false, "timestamp": "2026-01-01T00:00:00.000000+00:00",
            "tts": false
        });
        if let (Some(base), Some(extra)) = (base.as_object_mut(), json.as_object()) {
            base.extend(extra.clone());
        }
        serde_json::from_value(base).expect("a message")
    }

    #[test]
    fn legacy_and_v2_text_and_media_links_but_not_captions_or_files() {
        let legacy = message(serde_json::json!({"content": "hi there"}));
        assert_eq!(message_text(&legacy, false), "hi there");
        let card = message(serde_json::json!({
            "flags": 32768,
            "components": [{"type": 17, "components": [
                {"type": 10, "content": "The answer"},
                {"type": 12, "items": [{"media": {"url": "https://x.test/a.png"}}]},
                {"type": 13, "file": {"url": "attachment://answer.md"}},
                {"type": 10, "content": "-# m · 1.0 s · cost n/a"}
            ]}, {"type": 1, "components": [{"type": 2, "style": 2, "custom_id": "yb:help:c1", "label": "Help"}]}]
        }));
        assert_eq!(
            message_text(&card, true),
            "The answer\n\nhttps://x.test/a.png"
        );
        // A person's subtext is what they said.
        assert!(message_text(&card, false).ends_with("-# m · 1.0 s · cost n/a"));
    }
}
