//! The tools offered to the model in one request, and the wire-safe function names that map
//! the model's calls back to them.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::Value;

use crate::error::Error;

/// The most tools offered in one request: native tools and every connected server's MCP
/// tools together, counted after the servers' and references' `:tools` allowlists (and the
/// kind rules) have narrowed them. [`Catalog::new`] is the one place it is enforced; a
/// per-server bound on discovery is only a guard on what a server may send.
pub const MAX_TOOLS: usize = 64;
/// Longest function name the Chat Completions and Responses APIs accept. Equal to
/// [`MAX_TOOLS`] by coincidence only.
const MAX_FUNCTION_NAME: usize = 64;

/// A tool's identity: its source (an MCP server's name, or `yetibot` for native tools) and its
/// name there. The same name on two servers is two tools.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolId {
    source: String,
    name: String,
}

impl ToolId {
    /// The tool `name` of `source`.
    #[must_use]
    pub fn new(source: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            name: name.into(),
        }
    }

    /// The server (or `yetibot`).
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The tool's name on its source.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.source, self.name)
    }
}

/// A tool as its source describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its identity.
    pub id: ToolId,
    /// What it does, as advertised (already bounded by its source).
    pub description: String,
    /// Its JSON Schema for arguments.
    pub input_schema: Value,
}

/// A tool as the model sees it: a function name that is safe on every wire format.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// `^[A-Za-z0-9_-]{1,64}$`, unique in the catalog.
    pub function_name: String,
    /// The tool's identity.
    pub id: ToolId,
    /// What it does.
    pub description: String,
    /// Its JSON Schema for arguments.
    pub parameters: Value,
}

/// The policy-filtered tools of one request.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<ToolDefinition>,
}

impl Catalog {
    /// Builds the catalog in the order given (native tools first, then servers in
    /// configuration order, is the convention). Pass every tool the request would offer,
    /// already narrowed by the allowlists: the cap applies to the whole set.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateTool`] when one ID appears twice, [`Error::FunctionNameCollision`]
    /// when two tools would reach the model under one function name (a suffix would let a
    /// call meant for one run the other), and [`Error::TooManyTools`] past
    /// [`MAX_TOOLS`]: the request fails and asks the operator to narrow the allowlists
    /// rather than silently dropping tools the model might need (which ones to drop would be
    /// an arbitrary choice, and the answer could then look complete when it is not).
    pub fn new(specs: Vec<ToolSpec>) -> Result<Self, Error> {
        if specs.len() > MAX_TOOLS {
            return Err(Error::TooManyTools { count: specs.len() });
        }
        let mut ids = HashSet::new();
        let mut names: HashMap<String, ToolId> = HashMap::new();
        let mut tools = Vec::with_capacity(specs.len());
        for spec in specs {
            if !ids.insert(spec.id.clone()) {
                return Err(Error::DuplicateTool(spec.id.to_string()));
            }
            let function_name = function_name(&spec.id);
            if let Some(first) = names.get(&function_name) {
                return Err(Error::FunctionNameCollision {
                    first: first.to_string(),
                    second: spec.id.to_string(),
                });
            }
            names.insert(function_name.clone(), spec.id.clone());
            tools.push(ToolDefinition {
                function_name,
                id: spec.id,
                description: spec.description,
                parameters: spec.input_schema,
            });
        }
        Ok(Self { tools })
    }

    /// The definitions to offer the model.
    #[must_use]
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// The tool a model's call names, by exact function name.
    #[must_use]
    pub fn resolve(&self, function_name: &str) -> Option<&ToolDefinition> {
        self.tools.iter().find(|t| t.function_name == function_name)
    }

    /// Whether this exact tool was offered.
    #[must_use]
    pub fn contains(&self, id: &ToolId) -> bool {
        self.tools.iter().any(|t| t.id == *id)
    }

