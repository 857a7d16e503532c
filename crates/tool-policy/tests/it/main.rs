//! yetibot-tool-policy's behaviour at its boundary: a scripted model and a scripted executor drive the
//! loop through every rule, plus access selection and property tests.

mod access;
mod kinds;
mod properties;
mod scripted;
mod tool_loop;

/// The native tools of the specification, as the AI commands register them: the rules under test
/// read only their kinds.
pub(crate) fn specified_native_tools() -> Vec<yetibot_tool_policy::NativeTool> {
    use yetibot_conversation::AdapterKind;
    use yetibot_tool_policy::NativeKind::{Computation, Context, PlatformAction, Service};
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
    .map(|(name, kind)| yetibot_tool_policy::NativeTool::new(name, kind))
    .collect()
}
