//! The tools offered to the model in one request, and the lookup that maps the model's calls
//! back to them.

use std::collections::{HashMap, HashSet};

use yetibot_conversation::limits::MAX_TOOLS;
use yetibot_conversation::{ToolDefinition, ToolId};

use crate::error::Error;

/// The policy-filtered tools of one request.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<ToolDefinition>,
}

impl Catalog {
    /// Builds the catalog in the order given (native tools first, then servers in
    /// configuration order, is the convention). Pass every tool the request would offer,
    /// already narrowed by the allowlists: the cap, [`MAX_TOOLS`], applies to the whole set
    /// and is enforced here and nowhere else; a per-server bound on discovery is only a guard
    /// on what a server may send.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateTool`] when one ID appears twice, [`Error::FunctionNameCollision`]
    /// when two tools would reach the model under one function name (a suffix would let a
    /// call meant for one run the other), and [`Error::TooManyTools`] past
    /// [`MAX_TOOLS`]: the request fails and asks the operator to narrow the allowlists
    /// rather than silently dropping tools the model might need (which ones to drop would be
    /// an arbitrary choice, and the answer could then look complete when it is not).
    pub fn new(tools: Vec<ToolDefinition>) -> Result<Self, Error> {
        if tools.len() > MAX_TOOLS {
            return Err(Error::TooManyTools { count: tools.len() });
        }
        let mut ids = HashSet::new();
        let mut names: HashMap<&str, &ToolId> = HashMap::new();
        for tool in &tools {
            if !ids.insert(tool.id()) {
                return Err(Error::DuplicateTool(tool.id().to_string()));
            }
            if let Some(first) = names.insert(tool.function_name(), tool.id()) {
                return Err(Error::FunctionNameCollision {
                    first: first.to_string(),
                    second: tool.id().to_string(),
                });
            }
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
        self.tools
            .iter()
            .find(|t| t.function_name() == function_name)
    }

    /// Whether this exact tool was offered.
    #[must_use]
    pub fn contains(&self, id: &ToolId) -> bool {
        self.tools.iter().any(|t| t.id() == id)
    }

    /// Whether the catalog is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: &str, name: &str) -> ToolDefinition {
        ToolDefinition::new(
            ToolId::new(source, name),
            "",
            serde_json::json!({"type": "object"}),
        )
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
            .map(ToolDefinition::function_name)
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
            let (first, second) = (a.id().to_string(), b.id().to_string());
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
        let fits: Vec<ToolDefinition> = natives(5).chain(mcp(MAX_TOOLS - 5)).collect();
        assert_eq!(Catalog::new(fits).unwrap().definitions().len(), MAX_TOOLS);
        for (native, remote) in [(6, MAX_TOOLS - 5), (5, MAX_TOOLS - 4)] {
            let over: Vec<ToolDefinition> = natives(native).chain(mcp(remote)).collect();
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
        let many: Vec<ToolDefinition> = (0..65).map(|i| spec("s", &format!("t{i}"))).collect();
        assert!(matches!(
            Catalog::new(many),
            Err(Error::TooManyTools { count: 65 })
        ));
        let exactly: Vec<ToolDefinition> = (0..64).map(|i| spec("s", &format!("t{i}"))).collect();
        assert_eq!(Catalog::new(exactly).unwrap().definitions().len(), 64);
        assert!(matches!(
            Catalog::new(vec![spec("s", "t"), spec("s", "t")]),
            Err(Error::DuplicateTool(_))
        ));
    }
}
