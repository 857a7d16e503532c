//! The `react` native tool (Discord): the model adds an emoji reaction to the requesting
//! message, or to another message of the same channel or thread named by its numeric ID.
//! There is no channel argument, so a reaction can never land elsewhere.

use serde_json::json;
use yetibot_command::{PlatformError, Runner};
use yetibot_tool_policy::Execution;

use crate::args::ToolArgs;

/// The longest emoji text accepted (a custom emoji's `<a:name:id>` form included).
pub(crate) const MAX_EMOJI_CHARS: usize = 100;

/// A checked `react` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reaction {
    pub(crate) emoji: String,
    pub(crate) message_id: Option<String>,
}

/// Reads `react` arguments: `emoji` (required, 1–100 characters) and `message_id`
/// (optional, a Discord message ID as a string of 1–20 digits).
pub(crate) fn read(arguments: &str) -> Result<Reaction, &'static str> {
    let args = ToolArgs::parse(arguments)?;
    args.only(
        &["emoji", "message_id"],
        "react accepts only emoji and message_id",
    )?;
    let emoji = args
        .text(
            "emoji",
            1..=MAX_EMOJI_CHARS,
            "emoji must be 1 to 100 characters",
        )?
        .filter(|e| !e.trim().is_empty() && !e.chars().any(char::is_control))
        .ok_or("emoji is required: a Unicode emoji, <:name:id>, <a:name:id> or name:id")?;
    let message_id = args
        .text(
            "message_id",
            1..=20,
            "message_id must be a string of 1 to 20 digits",
        )?
        .map(|id| {
            if id.bytes().all(|b| b.is_ascii_digit()) {
                Ok(id)
            } else {
                Err("message_id must be a string of 1 to 20 digits")
            }
        })
        .transpose()?;
    Ok(Reaction { emoji, message_id })
}

/// Runs one `react` call through the request's platform, in its own channel or thread
/// only. An unconfirmed reaction is an unknown outcome, never retried.
pub(crate) async fn run(runner: Runner<'_>, arguments: &str) -> Execution {
    let reaction = match read(arguments) {
        Ok(reaction) => reaction,
        Err(reason) => return Execution::ToolError(format!("invalid arguments: {reason}")),
    };
    let Some(platform) = runner.caller().platform.as_ref() else {
        return Execution::ToolError("this request has no chat platform to react on".to_owned());
    };
    match platform
        .react(&reaction.emoji, reaction.message_id.as_deref())
        .await
    {
        Ok(()) => Execution::Success(json!({"reacted": true, "emoji": reaction.emoji}).to_string()),
        Err(PlatformError::Unconfirmed(_)) => Execution::Unknown,
        Err(error) => Execution::ToolError(error.to_string()),
    }
}

/// What a model is told the `react` tool does.
pub(crate) const DESCRIPTION: &str = "Adds an emoji reaction to the message that asked you, or to another message of \
    the same channel or thread given by its numeric ID. emoji is a Unicode emoji, \
    <:name:id>, <a:name:id> or name:id (not a :shortcode:). Success means the \
    platform confirmed it; an unconfirmed reaction is not retried.";

/// The `react` tool's argument schema.
pub(crate) fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["emoji"],
        "properties": {
            "emoji": {"type": "string", "minLength": 1, "maxLength": MAX_EMOJI_CHARS},
            "message_id": {"type": "string", "pattern": "^[0-9]{1,20}$",
                           "description": "A message of this channel or thread; the requesting message when left out."},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_one_emoji_and_an_optional_numeric_message() {
        assert_eq!(
            read(r#"{"emoji":"👍"}"#),
            Ok(Reaction {
                emoji: "👍".into(),
                message_id: None
            })
        );
        assert_eq!(
            read(r#"{"emoji":"<:yeti:123>","message_id":"1180000000000000001"}"#)
                .map(|r| r.message_id),
            Ok(Some("1180000000000000001".into()))
        );
        for bad in [
            "{}",
            r#"{"emoji":""}"#,
            r#"{"emoji":" "}"#,
            r#"{"emoji":"a\u0007"}"#,
            r#"{"emoji":"👍","message_id":"12a"}"#,
            r#"{"emoji":"👍","message_id":123}"#,
            r#"{"emoji":"👍","message_id":"123456789012345678901"}"#,
            r#"{"emoji":"👍","channel_id":"1"}"#,
            r#"{"emoji":"👍","emoji":"👎"}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}
