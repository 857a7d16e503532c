//! What the bot sends: answers as the command layer produced them, and the messages an
//! adapter posts once an answer is fitted to the platform's limits ([`crate::fit`]).

use crate::event::Action;

/// One answer, before it is fitted to a platform.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// The chat messages, in order, as Markdown. A message that is only a direct image,
    /// GIF or video URL is shown as that media.
    pub messages: Vec<String>,
    /// The metadata caption under an AI answer (model, duration, tools, cost).
    pub caption: Option<String>,
    /// Whether the answer reports an error.
    pub error: bool,
    /// The buttons under the answer's last message.
    pub buttons: Vec<Button>,
    /// Files that go with the answer (generated images), each posted as a message of its
    /// own after the text, as an upload where the platform takes one.
    pub files: Vec<Attachment>,
}

/// A button under a message. The token is opaque to the adapter and comes back in the
/// [`EventKind::Pressed`](crate::EventKind::Pressed) event when the button is pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    /// What the button does.
    pub action: Action,
    /// The token the bot looks the press up by.
    pub token: String,
}

impl Button {
    /// The button's label.
    #[must_use]
    pub fn label(&self) -> &'static str {
        self.action.label()
    }
}

/// A file sent with a message: a long answer as `answer.md`, or a generated image.
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The file name, e.g. `answer.md`.
    pub name: String,
    /// Its media type, e.g. `text/markdown; charset=utf-8` or `image/png`.
    pub media_type: &'static str,
    /// The file's content (shared, so an image is not copied per platform message).
    pub content: std::sync::Arc<[u8]>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("name", &self.name)
            .field("media_type", &self.media_type)
            .field("bytes", &self.content.len())
            .finish()
    }
}

impl Attachment {
    /// A text file.
    #[must_use]
    pub fn text(name: impl Into<String>, media_type: &'static str, text: String) -> Self {
        Self {
            name: name.into(),
            media_type,
            content: text.into_bytes().into(),
        }
    }

    /// Whether it is an image the platform may show inline.
    #[must_use]
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }
}

/// What kind of message an [`Outgoing`] is, so that adapters can style it and route it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Part of an answer.
    Answer,
    /// The transient card that shows an AI request's progress; edited while the request
    /// runs and removed after the answer is delivered.
    Status,
    /// A reply to a button: a confirmation card, help, details, or a refusal.
    Notice,
}

/// One message as an adapter posts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// What kind of message it is.
    pub role: Role,
    /// The text, as Markdown, within the platform's limits (empty for media only).
    pub text: String,
    /// A direct media URL to show (image, GIF or video).
    pub media: Option<String>,
    /// A file to attach.
    pub attachment: Option<Attachment>,
    /// The caption, as small text under the message.
    pub caption: Option<String>,
    /// Buttons under the message.
    pub buttons: Vec<Button>,
    /// Whether it reports an error.
    pub error: bool,
    /// The platform's ID of the message this answers (the command's), for platforms that
    /// link an answer to its message: the web console's threads start from either, and give
    /// the model both.
    pub in_reply_to: Option<String>,
}

impl Outgoing {
    /// A plain message of this role.
    #[must_use]
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            text: text.into(),
            media: None,
            attachment: None,
            caption: None,
            buttons: Vec::new(),
            error: false,
            in_reply_to: None,
        }
    }

    /// This message with buttons.
    #[must_use]
    pub fn with_buttons(mut self, buttons: Vec<Button>) -> Self {
        self.buttons = buttons;
        self
    }

    /// This message marked as an error.
    #[must_use]
    pub fn as_error(mut self) -> Self {
        self.error = true;
        self
    }
}

/// The live progress of an AI request, as the status card shows it: sanitized tool names
/// and outcomes and the shared call budget, never prompts, arguments, results or reasoning;
/// and, where the platform shows it, the answer's redacted text so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatusCard {
    /// Calls so far, in order.
    pub calls: Vec<StatusCall>,
    /// `(used, total)` of the host-call budget, once a tool loop reported it.
    pub budget: Option<(u8, u8)>,
    /// The answer's text so far, on platforms that show it as it is written
    /// ([`Limits::live_text`](crate::Limits::live_text)); already redacted.
    pub text: Option<String>,
}

/// One call on a [`StatusCard`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCall {
    /// The tool's `source/name`, or `None` when it is withheld.
    pub tool: Option<String>,
    /// What happened, in a word or two (`running`, `ok`, `error`, `unknown`, `refused`).
    pub outcome: String,
}

impl StatusCard {
    /// The card as Markdown: `Working…`, then one line per call and the budget.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        let mut text = String::from("Working…");
        for call in &self.calls {
            let tool = call.tool.as_deref().unwrap_or("(withheld)");
            text.push_str(&format!("\n- `{tool}`: {}", call.outcome));
        }
        if let Some((used, total)) = self.budget {
            text.push_str(&format!("\n\nTool calls: {used} of {total}"));
        }
        if let Some(so_far) = self.text.as_deref().filter(|t| !t.trim().is_empty()) {
            text.push_str("\n\n");
            text.push_str(so_far);
        }
        text
    }

    /// The card as a message.
    #[must_use]
    pub fn to_outgoing(&self) -> Outgoing {
        Outgoing::text(Role::Status, self.to_markdown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_card_shows_calls_and_budget_only() {
        let card = StatusCard {
            calls: vec![
                StatusCall {
                    tool: Some("yetibot/history".into()),
                    outcome: "ok".into(),
                },
                StatusCall {
                    tool: None,
                    outcome: "refused".into(),
                },
            ],
            budget: Some((2, 6)),
            text: None,
        };
        assert_eq!(
            card.to_markdown(),
            "Working…\n- `yetibot/history`: ok\n- `(withheld)`: refused\n\nTool calls: 2 of 6"
        );
        let writing = StatusCard {
            text: Some("The answer so".into()),
            ..card.clone()
        };
        assert!(writing.to_markdown().ends_with("2 of 6\n\nThe answer so"));
        assert_eq!(StatusCard::default().to_markdown(), "Working…");
        assert_eq!(card.to_outgoing().role, Role::Status);
    }
}
