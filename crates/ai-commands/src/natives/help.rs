//! The `help` native tool: pages of registered command topics, or one topic's usage lines.
//! It reads the registry only: it never runs a command, and runtime aliases (whose bodies
//! are users' text) are not topics.

use crate::args::ToolArgs;
use serde_json::json;
use yetibot_command::Registry;

/// Topics per page, at most and by default.
pub const MAX_HELP_TOPICS: u32 = 20;
/// The longest serialized `help` result, in characters.
pub const MAX_HELP_CHARS: usize = 10_000;

/// Why a `help` call failed; the message quotes no argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelpToolError {
    /// The arguments break the tool's rules.
    #[error("invalid arguments: {0}")]
    InvalidArguments(&'static str),
    /// No registered command has that name.
    #[error("no command has that name; call help without a topic to list them")]
    UnknownTopic,
}

/// What a `help` call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Request {
    Page { after: Option<String>, limit: u32 },
    Topic(String),
}

fn read(arguments: &str) -> Result<Request, HelpToolError> {
    let args = ToolArgs::parse(arguments).map_err(HelpToolError::InvalidArguments)?;
    let checked = || -> Result<Request, &'static str> {
        args.only(
            &["topic", "after", "limit"],
            "help accepts only topic, after and limit",
        )?;
        if let Some(topic) = args.text(
            "topic",
            1..=100,
            "topic must be a command name of 1 to 100 characters",
        )? {
            if args.get("after").is_some() || args.get("limit").is_some() {
                return Err("with topic, leave out after and limit");
            }
            return Ok(Request::Topic(topic));
        }
        Ok(Request::Page {
            after: args.text(
                "after",
                1..=100,
                "after must be a topic name of 1 to 100 characters",
            )?,
            limit: args.integer(
                "limit",
                1..=MAX_HELP_TOPICS,
                MAX_HELP_TOPICS,
                "limit must be an integer from 1 to 20",
            )?,
        })
    };
    checked().map_err(HelpToolError::InvalidArguments)
}

/// Whether `help` arguments pass every static rule.
pub(crate) fn help_arguments_ok(arguments: &str) -> bool {
    read(arguments).is_ok()
}

/// The `help` tool. Without `topic`: `{"topics": [{"name", "summary"}], "has_more",
/// "next_after"}`, topics in name order after the `after` cursor, at most `limit` (1–20,
/// default 20). With `topic` (a command name): `{"topic", "usage": [...], "truncated"}`,
/// its usage lines, shortened to fit [`MAX_HELP_CHARS`].
///
/// # Errors
///
/// [`HelpToolError`] for invalid arguments or a name no command has.
pub fn help_tool(registry: &Registry, arguments: &str) -> Result<String, HelpToolError> {
    match read(arguments)? {
        Request::Topic(name) => {
            let spec = registry.get(&name).ok_or(HelpToolError::UnknownTopic)?;
            let mut usage: Vec<String> = Vec::new();
            let mut truncated = false;
            // Room for the envelope; each line is counted as serialized.
            let mut used = json!({"topic": name, "usage": [], "truncated": true})
                .to_string()
                .chars()
                .count();
            for line in spec.help() {
                let size = serde_json::Value::String(line.clone())
                    .to_string()
                    .chars()
                    .count()
                    + 1;
                if used + size > MAX_HELP_CHARS {
                    truncated = true;
                    break;
                }
                used += size;
                usage.push(line);
            }
            Ok(json!({"topic": name, "usage": usage, "truncated": truncated}).to_string())
        }
        Request::Page { after, limit } => {
            let mut topics = Vec::new();
            let mut remaining = registry
                .iter()
                .filter(|spec| after.as_deref().is_none_or(|a| spec.name.as_str() > a));
            for spec in remaining
                .by_ref()
                .take(usize::try_from(limit).unwrap_or(20))
            {
                let first = spec.help().into_iter().next().unwrap_or_default();
                let summary: String = match first.split_once(" # ") {
                    Some((_, what)) => what.chars().take(200).collect(),
                    None => String::new(),
                };
                topics.push(json!({"name": spec.name, "summary": summary}));
            }
            let has_more = remaining.next().is_some();
            let next_after = if has_more {
                topics
                    .last()
                    .and_then(|t| t["name"].as_str().map(str::to_owned))
            } else {
                None
            };
            // 20 topics of at most 100 + 200 characters stay far inside the bound.
            Ok(
                json!({"topics": topics, "has_more": has_more, "next_after": next_after})
                    .to_string(),
            )
        }
    }
}

