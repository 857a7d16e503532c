//! `react`: adds a reaction to the message that ran the command, through the platform the
//! request came from. The platform decides which emoji forms it accepts (Discord: Unicode,
//! `<:name:id>`, `<a:name:id>` or `name:id`; Slack: an emoji name).

use yetibot_json_util::Value;

use futures_util::future::BoxFuture;

use crate::platform::PlatformError;
use crate::registry::{Call, Category, CommandSpec, Handler};
use crate::value::Outcome;

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![CommandSpec::new("react", &[Category::UTIL]).route(
        Some(r"^\s*(\S+)\s*$"),
        "react <emoji> # react to your message (Discord: a Unicode emoji, <:name:id>, <a:name:id> or name:id; Slack: an emoji name)",
        React,
    )]
}

struct React;

impl Handler for React {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(platform) = call.runner.caller().platform.as_ref() else {
                return Outcome::error("react needs a chat platform; this request has none");
            };
            match platform.react(call.group(1), None).await {
                // Nothing to post: the reaction is the answer.
                Ok(()) => Outcome::Value(Value::Array(Vec::new())),
                Err(error) => Outcome::error(reaction_error(&error)),
            }
        })
    }
}

/// The chat text of a failed reaction.
fn reaction_error(error: &PlatformError) -> String {
    match error {
        PlatformError::Unconfirmed(_) => {
            "the platform did not confirm the reaction; it may or may not have been added"
                .to_owned()
        }
        other => other.to_string(),
    }
}
