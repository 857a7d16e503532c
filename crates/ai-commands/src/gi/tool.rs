//! The `gi` native tool: one prompt of at most 2,000 characters, nothing else. It makes an
//! image (or edits the image attached to the request's own message) and the image goes with
//! the answer; the result tells the model what was made, never the image's bytes.

use serde_json::{Value, json};
use yetibot_command::Runner;
use yetibot_redaction::Secrets;
use yetibot_tool_policy::Execution;

use super::{Failure, MAX_PROMPT_CHARS};
use crate::args::ToolArgs;
use crate::services::AiServices;

/// What the model is told.
pub(crate) const DESCRIPTION: &str = "Grok Imagine (xAI): makes one image from `prompt`, or \
edits the image attached to the user's message when there is one. The image is attached to \
your answer automatically: describe it briefly (its public `url`, when the result has one, \
may be linked). Paid per image: call it only when an image is asked for. The prompt and any \
attached image are sent to xAI.";

/// The argument schema.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": MAX_PROMPT_CHARS, "description": "What the image should show, or how to change the attached image."}
        },
        "required": ["prompt"],
        "additionalProperties": false
    })
}

/// The checked prompt; no I/O.
pub(crate) fn read(arguments: &str, secrets: &Secrets) -> Result<String, &'static str> {
    let args = ToolArgs::parse(arguments)?;
    args.only(&["prompt"], "only prompt is accepted")?;
    let prompt = args
        .text(
            "prompt",
            1..=MAX_PROMPT_CHARS,
            "prompt must be 1-2000 characters",
        )?
        .ok_or("gi needs prompt")?;
    if prompt.trim().is_empty() {
        return Err("prompt must not be blank");
    }
    if secrets.contains_secret(&prompt) {
        return Err("the prompt quotes a configured credential");
    }
    Ok(prompt)
}

/// Runs one call. A request whose outcome is unknown is [`Execution::Unknown`]: never
/// retried, and the loop offers no more tools.
pub(crate) async fn run(
    services: &AiServices,
    runner: Runner<'_>,
    arguments: &str,
    secrets: &Secrets,
) -> Execution {
    let prompt = match read(arguments, secrets) {
        Ok(prompt) => prompt,
        Err(problem) => return Execution::ToolError(format!("invalid arguments: {problem}")),
    };
    // The image's place in the answer is held before it is paid for.
    let Ok(slot) = runner.reserve_file() else {
        return Execution::ToolError(
            "this answer already carries as many images as it may (4); no image was made"
                .to_owned(),
        );
    };
    match super::generate(services, runner.caller(), &prompt, secrets).await {
        Ok(made) => {
            let mut result = made.summary();
            result["delivered"] = json!("attached to your answer");
            if let Some(url) = slot.attach(made.file) {
                result["url"] = json!(url);
            }
            Execution::Success(result.to_string())
        }
        Err(Failure::NotMade(message)) => Execution::ToolError(message),
        Err(Failure::Unknown(_)) => Execution::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yetibot_redaction::Secret;

    #[test]
    fn only_a_bounded_prompt_is_accepted() {
        let secrets =
            Secrets::from_secrets([&Secret::new("xai-key-canary-1234".to_owned())]).unwrap();
        assert_eq!(
            read(r#"{"prompt":"a yeti on a helicopter"}"#, &secrets),
            Ok("a yeti on a helicopter".to_owned())
        );
        let long = format!(r#"{{"prompt":"{}"}}"#, "x".repeat(2001));
        for bad in [
            "{}",
            r#"{"prompt":"  "}"#,
            r#"{"prompt":"a","model":"grok-2-image"}"#,
            r#"{"prompt":"a","provider":"openai"}"#,
            r#"{"prompt":"use xai-key-canary-1234"}"#,
            r#"{"prompt":1}"#,
            long.as_str(),
        ] {
            assert!(read(bad, &secrets).is_err(), "{bad}");
        }
    }
}
