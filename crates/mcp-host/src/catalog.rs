//! Discovered tools: bounded and redacted metadata in model and display forms, server
//! instructions, and the tools that are dropped with their reasons.

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value};
use yetibot_conversation::limits::MAX_TOOLS;
use yetibot_conversation::{ToolId, function_name};
use yetibot_redaction::Secrets;

use crate::limits::{MAX_TEXT_CHARS, within_schema_bounds};
use crate::names::{is_valid_tool_name, shown_name};
use crate::sanitize::bounded_texts;

/// The standard MCP annotation hints kept in listings; anything else a server sends there is
/// private metadata and dropped.
pub const STANDARD_ANNOTATION_HINTS: [&str; 5] = [
    "title",
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// One discovered tool with metadata that is redacted and bounded.
///
/// Everything here came from a server and is untrusted. The description and title exist in
/// two forms: the model's ([`ToolInfo::description`], unchanged apart from redaction and the
/// bound) and people's ([`ToolInfo::display_description`], also passed through
/// [`sanitize_display`](crate::sanitize_display)). An input schema that broke the bounds is absent
/// ([`ToolInfo::input_schema`] is `None` and [`ToolInfo::omitted`] names it), never replaced
/// by a permissive one.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    id: ToolId,
    title: Option<String>,
    display_title: Option<String>,
    description: String,
    display_description: String,
    input_schema: Option<Value>,
    annotations: Option<Value>,
    truncated: Vec<&'static str>,
    omitted: Vec<&'static str>,
}

impl ToolInfo {
    /// Builds a tool from one entry of a `tools/list` result. Configured secrets are redacted
    /// from every string value of the description, title, input schema and annotations
    /// before the bounds apply; the schema's structure and property names are never changed.
    ///
    /// # Errors
    ///
    /// A [`DroppedTool`] with [`DropReason::InvalidName`] when the entry has no string
    /// `name` or the name breaks the MCP naming rule ([`is_valid_tool_name`]).
    pub fn from_listed(
        server: &str,
        listed: &Value,
        secrets: &Secrets,
    ) -> Result<Self, DroppedTool> {
        let name = match listed.get("name") {
            Some(Value::String(name)) if is_valid_tool_name(name) => name,
            other => {
                return Err(DroppedTool {
                    server: server.to_owned(),
                    name: other
                        .and_then(Value::as_str)
                        .map_or_else(String::new, shown_name),
                    reason: DropReason::InvalidName,
                });
            }
        };
        let mut truncated = Vec::new();
        let mut omitted = Vec::new();
        let raw_description = listed
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (description, display_description, cut) =
            bounded_texts(raw_description, secrets, MAX_TEXT_CHARS);
        if cut {
            truncated.push("description");
        }
        let (title, display_title) = match listed.get("title").and_then(Value::as_str) {
            Some(raw) => {
                let (title, display, cut) = bounded_texts(raw, secrets, MAX_TEXT_CHARS);
                if cut {
                    truncated.push("title");
                }
                (Some(title), Some(display))
            }
            None => (None, None),
        };
        let input_schema = listed
            .get("inputSchema")
            .map(|schema| redact_strings(schema, secrets))
            .filter(|schema| {
                let ok = within_schema_bounds(schema);
                if !ok {
                    omitted.push("inputSchema");
                }
                ok
            });
        let annotations = listed
            .get("annotations")
            .and_then(Value::as_object)
            .map(|all| {
                let kept: Map<String, Value> = all
                    .iter()
                    .filter(|(k, _)| STANDARD_ANNOTATION_HINTS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                redact_strings(&Value::Object(kept), secrets)
            })
            .filter(|annotations| {
                let ok = within_schema_bounds(annotations);
                if !ok {
                    omitted.push("annotations");
                }
                ok
            });
        Ok(Self {
            id: ToolId::new(server, name.as_str()),
            title,
            display_title,
            description,
            display_description,
            input_schema,
            annotations,
            truncated,
            omitted,
        })
    }

    /// The qualified ID.
    #[must_use]
    pub fn id(&self) -> &ToolId {
        &self.id
    }

    /// The advertised title for the model, if any (redacted and bounded).
    #[must_use]
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The advertised title for people, if any: [`sanitize_display`](crate::sanitize_display)ed, redacted, bounded.
    #[must_use]
    pub fn display_title(&self) -> Option<&str> {
        self.display_title.as_deref()
    }

    /// The advertised description for the model, redacted and bounded (empty when none);
    /// otherwise exactly as the server wrote it.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The advertised description for people (rows, help, listings, logs):
    /// [`sanitize_display`](crate::sanitize_display)ed, redacted and bounded.
    #[must_use]
    pub fn display_description(&self) -> &str {
        &self.display_description
    }

    /// The input schema, or `None` when the server sent none or it broke the bounds.
    /// Secrets are redacted from its string values only.
    #[must_use]
    pub fn input_schema(&self) -> Option<&Value> {
        self.input_schema.as_ref()
    }

    /// The standard annotation hints the server advertised, if any.
    #[must_use]
    pub fn annotations(&self) -> Option<&Value> {
        self.annotations.as_ref()
    }

    /// Fields that were shortened (`description`, `title`).
    #[must_use]
    pub fn truncated(&self) -> &[&'static str] {
        &self.truncated
    }

    /// Fields that were dropped for breaking the bounds (`inputSchema`, `annotations`).
    #[must_use]
    pub fn omitted(&self) -> &[&'static str] {
        &self.omitted
    }

    /// The function name a model calls this tool by ([`function_name`]).
    #[must_use]
    pub fn function_name(&self) -> String {
        function_name(&self.id)
    }
}

/// A listed tool that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedTool {
    server: String,
    name: String,
    reason: DropReason,
}

