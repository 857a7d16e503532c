//! What a tool call returns: success, tool error or unknown outcome, with bounded, redacted
//! text that is marked as untrusted data.

use serde_json::{Value, json};
use yetibot_conversation::limits::MAX_RESULT_CHARS;
use yetibot_redaction::Secrets;

use crate::sanitize::bounded_texts;

/// The result of one tool call. Calls are never retried, whatever the outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// The server answered with a result.
    Success(ToolOutput),
    /// The server answered that the tool failed (`isError`), or rejected the request.
    ToolError(ToolOutput),
    /// The request was sent but no valid answer arrived: the tool may or may not have run.
    Unknown(UnknownReason),
}

impl CallOutcome {
    /// Whether the tool may or may not have run, so the caller must not assume either.
    #[must_use]
    pub fn is_unknown(&self) -> bool {
        matches!(self, Self::Unknown(_))
    }

    /// The output of a success or tool error.
    #[must_use]
    pub fn output(&self) -> Option<&ToolOutput> {
        match self {
            Self::Success(output) | Self::ToolError(output) => Some(output),
            Self::Unknown(_) => None,
        }
    }

    /// A JSON projection for display and for the command-line example:
    /// `{"outcome": "success"|"tool_error"|"unknown", "untrusted": true, ...}`. Its `text`
    /// is the display form ([`ToolOutput::display_text`]).
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Self::Success(out) | Self::ToolError(out) => json!({
                "outcome": if matches!(self, Self::Success(_)) { "success" } else { "tool_error" },
                "untrusted": true,
                "text": out.display_text(),
                "truncated": out.truncated(),
                "mediaOmitted": out.media_omitted(),
            }),
            Self::Unknown(reason) => json!({
                "outcome": "unknown",
                "reason": reason.as_str(),
            }),
        }
    }
}

/// Why a sent call has no confirmed outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnknownReason {
    /// No answer within `:timeout-ms`; `notifications/cancelled` for the call was sent
    /// (or the connection failed while sending it) before the outcome was returned.
    Timeout,
    /// The connection or process ended before an answer arrived.
    Disconnected,
    /// The answer was not a valid tool result.
    MalformedReply,
}

impl UnknownReason {
    /// A short, stable description.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timed out",
            Self::Disconnected => "disconnected",
            Self::MalformedReply => "malformed reply",
        }
    }
}

/// The text of a tool's answer. It came from a server: treat it as untrusted data, never as
/// instructions. Configured credentials are already redacted and the text is bounded. It
/// exists in two forms: the model's ([`ToolOutput::untrusted_text`]) and people's
/// ([`ToolOutput::display_text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    text: String,
    display: String,
    truncated: bool,
    media_omitted: usize,
}

impl ToolOutput {
    /// The untrusted, redacted, bounded text for the model; otherwise exactly what the
    /// server sent (structured content included).
    #[must_use]
    pub fn untrusted_text(&self) -> &str {
        &self.text
    }

    /// The same text for people (a chat message, a log): [`sanitize_display`]ed, then
    /// redacted and bounded.
    ///
    /// [`sanitize_display`]: crate::sanitize_display
    #[must_use]
    pub fn display_text(&self) -> &str {
        &self.display
    }

    /// Whether the text was shortened to the result bound.
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// How many image or audio blocks were replaced by a note.
    #[must_use]
    pub fn media_omitted(&self) -> usize {
        self.media_omitted
    }

    /// Builds an output from a `tools/call` result object: text blocks joined by newlines,
    /// binary blocks replaced by notes, structured content used when there is no text; then
    /// redacted and bounded. Returns `(output, is_error)`, or `None` if `result` is not an
    /// object with a `content` array or structured content.
    pub(crate) fn from_result(result: &Value, secrets: &Secrets) -> Option<(Self, bool)> {
        let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
        let content = result.get("content").and_then(Value::as_array);
        let structured = result.get("structuredContent");
        if content.is_none() && structured.is_none() {
            return None;
        }
        let mut parts: Vec<String> = Vec::new();
        let mut media_omitted = 0;
        for block in content.into_iter().flatten() {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    parts.push(block.get("text")?.as_str()?.to_owned());
                }
                Some(kind @ ("image" | "audio")) => {
                    media_omitted += 1;
                    parts.push(format!(
                        "[{kind} omitted: binary content is not sent to the text model]"
                    ));
                }
                Some("resource") => match block.pointer("/resource/text").and_then(Value::as_str) {
                    Some(text) => parts.push(text.to_owned()),
                    None => {
                        media_omitted += 1;
                        parts.push("[binary resource omitted]".to_owned());
                    }
                },
                Some("resource_link") => parts.push("[resource link omitted]".to_owned()),
                _ => parts.push("[unsupported content omitted]".to_owned()),
            }
        }
        let has_text = content.is_some_and(|c| {
            c.iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        });
        if let (false, Some(structured)) = (has_text, structured) {
            parts.push(serde_json::to_string(structured).ok()?);
        }
        let joined = parts.join("\n");
        let (text, display, truncated) = bounded_texts(&joined, secrets, MAX_RESULT_CHARS);
        Some((
            Self {
                text,
                display,
                truncated,
                media_omitted,
            },
            is_error,
        ))
    }

    pub(crate) fn from_rejection(code: i32, message: &str, secrets: &Secrets) -> Self {
        let (message, display, _) = bounded_texts(message, secrets, 500);
        let prefix = format!("the server rejected the call (JSON-RPC error {code}): ");
        Self {
            text: format!("{prefix}{message}"),
            display: format!("{prefix}{display}"),
            truncated: false,
            media_omitted: 0,
        }
    }
}

/// What a host-side call ([`crate::Session::call_for_host`]) got back, unredacted: for the
/// host's own checks only, never for a model or a chat as it stands.
#[derive(Debug, Clone, PartialEq)]
pub enum HostReply {
    /// The server's `CallToolResult` object, `isError` included.
    Result(Value),
    /// The server refused the request with a JSON-RPC error (the call did not run as a tool).
    Rejected {
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message: untrusted text.
        message: String,
    },
    /// The request was sent and its outcome is unknown.
    Unknown(UnknownReason),
}