    /// Whether the catalog is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The function name a tool is offered under: `source__name` with characters outside
/// `[A-Za-z0-9_-]` replaced by `_`, cut to 64 bytes. It is the same mapping as
/// `yetibot_mcp_host::function_name`, which this crate cannot call (it knows no MCP); the
/// workspace tests check that the two agree on arbitrary names.
#[must_use]
pub fn function_name(id: &ToolId) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut wire = format!("{}__{}", clean(&id.source), clean(&id.name));
    // Every character is ASCII now, so any byte index is a character boundary.
    wire.truncate(MAX_FUNCTION_NAME);
    wire
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: &str, name: &str) -> ToolSpec {
        ToolSpec {
            id: ToolId::new(source, name),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn function_names_are_wire_safe() {
        let long = "x".repeat(80);
        let catalog = Catalog::new(vec![
            spec("yetibot", "help"),
            spec("tavily", "tavily-search"),
            spec("a.b", "c"),
            spec("srv", &long),
        ])
        .unwrap();
        let names: Vec<&str> = catalog
            .definitions()
            .iter()
            .map(|d| d.function_name.as_str())
            .collect();
        assert_eq!(
            &names[..3],
            ["yetibot__help", "tavily__tavily-search", "a_b__c"]
        );
        for name in &names {
            assert!(
                name.len() <= 64
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
        }
    }

    /// Two tools that map to one function name used to get `_2` suffixes, so a call could
    /// be read as meant for the other tool; the catalog is refused instead.
    #[test]
    fn wire_name_collisions_are_refused_not_suffixed() {
        let long = "x".repeat(80);
        for (a, b) in [
            (spec("a.b", "c"), spec("a_b", "c")),
            (spec("srv", &long), spec("srv", &format!("{long}y"))),
        ] {
            let (first, second) = (a.id.to_string(), b.id.to_string());
            match Catalog::new(vec![a, b]) {
                Err(Error::FunctionNameCollision {
                    first: f,
                    second: s,
                }) => {
                    assert_eq!((f, s), (first, second));
                }
                other => panic!("expected a collision, got {other:?}"),
            }
        }
    }

    #[test]
    fn tool_cap_counts_native_tools_on_top_of_mcp_tools() {
        // The cap is one number for the whole request, native tools included: 59 MCP tools
        // plus 5 native ones fit, one more of either kind does not, and the error names the
        // count and the same constant instead of a separately written 64.
        let natives = |n: usize| (0..n).map(|i| spec("yetibot", &format!("n{i}")));
        let mcp = |n: usize| (0..n).map(|i| spec("web", &format!("t{i}")));
        let fits: Vec<ToolSpec> = natives(5).chain(mcp(MAX_TOOLS - 5)).collect();
        assert_eq!(Catalog::new(fits).unwrap().definitions().len(), MAX_TOOLS);
        for (native, remote) in [(6, MAX_TOOLS - 5), (5, MAX_TOOLS - 4)] {
            let over: Vec<ToolSpec> = natives(native).chain(mcp(remote)).collect();
            let error = Catalog::new(over).unwrap_err();
            assert!(matches!(error, Error::TooManyTools { count } if count == MAX_TOOLS + 1));
            assert_eq!(
                error.to_string(),
                format!(
                    "{} tools selected (native and MCP together), more than the {MAX_TOOLS} one request may offer; narrow the servers' :tools or the toolset's :native-tools",
                    MAX_TOOLS + 1
                )
            );
        }
        assert_eq!(MAX_TOOLS, 64, "the specification's bound");
    }

    #[test]
    fn limits() {
        let many: Vec<ToolSpec> = (0..65).map(|i| spec("s", &format!("t{i}"))).collect();
        assert!(matches!(
            Catalog::new(many),
            Err(Error::TooManyTools { count: 65 })
        ));
        let exactly: Vec<ToolSpec> = (0..64).map(|i| spec("s", &format!("t{i}"))).collect();
        assert_eq!(Catalog::new(exactly).unwrap().definitions().len(), 64);
        assert!(matches!(
            Catalog::new(vec![spec("s", "t"), spec("s", "t")]),
            Err(Error::DuplicateTool(_))
        ));
    }
}
