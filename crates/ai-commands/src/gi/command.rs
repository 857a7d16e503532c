//! The `gi` command: `gi <prompt>` makes an image with xAI's Grok Imagine, or edits the
//! image attached to the message. The image goes with the reply as a file; the text says
//! what was made, and the data has the file's name, type and size.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use yetibot_command::{Call, CommandSpec, Handler, Outcome};
use yetibot_json_util::Value;
use yetibot_redaction::Secrets;

use crate::services::AiServices;

const USAGE: &str = "gi <prompt> # make an image with xAI's Grok Imagine (paid); with an image attached to the message, edit it";

/// The `gi` command over these services.
pub(crate) fn spec(services: &Arc<AiServices>) -> CommandSpec {
    CommandSpec::new("gi", crate::request::MEDIA_CATEGORIES)
        .hints(crate::request::PAID)
        .route(
            Some(r"\S"),
            USAGE,
            Gi {
                services: Arc::clone(services),
            },
        )
}

struct Gi {
    services: Arc<AiServices>,
}

impl Handler for Gi {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            // The image's place in the reply is held before it is paid for.
            let Ok(slot) = call.runner.reserve_file() else {
                return Outcome::error(
                    "gi: this reply already carries as many images as it may (4); nothing was sent",
                );
            };
            let made = match super::generate(
                &self.services,
                call.runner.caller(),
                call.args,
                &Secrets::default(),
            )
            .await
            {
                Ok(made) => made,
                Err(failure) => return Outcome::error(failure.message()),
            };
            let mut text = format!(
                "{} {} ({}×{} {})",
                if made.edited {
                    "Edited image"
                } else {
                    "Generated image"
                },
                made.file.name(),
                made.image.width(),
                made.image.height(),
                made.image.format(),
            );
            let mut summary = made.summary();
            if let Some(url) = slot.attach(made.file) {
                text.push_str(": ");
                text.push_str(&url);
                summary["url"] = serde_json::Value::String(url);
            }
            let data = crate::args::pipeline_data(&summary);
            Outcome::Data {
                value: Value::String(text),
                data,
                path: None,
            }
        })
    }
}