/// What a model is told the `help` tool does.
pub(crate) const DESCRIPTION: &str = "Lists this bot's commands, 20 per page (pass next_after as after for the next \
    page), or shows one command's usage with topic. It never runs a command.";

/// The `help` tool's argument schema.
pub(crate) fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "topic": {"type": "string", "minLength": 1, "maxLength": 100,
                      "description": "A command name; leave out after and limit with it."},
            "after": {"type": "string", "minLength": 1, "maxLength": 100,
                      "description": "List the commands after this one."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HELP_TOPICS,
                      "description": "Commands per page (default 20)."},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use yetibot_command::Outcome;
    use yetibot_command::{CommandSpec, Plain};

    fn registry(n: usize) -> Registry {
        let mut registry = Registry::new();
        for i in 0..n {
            registry.add(CommandSpec::new(&format!("cmd{i:02}"), &[]).route(
                None,
                &format!("cmd{i:02} <x> # does thing {i}"),
                Plain(|_: &yetibot_command::Call<'_>| Outcome::text("")),
            ));
        }
        registry
    }

    #[test]
    fn pages_follow_the_cursor_until_there_are_no_more() {
        let registry = registry(25);
        let first: serde_json::Value =
            serde_json::from_str(&help_tool(&registry, "{}").expect("page")).expect("json");
        assert_eq!(first["topics"].as_array().map(Vec::len), Some(20));
        assert_eq!(first["has_more"], true);
        assert_eq!(first["next_after"], "cmd19");
        assert_eq!(first["topics"][0]["summary"], "does thing 0");
        let second: serde_json::Value = serde_json::from_str(
            &help_tool(&registry, r#"{"after":"cmd19","limit":20}"#).expect("page"),
        )
        .expect("json");
        assert_eq!(second["topics"].as_array().map(Vec::len), Some(5));
        assert_eq!(second["has_more"], false);
        assert_eq!(second["next_after"], serde_json::Value::Null);
    }

    #[test]
    fn a_topic_shows_its_usage_and_bad_arguments_are_refused() {
        let registry = registry(2);
        let topic: serde_json::Value =
            serde_json::from_str(&help_tool(&registry, r#"{"topic":"cmd01"}"#).expect("topic"))
                .expect("json");
        assert_eq!(topic["usage"][0], "cmd01 <x> # does thing 1");
        assert_eq!(topic["truncated"], false);
        assert_eq!(
            help_tool(&registry, r#"{"topic":"nope"}"#),
            Err(HelpToolError::UnknownTopic)
        );
        for bad in [
            r#"{"topic":"cmd01","limit":2}"#,
            r#"{"limit":0}"#,
            r#"{"limit":21}"#,
            r#"{"limit":"3"}"#,
            r#"{"run":"cmd01"}"#,
            r#"{"topic":""}"#,
            "[1]",
            r#"{"limit":1,"limit":2}"#,
        ] {
            assert!(!help_arguments_ok(bad), "{bad}");
            assert!(help_tool(&registry, bad).is_err(), "{bad}");
        }
        assert!(help_arguments_ok(""));
    }

    #[test]
    fn long_usage_is_cut_to_the_bound_and_says_so() {
        let mut registry = Registry::new();
        let mut spec = CommandSpec::new("big", &[]);
        for i in 0..200 {
            spec = spec.route(
                Some(&format!("^x{i}$")),
                &format!("big {i} {}", "y".repeat(100)),
                Plain(|_: &yetibot_command::Call<'_>| Outcome::text("")),
            );
        }
        registry.add(spec);
        let text = help_tool(&registry, r#"{"topic":"big"}"#).expect("topic");
        assert!(text.chars().count() <= MAX_HELP_CHARS);
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value["truncated"], true);
    }
}