impl DroppedTool {
    /// The server's configured name.
    #[must_use]
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's name as listed when it follows the naming rule; otherwise a safe,
    /// escaped and shortened rendering of it (`ec\u{200b}ho`), which is not callable.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `server/name` as an ID, for display.
    #[must_use]
    pub fn id(&self) -> ToolId {
        ToolId::new(self.server.as_str(), self.name.as_str())
    }

    /// Why the tool is not offered.
    #[must_use]
    pub fn reason(&self) -> DropReason {
        self.reason
    }
}

impl fmt::Display for DroppedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}/{}` is not offered: {}",
            self.server,
            self.name,
            self.reason.as_str()
        )
    }
}

/// Why a listed tool is not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// The name is missing or breaks the MCP naming rule ([`is_valid_tool_name`]).
    InvalidName,
    /// The server lists the name more than once; every copy is dropped, since a call could
    /// not say which one it means.
    RepeatedName,
    /// Its function name ([`function_name`]) equals another offered tool's; both are dropped
    /// rather than renamed, so a model's call can never reach the wrong tool.
    FunctionNameCollision,
    /// It came after the request's tool limit ([`MAX_TOOLS`] at most).
    OverLimit,
}

impl DropReason {
    /// A short, stable explanation.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidName => {
                "its name is not 1 to 128 characters of A-Z, a-z, 0-9, '_', '.' and '-'"
            }
            Self::RepeatedName => "the server lists this name more than once",
            Self::FunctionNameCollision => {
                "its function name collides with another tool's, so neither is offered"
            }
            Self::OverLimit => "it is past the per-request tool limit",
        }
    }
}

/// What a server said in its `initialize` instructions: kept for inspection only, labelled
/// untrusted, and never placed in a model prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInstructions {
    server: String,
    text: Option<String>,
    truncated: bool,
}

impl ServerInstructions {
    /// Records the instructions of one server. They are only ever shown, never given to a
    /// model, so they are kept in display form: [`sanitize_display`](crate::sanitize_display)ed, redacted, bounded.
    #[must_use]
    pub fn new(server: &str, instructions: Option<&str>, secrets: &Secrets) -> Self {
        let (text, truncated) = match instructions {
            Some(raw) => {
                let (_, text, cut) = bounded_texts(raw, secrets, MAX_TEXT_CHARS);
                (Some(text), cut)
            }
            None => (None, false),
        };
        Self {
            server: server.to_owned(),
            text,
            truncated,
        }
    }

    /// The server's configured name.
    #[must_use]
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The untrusted instruction text, if the server supplied any.
    #[must_use]
    pub fn untrusted_text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// Whether the text was shortened.
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

/// What discovery found on a session's servers: the MCP tools offered, in catalog order
/// (selected servers in configuration order, each server's tools in its listing order), each
/// server's instructions, and the listed tools that are not offered. It is the MCP part of a
/// request's tools; the whole offer, native tools included, is built from it by the caller
/// (in Yetibot, `yetibot-tool-policy`'s `Catalog`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerCatalog {
    tools: Vec<ToolInfo>,
    servers: Vec<ServerInstructions>,
    dropped: Vec<DroppedTool>,
}

impl ServerCatalog {
    /// Builds a catalog: every copy of a repeated ID and both sides of a function-name
    /// collision are dropped, then the first [`MAX_TOOLS`] remaining tools are kept and the
    /// rest dropped. [`ServerCatalog::dropped`] reports each with its reason.
    #[must_use]
    pub fn new(tools: Vec<ToolInfo>, servers: Vec<ServerInstructions>) -> Self {
        Self::build(tools, servers, Vec::new(), MAX_TOOLS)
    }

    /// [`ServerCatalog::new`] that keeps reporting `dropped`, tools already left out
    /// elsewhere (as when merging the catalogs of several sessions, or adding a host's own
    /// tools to one, for a listing).
    #[must_use]
    pub fn with_dropped(
        tools: Vec<ToolInfo>,
        servers: Vec<ServerInstructions>,
        dropped: Vec<DroppedTool>,
    ) -> Self {
        Self::build(tools, servers, dropped, MAX_TOOLS)
    }

    /// [`ServerCatalog::new`] with earlier drops (invalid names) to report first and a tool limit
    /// of at most [`MAX_TOOLS`].
    pub(crate) fn build(
        tools: Vec<ToolInfo>,
        servers: Vec<ServerInstructions>,
        mut dropped: Vec<DroppedTool>,
        limit: usize,
    ) -> Self {
        let dropping = |tool: ToolInfo, reason| {
            let (server, name) = tool.id.into_parts();
            DroppedTool {
                server,
                name,
                reason,
            }
        };
        let mut copies: HashMap<ToolId, usize> = HashMap::new();
        for tool in &tools {
            *copies.entry(tool.id.clone()).or_default() += 1;
        }
        let (tools, repeated): (Vec<_>, Vec<_>) = tools
            .into_iter()
            .partition(|t| copies.get(&t.id) == Some(&1));
        dropped.extend(
            repeated
                .into_iter()
                .map(|t| dropping(t, DropReason::RepeatedName)),
        );
        let mut wire: HashMap<String, usize> = HashMap::new();
        for tool in &tools {
            *wire.entry(tool.function_name()).or_default() += 1;
        }
        let (mut tools, colliding): (Vec<_>, Vec<_>) = tools
            .into_iter()
            .partition(|t| wire.get(&t.function_name()) == Some(&1));
        dropped.extend(
            colliding
                .into_iter()
                .map(|t| dropping(t, DropReason::FunctionNameCollision)),
        );
        let limit = limit.min(MAX_TOOLS);
        if tools.len() > limit {
            dropped.extend(
                tools
                    .split_off(limit)
                    .into_iter()
                    .map(|t| dropping(t, DropReason::OverLimit)),
            );
        }
        Self {
            tools,
            servers,
            dropped,
        }
    }

    /// The offered tools, in catalog order.
    #[must_use]
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// The instructions record of every selected server, in selection order.
    #[must_use]
    pub fn servers(&self) -> &[ServerInstructions] {
        &self.servers
    }

    /// Listed tools that are neither offered nor callable, each with its reason.
    #[must_use]
    pub fn dropped(&self) -> &[DroppedTool] {
        &self.dropped
    }

    /// The offered tool with this ID.
    #[must_use]
    pub fn get(&self, id: &ToolId) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| &t.id == id)
    }
}

/// A copy of a schema-like value with secrets redacted from its string values only: object
/// keys (property names), numbers and the shape stay as they are, so the schema stays a
/// valid schema. Iterative, so a deep value cannot exhaust the stack.
pub(crate) fn redact_strings(value: &Value, secrets: &Secrets) -> Value {
    let mut copy = value.clone();
    let mut stack = vec![&mut copy];
    while let Some(node) = stack.pop() {
        match node {
            Value::String(text) => {
                if let std::borrow::Cow::Owned(redacted) = secrets.redact_text(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(fields) => stack.extend(fields.values_mut()),
            Value::Bool(_) | Value::Null | Value::Number(_) => {}
        }
    }
    copy
}
