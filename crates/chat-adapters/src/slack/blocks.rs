//! One outgoing message as Slack messages: the text in Slack's markup, split into sections
//! Slack shows whole (marked `verbatim`, so Slack never turns a plain `@channel` or
//! `@here` in model text into a mention), the buttons as an actions block under the last
//! one, and a long answer's file. Captions are Discord's (and the console's): Slack answers
//! carry none, as upstream Yetibot's never did.

use serde_json::{Value, json};

use super::inbound::ACTION_PREFIX;
use super::mrkdwn::{escape, to_mrkdwn};
use super::split::split;
use crate::fit::{ANSWER_FILE, excerpt, is_media_url};
use crate::reply::{Attachment, Outgoing};

/// The most characters of a section block Slack shows without shortening it.
pub const SECTION_UNITS: usize = 3_000;
/// The most Slack messages one outgoing message is split into; a longer one (after the
/// conversion to Slack's markup grew it) is posted as an excerpt and `answer.md`.
pub const MAX_PIECES: usize = 8;

/// Slack messages (without channel or thread) and the file to upload after them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    pub(crate) payloads: Vec<Value>,
    pub(crate) file: Option<Attachment>,
}

/// Renders `message`.
pub(crate) fn render(message: &Outgoing) -> Rendered {
    let mut text = to_mrkdwn(&message.text);
    if let Some(media) = message.media.as_deref().filter(|m| is_media_url(m)) {
        // Slack shows a linked image or video as a preview under the message.
        if !text.is_empty() {
            text.push('\n');
        }
        text.push('<');
        text.push_str(&escape(media));
        text.push('>');
    }
    let mut pieces = split(&text, SECTION_UNITS);
    let mut file = message.attachment.clone();
    if pieces.len() > MAX_PIECES && file.is_none() {
        pieces = split(
            &to_mrkdwn(&excerpt(&message.text, SECTION_UNITS * 2)),
            SECTION_UNITS,
        );
        file = Some(Attachment::text(
            ANSWER_FILE,
            "text/markdown; charset=utf-8",
            message.text.clone(),
        ));
    }
    if pieces.is_empty() && !message.buttons.is_empty() {
        pieces.push(String::new());
    }
    let count = pieces.len();
    let payloads = pieces
        .into_iter()
        .enumerate()
        .map(|(i, piece)| payload(message, piece, i + 1 == count))
        .collect();
    Rendered { payloads, file }
}

fn payload(message: &Outgoing, piece: String, last: bool) -> Value {
    let mut blocks = Vec::new();
    if !piece.is_empty() {
        blocks.push(json!({"type": "section",
            "text": {"type": "mrkdwn", "text": piece, "verbatim": true}}));
    }
    if last && !message.buttons.is_empty() {
        let elements: Vec<Value> = message
            .buttons
            .iter()
            .take(25)
            .map(|button| {
                json!({"type": "button",
                    "text": {"type": "plain_text", "text": button.label()},
                    "action_id": format!("{ACTION_PREFIX}{}", button.action.as_str()),
                    "value": button.token})
            })
            .collect();
        blocks.push(json!({"type": "actions", "elements": elements}));
    }
    // The text is what notifications and clients without blocks show.
    json!({"text": piece, "blocks": blocks})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Action;
    use crate::reply::{Button, Role};

    #[test]
    fn buttons_go_under_the_last_piece_and_no_caption_is_shown() {
        let mut message = Outgoing::text(
            Role::Answer,
            format!(
                "**hi** <!channel>\n\n{}",
                "word word word word\n".repeat(175)
            ),
        );
        message.caption = Some("m1 · 1 s · cost n/a".into());
        message.buttons = vec![Button {
            action: Action::Help,
            token: "t1".into(),
        }];
        let rendered = render(&message);
        assert_eq!(rendered.payloads.len(), 2);
        let first = rendered.payloads[0].to_string();
        assert!(first.contains("*hi* &lt;!channel&gt;"), "{first}");
        assert!(!first.contains("context") && !first.contains("actions"));
        let last = &rendered.payloads[1]["blocks"];
        assert_eq!(last[0]["text"]["verbatim"], true);
        assert_eq!(last[1]["type"], "actions");
        assert_eq!(last[1]["elements"][0]["action_id"], "yetibot-help");
        assert_eq!(last[1]["elements"][0]["value"], "t1");
        assert!(!rendered.payloads[1].to_string().contains("cost n/a"));
    }

    #[test]
    fn too_many_pieces_become_an_excerpt_and_the_file() {
        let text = "| a | b |\n|---|---|\n".to_owned() + &"| x | y |\n".repeat(6_000);
        let rendered = render(&Outgoing::text(Role::Answer, text.clone()));
        assert!(rendered.payloads.len() <= 2);
        assert_eq!(
            rendered.file.map(|f| f.content.to_vec()),
            Some(text.into_bytes())
        );
    }
}
