//! The `meme` native tool: `search` finds up to 20 templates by literal name words (the
//! popular catalog first, then one search page), `generate` captions a template ID with a
//! top and a bottom caption and returns the image's URL for the answer (never the image).
//! Captions are data sent to Imgflip, not commands.

use serde_json::{Value, json};
use yetibot_redaction::Secrets;
use yetibot_tool_policy::Execution;

use super::{Failure, MAX_CAPTION_CHARS, MAX_QUERY_CHARS, wire};
use crate::args::ToolArgs;
use crate::services::AiServices;

/// What the model is told.
pub(crate) const DESCRIPTION: &str = "Imgflip memes. `search` finds up to 20 meme templates \
whose names contain the literal `query` (IDs and names). `generate` captions the template \
`template_id` with `top` and `bottom` text (one may be empty) and returns the public image URL \
to put in your answer. Captions are published on Imgflip: never put private information in \
them.";

/// The argument schema.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["search", "generate"]},
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "search: words of a template's name, matched literally."},
            "template_id": {"type": "string", "pattern": "^[0-9]{1,20}$", "description": "generate: a template ID from search."},
            "top": {"type": "string", "maxLength": MAX_CAPTION_CHARS, "description": "generate: the top caption."},
            "bottom": {"type": "string", "maxLength": MAX_CAPTION_CHARS, "description": "generate: the bottom caption."}
        },
        "required": ["action"],
        "additionalProperties": false
    })
}

/// A checked call.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MemeCall {
    Search(String),
    Generate {
        template_id: String,
        top: String,
        bottom: String,
    },
}

/// Reads and checks a call's arguments; no I/O.
pub(crate) fn read(arguments: &str, secrets: &Secrets) -> Result<MemeCall, &'static str> {
    let args = ToolArgs::parse(arguments)?;
    args.only(
        &["action", "query", "template_id", "top", "bottom"],
        "only action, query, template_id, top and bottom are accepted",
    )?;
    let call = match args.text("action", 1..=16, "action must be search or generate")? {
        Some(action) if action == "search" => {
            if ["template_id", "top", "bottom"]
                .iter()
                .any(|key| args.get(key).is_some())
            {
                return Err("search takes only query");
            }
            let query = args
                .text(
                    "query",
                    1..=MAX_QUERY_CHARS,
                    "query must be 1-200 characters",
                )?
                .ok_or("search needs query")?;
            let query = crate::args::one_line(&query, MAX_QUERY_CHARS);
            if query.is_empty() {
                return Err("query must not be blank");
            }
            MemeCall::Search(query)
        }
        Some(action) if action == "generate" => {
            if args.get("query").is_some() {
                return Err("generate takes template_id, top and bottom");
            }
            let template_id = args
                .text(
                    "template_id",
                    1..=32,
                    "template_id must be a template ID from search",
                )?
                .filter(|id| wire::is_template_id(id))
                .ok_or("generate needs template_id, a template ID from search")?;
            let caption = |key| {
                args.text(
                    key,
                    0..=MAX_CAPTION_CHARS,
                    "top and bottom are at most 1000 characters each",
                )
                .map(|text| text.map(|t| t.trim().to_owned()).unwrap_or_default())
            };
            let (top, bottom) = (caption("top")?, caption("bottom")?);
            if top.is_empty() && bottom.is_empty() {
                return Err("give top, bottom or both");
            }
            MemeCall::Generate {
                template_id,
                top,
                bottom,
            }
        }
        _ => return Err("action must be search or generate"),
    };
    let texts: Vec<&str> = match &call {
        MemeCall::Search(query) => vec![query],
        MemeCall::Generate { top, bottom, .. } => vec![top, bottom],
    };
    if texts.iter().any(|text| secrets.contains_secret(text)) {
        return Err("the arguments quote a configured credential");
    }
    Ok(call)
}

/// Runs one call. A caption whose outcome is unknown is [`Execution::Unknown`]: never
/// retried.
pub(crate) async fn run(services: &AiServices, arguments: &str, secrets: &Secrets) -> Execution {
    let call = match read(arguments, secrets) {
        Ok(call) => call,
        Err(problem) => return Execution::ToolError(format!("invalid arguments: {problem}")),
    };
    let account = match super::account(services) {
        Ok(account) => account,
        Err(failure) => return Execution::ToolError(failure.message().to_owned()),
    };
    let result = match call {
        MemeCall::Search(query) => super::find(services, account, &query)
            .await
            .map(|(templates, source)| {
                let templates: Vec<Value> = templates
                    .iter()
                    .map(|t| json!({"id": t.id, "name": t.name}))
                    .collect();
                json!({"source": source.name(), "templates": templates})
            }),
        MemeCall::Generate {
            template_id,
            top,
            bottom,
        } => super::caption(services, account, &template_id, &top, &bottom)
            .await
            .map(|meme| json!({"template_id": template_id, "url": meme.url, "page_url": meme.page_url})),
    };
    match result {
        Ok(value) => {
            let value = secrets.redact_json(&services.client.secrets().redact_json(&value));
            Execution::Success(value.to_string())
        }
        Err(Failure::Refused(message)) => Execution::ToolError(message),
        Err(Failure::Unknown(_)) => Execution::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yetibot_redaction::Secret;

    fn secrets() -> Secrets {
        Secrets::from_secrets([&Secret::new("imgflip-password-0451".to_owned())]).unwrap()
    }

    #[test]
    fn calls_are_checked_whole_before_anything_runs() {
        let s = secrets();
        assert_eq!(
            read(r#"{"action":"search","query":" drake \n"}"#, &s),
            Ok(MemeCall::Search("drake".into()))
        );
        assert_eq!(
            read(
                r#"{"action":"generate","template_id":"181913649","top":"","bottom":"friday"}"#,
                &s
            ),
            Ok(MemeCall::Generate {
                template_id: "181913649".into(),
                top: String::new(),
                bottom: "friday".into()
            })
        );
        let long = "x".repeat(1001);
        for bad in [
            r#"{"action":"search"}"#.to_owned(),
            r#"{"action":"search","query":"a","top":"b"}"#.to_owned(),
            r#"{"action":"generate","template_id":"12a","top":"x"}"#.to_owned(),
            r#"{"action":"generate","template_id":"1","top":" ","bottom":""}"#.to_owned(),
            format!(r#"{{"action":"generate","template_id":"1","top":"{long}"}}"#),
            r#"{"action":"draw"}"#.to_owned(),
            r#"{"action":"search","query":"a","url":"https://x"}"#.to_owned(),
            r#"{"action":"generate","template_id":"1","top":"imgflip-password-0451"}"#.to_owned(),
            r#"{"action":"search","query":"imgflip\u002dpassword-0451"}"#.to_owned(),
        ] {
            assert!(read(&bad, &s).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_schema_names_every_accepted_field() {
        let schema = schema();
        let properties = schema["properties"].as_object().unwrap();
        for key in ["action", "query", "template_id", "top", "bottom"] {
            assert!(properties.contains_key(key), "{key}");
        }
    }
}
