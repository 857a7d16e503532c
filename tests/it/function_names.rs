//! The function name a tool reaches the model under is computed twice, by `yetibot-mcp-host`
//! (which refuses collisions within a server's listing) and by `yetibot-tool-policy` (which
//! refuses them across a request's catalog), because neither crate may depend on the other.
//! Both must give every tool the same name.

use proptest::prelude::*;
use yetibot_tool_policy::ToolId;

fn same(source: &str, name: &str) {
    let id = ToolId::new(source, name);
    assert_eq!(
        yetibot_tool_policy::function_name(&id),
        yetibot_mcp_host::function_name(source, name),
        "{source}/{name}"
    );
}

#[test]
fn both_crates_name_these_tools_alike() {
    for (source, name) in [
        ("yetibot", "help"),
        ("tavily", "tavily-search"),
        ("a.b", "c"),
        ("srv", &"x".repeat(80)),
        ("café", "naïve.tool"),
    ] {
        same(source, name);
    }
}

proptest! {
    #[test]
    fn both_crates_name_any_tool_alike(source in "\\PC{0,40}", name in "\\PC{0,140}") {
        same(&source, &name);
    }
}
