//! The native tools this bot offers models, registered with the tool policy as data: each
//! tool's name and the kind the policy's rules read. Descriptions and schemas stay with the
//! tools themselves (the AI commands build them into definitions when they offer a tool).

mod history;

pub use history::{
    DEFAULT_HISTORY_LIMIT, HistoryToolError, MAX_HISTORY_LIMIT, MAX_HISTORY_PAGE_CHARS,
    MAX_HISTORY_QUERY_CHARS, history_count_tool, history_tool,
};

use yetibot_conversation::AdapterKind;
use yetibot_tool_policy::NativeKind::{Computation, Context, PlatformAction, Service};
use yetibot_tool_policy::NativeTool;

/// Every native tool of the specification, in the order they are offered: the context
/// tools GitHub toolsets may get (`help`, `history`, `history_count`, `release_info`), the
/// `util` JSON tool, the tools backed by a configured service (`meme`, `gi`, `clef`,
/// `clairic`, `ai`, `cf`, `wise`) and Discord's `react`.
#[must_use]
pub fn native_tools() -> Vec<NativeTool> {
    [
        ("help", Context),
        ("history", Context),
        ("history_count", Context),
        ("release_info", Context),
        ("util", Computation),
        ("meme", Service),
        ("gi", Service),
        ("clef", Service),
        ("clairic", Service),
        ("ai", Service),
        ("cf", Service),
        ("wise", Service),
        ("react", PlatformAction(AdapterKind::Discord)),
    ]
    .into_iter()
    .map(|(name, kind)| NativeTool::new(name, kind))
    .collect()
}
