//! How an [`Outgoing`] message looks on Discord: a Components V2 container with the cyan
//! accent, its text, media as a gallery, an attached `answer.md` shown as a file, the caption
//! as `-#` subtext, and the buttons as action rows whose `custom_id` carries the action and
//! the bot's opaque token. Every payload turns mentions off, so nothing a model writes can
//! ping `@everyone`, a role or a user.
//!
//! Rendering is pure: the same message always gives the same JSON, which the golden tests
//! pin.

use serde_json::{Value, json};
use twilight_model::channel::message::MessageFlags;
use twilight_model::channel::message::component::{
    ActionRow, Button, ButtonStyle, Component, Container, FileDisplay, MediaGallery,
    MediaGalleryItem, TextDisplay, UnfurledMediaItem,
};

use crate::event::Action;
use crate::fit::units;
use crate::reply::{Outgoing, Role};

/// The accent of every card: cyan.
pub const ACCENT: u32 = 0x00_BC_D4;

/// The most UTF-16 units of text one V2 message may show, all text displays together.
pub(crate) const MESSAGE_TEXT_UNITS: usize = 4_000;

/// The prefix of every button's `custom_id`.
const CUSTOM_ID_PREFIX: &str = "yb:";

/// One message as Discord receives it: the JSON fields and, when a file is attached, its name
/// and bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Payload {
    pub(crate) fields: Value,
    pub(crate) file: Option<(String, Vec<u8>)>,
}

/// The payloads of one message: one card, or two when the caption would not fit beside a
/// full card (the caption and buttons then follow on a card of their own).
pub(crate) fn payloads(message: &Outgoing) -> Vec<Payload> {
    let caption = message.caption.as_deref().map(|c| format!("-# {c}"));
    let text_units = units(&message.text) + caption.as_deref().map_or(0, units);
    if caption.is_some() && text_units > MESSAGE_TEXT_UNITS {
        let mut body = message.clone();
        body.caption = None;
        body.buttons.clear();
        let mut tail = Outgoing::text(message.role, "");
        tail.caption.clone_from(&message.caption);
        tail.buttons.clone_from(&message.buttons);
        return vec![card(&body, None), card(&tail, caption.as_deref())];
    }
    vec![card(message, caption.as_deref())]
}

fn card(message: &Outgoing, caption: Option<&str>) -> Payload {
    let mut inner = Vec::new();
    if !message.text.is_empty() {
        inner.push(Component::TextDisplay(TextDisplay {
            content: message.text.clone(),
            id: None,
        }));
    }
    if let Some(url) = &message.media {
        inner.push(Component::MediaGallery(MediaGallery {
            id: None,
            items: vec![MediaGalleryItem {
                description: None,
                media: media(url),
                spoiler: None,
            }],
        }));
    }
    let mut file = None;
    if let Some(attachment) = &message.attachment {
        let reference = format!("attachment://{}", attachment.name);
        if attachment.media_type.starts_with("image/") {
            inner.push(Component::MediaGallery(MediaGallery {
                id: None,
                items: vec![MediaGalleryItem {
                    description: None,
                    media: media(&reference),
                    spoiler: None,
                }],
            }));
        } else {
            inner.push(Component::File(FileDisplay {
                file: media(&reference),
                id: None,
                spoiler: None,
            }));
        }
        file = Some((attachment.name.clone(), attachment.content.to_vec()));
    }
    if let Some(caption) = caption {
        inner.push(Component::TextDisplay(TextDisplay {
            content: caption.to_owned(),
            id: None,
        }));
    }
    if inner.is_empty() {
        // A container needs a child; an empty message still shows as an empty card.
        inner.push(Component::TextDisplay(TextDisplay {
            content: "\u{200b}".to_owned(),
            id: None,
        }));
    }
    let mut components = vec![Component::Container(Container {
        accent_color: Some(Some(ACCENT)),
        components: inner,
        id: None,
        spoiler: None,
    })];
    for row in message.buttons.chunks(5) {
        components.push(Component::ActionRow(ActionRow {
            components: row
                .iter()
                .map(|button| {
                    Component::Button(Button {
                        custom_id: Some(custom_id(button.action, &button.token)),
                        disabled: false,
                        emoji: None,
                        id: None,
                        label: Some(button.label().to_owned()),
                        sku_id: None,
                        style: match button.action {
                            Action::ConfirmRerun => ButtonStyle::Primary,
                            _ => ButtonStyle::Secondary,
                        },
                        url: None,
                    })
                })
                .collect(),
            id: None,
        }));
    }
    let mut fields = json!({
        "flags": MessageFlags::IS_COMPONENTS_V2.bits(),
        "components": components,
        "allowed_mentions": { "parse": [] },
    });
    if let Some((name, _)) = &file {
        fields["attachments"] = json!([{ "id": 0, "filename": name }]);
    } else {
        // An edit without a file drops the files an earlier version had.
        fields["attachments"] = json!([]);
    }
    Payload { fields, file }
}

