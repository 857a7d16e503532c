//! Discovered tools: qualified IDs, bounded and redacted metadata, and server instructions.

use std::fmt;

use serde_json::{Map, Value};
use yetibot_redaction::Secrets;

use crate::limits::{MAX_TEXT_CHARS, cut_text, within_schema_bounds};

/// The standard MCP annotation hints kept in listings; anything else a server sends there is
/// private metadata and dropped.
pub const STANDARD_ANNOTATION_HINTS: [&str; 5] = [
    "title",
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// A tool's qualified identity, `server/name`. The same name on two servers is two tools.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolId {
    server: String,
    name: String,
}

impl ToolId {
    /// An ID from its parts.
    #[must_use]
    pub fn new(server: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            name: name.into(),
        }
    }

    /// Parses `server/name`, splitting at the first `/` (server names cannot contain one,
    /// tool names may). `None` when either side is empty.
    #[must_use]
    pub fn parse(qualified: &str) -> Option<Self> {
        let (server, name) = qualified.split_once('/')?;
        (!server.is_empty() && !name.is_empty()).then(|| Self::new(server, name))
    }

    /// The server's configured name.
    #[must_use]
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's name as the server lists it.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.server, self.name)
    }
}

/// One discovered tool with metadata that is redacted and bounded.
///
/// Everything here came from a server and is untrusted. An input schema that broke the bounds
/// is absent ([`ToolInfo::input_schema`] is `None` and [`ToolInfo::omitted`] names it), never
/// replaced by a permissive one.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    id: ToolId,
    title: Option<String>,
    description: String,
    input_schema: Option<Value>,
    annotations: Option<Value>,
    truncated: Vec<&'static str>,
    omitted: Vec<&'static str>,
}

impl ToolInfo {
    /// Builds a tool from one entry of a `tools/list` result, redacting `secrets` before it
    /// applies the bounds. `None` if the entry has no string `name`.
    #[must_use]
    pub fn from_listed(server: &str, listed: &Value, secrets: &Secrets) -> Option<Self> {
        let name = listed.get("name")?.as_str()?;
        let mut truncated = Vec::new();
        let mut omitted = Vec::new();
        let raw_description = listed
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (description, cut) = cut_text(&secrets.redact_text(raw_description), MAX_TEXT_CHARS);
        if cut {
            truncated.push("description");
        }
        let title = listed.get("title").and_then(Value::as_str).map(|t| {
            let (title, cut) = cut_text(&secrets.redact_text(t), MAX_TEXT_CHARS);
            if cut {
                truncated.push("title");
            }
            title
        });
        let input_schema = listed
            .get("inputSchema")
            .map(|schema| secrets.redact_json(schema))
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
                secrets.redact_json(&Value::Object(kept))
            })
            .filter(|annotations| {
                let ok = within_schema_bounds(annotations);
                if !ok {
                    omitted.push("annotations");
                }
                ok
            });
        Some(Self {
            id: ToolId::new(server, name),
            title,
            description,
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

    /// The advertised title, if any.
    #[must_use]
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The advertised description, redacted and bounded (empty when none).
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The input schema, or `None` when the server sent none or it broke the bounds.
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
    /// Records the (redacted, bounded) instructions of one server.
    #[must_use]
    pub fn new(server: &str, instructions: Option<&str>, secrets: &Secrets) -> Self {
        let (text, truncated) = match instructions {
            Some(raw) => {
                let (text, cut) = cut_text(&secrets.redact_text(raw), MAX_TEXT_CHARS);
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

/// The tools offered to one request, in catalog order (selected servers in configuration
/// order, each server's tools in its listing order), plus each server's instructions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    tools: Vec<ToolInfo>,
    servers: Vec<ServerInstructions>,
    dropped: Vec<ToolId>,
}

impl Catalog {
    /// Builds a catalog, keeping the first [`MAX_TOOLS`](crate::MAX_TOOLS) tools and
    /// recording the rest as dropped.
    #[must_use]
    pub fn new(tools: Vec<ToolInfo>, servers: Vec<ServerInstructions>) -> Self {
        let mut tools = tools;
        let dropped = if tools.len() > crate::MAX_TOOLS {
            tools
                .split_off(crate::MAX_TOOLS)
                .into_iter()
                .map(|t| t.id)
                .collect()
        } else {
            Vec::new()
        };
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

    /// Tools past the per-request cap, which are neither offered nor callable.
    #[must_use]
    pub fn dropped(&self) -> &[ToolId] {
        &self.dropped
    }

    /// The offered tool with this ID.
    #[must_use]
    pub fn get(&self, id: &ToolId) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| &t.id == id)
    }
}
