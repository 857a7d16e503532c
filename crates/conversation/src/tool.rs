//! Tools as every crate names them: the `source/name` identity, the definition offered to a
//! model, and the one mapping from an identity to the function name a model calls.

use std::fmt;

use serde_json::Value;

use crate::limits::MAX_FUNCTION_NAME_BYTES;

/// The source of the bot's own (native) tools, as in `yetibot/help`. No MCP server may take
/// this name.
pub const NATIVE_SOURCE: &str = "yetibot";

/// A tool's identity: its source (an MCP server's configured name, or [`NATIVE_SOURCE`] for
/// native tools) and its name there. The same name on two sources is two tools.
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

    /// The native tool `name` (`yetibot/name`).
    #[must_use]
    pub fn native(name: impl Into<String>) -> Self {
        Self::new(NATIVE_SOURCE, name)
    }

    /// Parses `source/name`, splitting at the first `/` (source names cannot contain one,
    /// tool names may). `None` when either side is empty.
    #[must_use]
    pub fn parse(qualified: &str) -> Option<Self> {
        let (source, name) = qualified.split_once('/')?;
        (!source.is_empty() && !name.is_empty()).then(|| Self::new(source, name))
    }

    /// The MCP server's name, or [`NATIVE_SOURCE`].
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The tool's name on its source.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is one of the bot's own tools.
    #[must_use]
    pub fn is_native(&self) -> bool {
        self.source == NATIVE_SOURCE
    }

    /// The source and the name, taken apart.
    #[must_use]
    pub fn into_parts(self) -> (String, String) {
        (self.source, self.name)
    }
}

impl fmt::Display for ToolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.source, self.name)
    }
}

/// A tool as a model is offered it: a function name that is safe on every wire format, the
/// tool's identity, what it does and the JSON Schema of its arguments.
///
/// The function name is always [`function_name`] of the identity: the fields are private so
/// that no definition can reach a model under a name that maps back to another tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    function_name: String,
    id: ToolId,
    description: String,
    parameters: Value,
}

impl ToolDefinition {
    /// The definition of `id`, offered as [`function_name`]`(&id)`.
    #[must_use]
    pub fn new(id: ToolId, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            function_name: function_name(&id),
            id,
            description: description.into(),
            parameters,
        }
    }

    /// The name the model calls the tool by: `^[A-Za-z0-9_-]{1,64}$`.
    #[must_use]
    pub fn function_name(&self) -> &str {
        &self.function_name
    }

    /// The tool's identity.
    #[must_use]
    pub fn id(&self) -> &ToolId {
        &self.id
    }

    /// What the tool does, as its source describes it.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The JSON Schema of its arguments.
    #[must_use]
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }
}

/// The function name a model calls the tool `id` by: `source__name`, every character outside
/// `[A-Za-z0-9_-]` replaced by `_`, cut to [`MAX_FUNCTION_NAME_BYTES`]. The mapping is not
/// one-to-one (`a.b/c` and `a_b/c` share `a_b__c`), so whoever offers several tools must
/// refuse two with one function name rather than pick one.
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
    wire.truncate(MAX_FUNCTION_NAME_BYTES);
    wire
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn function_names_are_wire_safe() {
        let name = |source: &str, name: &str| function_name(&ToolId::new(source, name));
        assert_eq!(name("yetibot", "help"), "yetibot__help");
        assert_eq!(name("tavily", "tavily-search"), "tavily__tavily-search");
        assert_eq!(name("a.b", "c"), name("a_b", "c"));
        assert_eq!(name("srv", "wire.name"), "srv__wire_name");
        assert_eq!(name("é", "x"), "___x");
        assert_eq!(name("café", "naïve.tool"), "caf___na_ve_tool");
        assert_eq!(name("s", &"x".repeat(200)).len(), MAX_FUNCTION_NAME_BYTES);
    }

    #[test]
    fn a_definition_is_offered_under_its_ids_function_name() {
        let id = ToolId::new("web", "search.v2");
        let schema = serde_json::json!({"type": "object"});
        let definition = ToolDefinition::new(id.clone(), "Searches.", schema.clone());
        assert_eq!(definition.function_name(), "web__search_v2");
        assert_eq!(definition.function_name(), function_name(&id));
        assert_eq!(definition.id(), &id);
        assert_eq!(definition.description(), "Searches.");
        assert_eq!(definition.parameters(), &schema);
    }

    #[test]
    fn ids_display_parse_and_name_the_native_source() {
        let id = ToolId::new("web", "a/b");
        assert_eq!(id.to_string(), "web/a/b");
        assert_eq!(ToolId::parse("web/a/b"), Some(id.clone()));
        for bad in ["", "web", "/x", "web/"] {
            assert_eq!(ToolId::parse(bad), None, "{bad:?}");
        }
        assert!(!id.is_native());
        assert_eq!(id.into_parts(), ("web".to_owned(), "a/b".to_owned()));
        let help = ToolId::native("help");
        assert!(help.is_native());
        assert_eq!(help, ToolId::new(NATIVE_SOURCE, "help"));
        assert_eq!(help.to_string(), "yetibot/help");
    }

    proptest! {
        #[test]
        fn function_names_match_the_wire_rule(source in "\\PC{0,40}", name in "\\PC{0,140}") {
            let wire = function_name(&ToolId::new(source, name));
            prop_assert!(wire.len() <= MAX_FUNCTION_NAME_BYTES);
            prop_assert!(wire.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        }

        #[test]
        fn display_then_parse_gives_the_id_back(source in "[^/]{1,20}", name in "\\PC{1,40}") {
            let id = ToolId::new(source, name);
            prop_assert_eq!(ToolId::parse(&id.to_string()), Some(id));
        }
    }
}
