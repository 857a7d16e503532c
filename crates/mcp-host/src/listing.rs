//! Pure projections behind `ai servers` and `ai tools`: summary rows, focused help, lookup
//! and aggregate data. Nothing here talks to a server or calls a tool.

use serde_json::{Map, Value, json};
use yetibot_conversation::ToolId;

use crate::catalog::{ServerCatalog, ToolInfo};
use crate::config::{ServerSet, Transport};
use crate::error::{Error, Result};
use crate::limits::UNTRUSTED_INSTRUCTIONS_LABEL;
use crate::sanitize::one_line;

/// Longest description shown in a summary row, in characters.
pub const SUMMARY_DESCRIPTION_CHARS: usize = 120;
const SEPARATOR: &str = " — ";

/// One summary row: `` `server/name` — description ``. The description is the display form
/// ([`ToolInfo::display_description`]), whitespace-collapsed and cut to
/// [`SUMMARY_DESCRIPTION_CHARS`] characters (ending in `…` when cut), with nothing escaped:
/// a row is data. The command language never parses a piped value or an `xargs` item as a
/// command line, so `$(...)`, backticks and `|` in a description stay literal without
/// backslashes that every reader (the CLI, the console) would see. The ID itself is left
/// unchanged inside its backticks, and [`lookup`] reads a row back by that ID alone.
#[must_use]
pub fn summary_row(tool: &ToolInfo) -> String {
    let collapsed = one_line(tool.display_description());
    let short: String = if collapsed.chars().count() > SUMMARY_DESCRIPTION_CHARS {
        let mut cut: String = collapsed
            .chars()
            .take(SUMMARY_DESCRIPTION_CHARS - 1)
            .collect();
        cut.push('…');
        cut
    } else {
        collapsed
    };
    let mut row = format!("`{}`", tool.id());
    if !short.is_empty() {
        row.push_str(SEPARATOR);
        row.push_str(&short);
    }
    row
}

/// The summary rows of a catalog in catalog order, optionally for one server only. No
/// header rows.
#[must_use]
pub fn summary_rows(catalog: &ServerCatalog, server: Option<&str>) -> Vec<String> {
    catalog
        .tools()
        .iter()
        .filter(|t| server.is_none_or(|s| t.id().source() == s))
        .map(summary_row)
        .collect()
}

/// One row per configured server for `ai servers`, in configuration order:
/// `` `name` — local (stdio), tools: a, b `` or `` `name` — remote (Streamable HTTP), all
/// listed tools ``. Connection settings (URLs, commands, headers, env) are never shown.
#[must_use]
pub fn server_rows(servers: &ServerSet) -> Vec<String> {
    servers
        .servers()
        .iter()
        .map(|server| {
            let kind = match server.transport() {
                Transport::Http { .. } => "remote (Streamable HTTP)",
                Transport::Stdio { .. } => "local (stdio)",
            };
            let tools = server.tools().map_or_else(
                || "all listed tools".to_owned(),
                |t| format!("tools: {}", t.join(", ")),
            );
            format!("`{}`{SEPARATOR}{kind}, {tools}", server.name())
        })
        .collect()
}

/// Finds one tool by qualified ID (optionally in backticks), by a complete summary row, or
/// by a bare tool name that only one server offers. Backticks are never evaluated.
///
/// # Errors
///
/// [`Error::NoSuchTool`] when nothing matches; [`Error::AmbiguousTool`] when a bare name is
/// offered by several servers (the error lists the qualified candidates).
pub fn lookup<'c>(catalog: &'c ServerCatalog, selector: &str) -> Result<&'c ToolInfo> {
    let selector = selector.trim();
    let key = match selector.strip_prefix('`') {
        Some(rest) => rest.split_once('`').map_or(rest, |(id, _)| id),
        None => selector
            .split_once(SEPARATOR)
            .map_or(selector, |(id, _)| id)
            .trim(),
    };
    let not_found = || Error::NoSuchTool {
        selector: one_line(selector).chars().take(200).collect(),
    };
    if let Some(tool) = ToolId::parse(key).and_then(|id| catalog.get(&id)) {
        return Ok(tool);
    }
    let matches: Vec<&ToolInfo> = catalog
        .tools()
        .iter()
        .filter(|t| t.id().name() == key)
        .collect();
    match matches.as_slice() {
        [] => Err(not_found()),
        [one] => Ok(one),
        many => Err(Error::AmbiguousTool {
            name: one_line(key),
            candidates: many.iter().map(|t| t.id().to_string()).collect(),
        }),
    }
}