fn media(url: &str) -> UnfurledMediaItem {
    UnfurledMediaItem {
        content_type: None,
        height: None,
        proxy_url: None,
        url: url.to_owned(),
        width: None,
    }
}

/// A button's `custom_id`: `yb:<action>:<token>`.
pub(crate) fn custom_id(action: Action, token: &str) -> String {
    format!("{CUSTOM_ID_PREFIX}{}:{token}", action.as_str())
}

/// The action and token of one of our buttons' `custom_id`; anything else is `None`.
pub(crate) fn parse_custom_id(id: &str) -> Option<(Action, String)> {
    let rest = id.strip_prefix(CUSTOM_ID_PREFIX)?;
    let (action, token) = rest.split_once(':')?;
    let token_ok = !token.is_empty()
        && token.len() <= 90
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    token_ok.then(|| Action::parse(action).map(|a| (a, token.to_owned())))?
}

/// Whether a message is a status card, which travels on the ancillary lane.
pub(crate) fn is_status(message: &Outgoing) -> bool {
    message.role == Role::Status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{Limits, fit};
    use crate::reply::{Answer, Attachment, Button, StatusCard};
    use expect_test::{Expect, expect};

    fn check(message: &Outgoing, expect: Expect) {
        let shown: Vec<String> = payloads(message)
            .iter()
            .map(|p| {
                let mut text = serde_json::to_string_pretty(&p.fields).expect("json");
                if let Some((name, bytes)) = &p.file {
                    text.push_str(&format!("\n+ file {name} ({} bytes)", bytes.len()));
                }
                text
            })
            .collect();
        expect.assert_eq(&shown.join("\n---\n"));
    }

    fn answer(text: &str) -> Answer {
        Answer {
            files: Vec::new(),
            messages: vec![text.to_owned()],
            caption: Some("llama3.2 · 0.4 s · cost n/a".into()),
            error: false,
            buttons: vec![
                Button {
                    action: Action::RunAgain,
                    token: "c7".into(),
                },
                Button {
                    action: Action::Help,
                    token: "c7".into(),
                },
            ],
        }
    }

    #[test]
    fn an_answer_is_a_cyan_card_with_caption_subtext_and_buttons() {
        let out = fit(&answer("Hello @everyone"), &Limits::DISCORD);
        check(
            &out[0],
            expect![[r#"
                {
                  "allowed_mentions": {
                    "parse": []
                  },
                  "attachments": [],
                  "components": [
                    {
                      "accent_color": 48340,
                      "components": [
                        {
                          "content": "Hello @everyone",
                          "type": 10
                        },
                        {
                          "content": "-# llama3.2 · 0.4 s · cost n/a",
                          "type": 10
                        }
                      ],
                      "type": 17
                    },
                    {
                      "components": [
                        {
                          "custom_id": "yb:run-again:c7",
                          "label": "Run again",
                          "style": 2,
                          "type": 2
                        },
                        {
                          "custom_id": "yb:help:c7",
                          "label": "Help",
                          "style": 2,
                          "type": 2
                        }
                      ],
                      "type": 1
                    }
                  ],
                  "flags": 32768
                }"#]],
        );
    }

    #[test]
    fn a_long_answer_is_an_excerpt_with_the_file_shown() {
        let text = format!("# Report\n\n{}", "line of text\n".repeat(400));
        let mut long = answer(&text);
        long.buttons.clear();
        let out = fit(&long, &Limits::DISCORD);
        let payload = &payloads(&out[0])[0];
        let file = payload.file.as_ref().expect("answer.md");
        assert_eq!(file.0, "answer.md");
        assert_eq!(file.1, text.as_bytes());
        let shown = serde_json::to_string_pretty(&payload.fields["components"][0]["components"][1])
            .expect("json");
        expect![[r#"
            {
              "file": {
                "url": "attachment://answer.md"
              },
              "type": 13
            }"#]]
        .assert_eq(&shown);
        assert_eq!(
            payload.fields["attachments"],
            json!([{ "id": 0, "filename": "answer.md" }])
        );
    }

    #[test]
    fn media_urls_are_galleries_and_status_cards_plain() {
        let mut media = Outgoing::text(Role::Answer, "");
        media.media = Some("https://x.test/cat.gif".into());
        check(
            &media,
            expect![[r#"
                {
                  "allowed_mentions": {
                    "parse": []
                  },
                  "attachments": [],
                  "components": [
                    {
                      "accent_color": 48340,
                      "components": [
                        {
                          "items": [
                            {
                              "media": {
                                "url": "https://x.test/cat.gif"
                              }
                            }
                          ],
                          "type": 12
                        }
                      ],
                      "type": 17
                    }
                  ],
                  "flags": 32768
                }"#]],
        );
        let status = StatusCard::default().to_outgoing();
        assert!(is_status(&status));
        assert_eq!(
            payloads(&status)[0].fields["components"][0]["components"][0]["content"],
            "Working…"
        );
    }

    #[test]
    fn an_image_attachment_is_referenced_in_a_gallery() {
        let mut message = Outgoing::text(Role::Answer, "A cat");
        message.attachment = Some(Attachment {
            name: "cat.png".into(),
            media_type: "image/png",
            content: b"png".to_vec().into(),
        });
        let payload = &payloads(&message)[0];
        assert_eq!(
            payload.fields["components"][0]["components"][1]["items"][0]["media"]["url"],
            "attachment://cat.png"
        );
    }

    #[test]
    fn a_full_card_moves_its_caption_and_buttons_to_a_second_one() {
        let full = answer(&"x".repeat(4_000));
        let out = fit(&full, &Limits::DISCORD);
        let cards = payloads(&out[0]);
        assert_eq!(cards.len(), 2);
        assert!(
            cards[0].fields["components"]
                .as_array()
                .is_some_and(|c| c.len() == 1)
        );
        assert_eq!(
            cards[1].fields["components"][0]["components"][0]["content"],
            "-# llama3.2 · 0.4 s · cost n/a"
        );
        assert_eq!(cards[1].fields["components"][1]["type"], 1);
    }

    #[test]
    fn custom_ids_round_trip_and_foreign_ones_are_refused() {
        for action in Action::ALL {
            assert_eq!(
                parse_custom_id(&custom_id(action, "c12")),
                Some((action, "c12".to_owned()))
            );
        }
        for foreign in [
            "",
            "yb:",
            "yb:help",
            "yb:nope:c1",
            "other:help:c1",
            "yb:help:",
            "yb:help:a b",
            &format!("yb:help:{}", "a".repeat(91)),
        ] {
            assert_eq!(parse_custom_id(foreign), None, "{foreign}");
        }
    }
}