/// Focused help for one tool: its description, inputs with types, required fields, enum
/// choices and the alternatives of `oneOf`/`anyOf` required lists. Everything the server
/// wrote is shown in display form ([`sanitize_display`]); schema words are kept on one line.
///
/// [`sanitize_display`]: crate::sanitize_display
#[must_use]
pub fn focused_help(tool: &ToolInfo) -> String {
    let mut out = format!("`{}`", tool.id());
    if let Some(title) = tool.display_title() {
        out.push_str(SEPARATOR);
        out.push_str(&one_line(title));
    }
    out.push('\n');
    if !tool.display_description().is_empty() {
        out.push_str(tool.display_description());
        out.push('\n');
    }
    let Some(schema) = tool.input_schema() else {
        if tool.omitted().contains(&"inputSchema") {
            out.push_str("Inputs: schema omitted (it exceeds the listing bounds)\n");
        } else {
            out.push_str("Inputs: none\n");
        }
        return out;
    };
    let required: Vec<String> = string_list(schema.get("required"))
        .into_iter()
        .map(one_line)
        .collect();
    let properties = schema.get("properties").and_then(Value::as_object);
    match properties {
        Some(properties) if !properties.is_empty() => {
            out.push_str("Inputs:\n");
            for (name, property) in properties {
                let name = one_line(name);
                let mut facts = vec![one_line(&type_name(property))];
                if required.contains(&name) {
                    facts.push("required".to_owned());
                }
                if let Some(choices) = property.get("enum").and_then(Value::as_array) {
                    let choices: Vec<String> =
                        choices.iter().map(|c| one_line(&compact(c))).collect();
                    facts.push(format!("one of: {}", choices.join(", ")));
                }
                out.push_str(&format!("- {name} ({})", facts.join(", ")));
                if let Some(description) = property.get("description").and_then(Value::as_str) {
                    out.push_str(": ");
                    out.push_str(&one_line(description));
                }
                out.push('\n');
            }
        }
        _ => out.push_str("Inputs: none\n"),
    }
    if !required.is_empty() {
        out.push_str(&format!("Required: {}\n", required.join(", ")));
    }
    for keyword in ["oneOf", "anyOf"] {
        let Some(branches) = schema.get(keyword).and_then(Value::as_array) else {
            continue;
        };
        let alternatives: Vec<String> = branches
            .iter()
            .map(|b| one_line(&string_list(b.get("required")).join(" + ")))
            .filter(|a| !a.is_empty())
            .collect();
        if !alternatives.is_empty() {
            let how = if keyword == "oneOf" {
                "exactly one of"
            } else {
                "at least one of"
            };
            out.push_str(&format!("Requires {how}: {}\n", alternatives.join(" | ")));
        }
    }
    out
}

/// The structured metadata of one tool for a listing: `id`, `server`, `name`, `description`
/// and `title` (display forms), `inputSchema` (as the model gets it; null when absent or
/// omitted), `annotations` when advertised, and `truncated`/`omitted` lists when bounds
/// applied.
#[must_use]
pub fn tool_data(tool: &ToolInfo) -> Value {
    let mut entry = Map::new();
    entry.insert("id".into(), json!(tool.id().to_string()));
    entry.insert("server".into(), json!(tool.id().source()));
    entry.insert("name".into(), json!(tool.id().name()));
    entry.insert("description".into(), json!(tool.display_description()));
    entry.insert(
        "inputSchema".into(),
        tool.input_schema().cloned().unwrap_or(Value::Null),
    );
    if let Some(title) = tool.display_title() {
        entry.insert("title".into(), json!(title));
    }
    if let Some(annotations) = tool.annotations() {
        entry.insert("annotations".into(), annotations.clone());
    }
    if !tool.truncated().is_empty() {
        entry.insert("truncated".into(), json!(tool.truncated()));
    }
    if !tool.omitted().is_empty() {
        entry.insert("omitted".into(), json!(tool.omitted()));
    }
    Value::Object(entry)
}

/// The aggregate data of a listing: `tools` (see [`tool_data`]), `instructions` with the
/// caller's `runner` text and one record per selected server (its instructions labelled
/// untrusted), the `dropped` tools (`{"id": "server/name", "reason": "..."}`, see
/// [`ServerCatalog::dropped`]), and `skills: {supported: false, items: []}`.
#[must_use]
pub fn aggregate_data(catalog: &ServerCatalog, runner_instructions: &str) -> Value {
    let servers: Vec<Value> = catalog
        .servers()
        .iter()
        .map(|s| match s.untrusted_text() {
            Some(text) => json!({
                "server": s.server(),
                "supplied": true,
                "label": UNTRUSTED_INSTRUCTIONS_LABEL,
                "text": text,
                "truncated": s.truncated(),
            }),
            None => json!({"server": s.server(), "supplied": false}),
        })
        .collect();
    json!({
        "tools": catalog.tools().iter().map(tool_data).collect::<Vec<_>>(),
        "dropped": catalog
            .dropped()
            .iter()
            .map(|d| json!({"id": d.id().to_string(), "reason": d.reason().as_str()}))
            .collect::<Vec<_>>(),
        "instructions": {"runner": runner_instructions, "servers": servers},
        "skills": {"supported": false, "items": []},
    })
}

fn string_list(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn type_name(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(t)) => match (t.as_str(), property.pointer("/items/type")) {
            ("array", Some(Value::String(item))) => format!("array of {item}"),
            _ => t.clone(),
        },
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_owned(),
    }
}

fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
