//! Every bound of the MCP host: what the spec puts on everything a server sends (and the
//! helpers that apply it), timeouts, and, re-exported here, the bounds shared with the rest
//! of a request (tools per request, argument and result length, name lengths), which are
//! `yetibot-conversation`'s.

use serde_json::Value;

pub use crate::config::{DEFAULT_TIMEOUT, TIMEOUT_MS_RANGE};
pub use crate::listing::SUMMARY_DESCRIPTION_CHARS;
pub use crate::session::{CLOSE_GRACE, MAX_MESSAGE_BYTES, STDERR_TAIL_BYTES};
pub use yetibot_conversation::limits::{
    MAX_ARGUMENT_CHARS, MAX_FUNCTION_NAME_BYTES, MAX_RESULT_CHARS, MAX_TOOL_NAME_CHARS, MAX_TOOLS,
};

/// Tool descriptions and titles and server instructions are cut to this many characters.
/// Call results have their own bound, [`MAX_RESULT_CHARS`], of the
/// same size.
pub const MAX_TEXT_CHARS: usize = 20_000;
/// A schema or annotation object may serialize to at most this many characters.
pub const MAX_SCHEMA_CHARS: usize = 32_768;
/// A schema or annotation object may have at most this many JSON nodes.
pub const MAX_SCHEMA_NODES: usize = 4_096;
/// A schema or annotation object may nest at most this deep.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// `tools/list` is followed for at most this many pages per server.
pub const MAX_LIST_PAGES: usize = 32;
/// Appended to text that was cut.
pub const TRUNCATED_MARKER: &str = "… [truncated]";
/// The label put on server instructions, which are never sent to a model.
pub const UNTRUSTED_INSTRUCTIONS_LABEL: &str = "UNTRUSTED/NOT APPLIED TO MODEL";

/// Cuts `text` so that, marker included, it has at most `max` characters.
pub(crate) fn cut_text(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        None => (text.to_owned(), false),
        Some(_) => {
            let keep = max.saturating_sub(TRUNCATED_MARKER.chars().count());
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            let mut out = String::with_capacity(end + TRUNCATED_MARKER.len());
            out.push_str(text.get(..end).unwrap_or_default());
            out.push_str(TRUNCATED_MARKER);
            (out, true)
        }
    }
}

/// Whether a schema-like value stays within the node, depth and size bounds.
pub(crate) fn within_schema_bounds(value: &Value) -> bool {
    let mut nodes = 0usize;
    if !walk(value, 1, &mut nodes) {
        return false;
    }
    serde_json::to_string(value).is_ok_and(|s| s.chars().count() <= MAX_SCHEMA_CHARS)
}

fn walk(value: &Value, depth: usize, nodes: &mut usize) -> bool {
    *nodes += 1;
    if *nodes > MAX_SCHEMA_NODES || depth > MAX_SCHEMA_DEPTH {
        return false;
    }
    match value {
        Value::Array(items) => items.iter().all(|v| walk(v, depth + 1, nodes)),
        Value::Object(map) => map.values().all(|v| walk(v, depth + 1, nodes)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_text_keeps_short_text_and_bounds_long_text() {
        assert_eq!(cut_text("abc", 3), ("abc".to_owned(), false));
        let (cut, truncated) = cut_text(&"é".repeat(50), 20);
        assert!(truncated);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with(TRUNCATED_MARKER));
    }

    #[test]
    fn schema_bounds_count_depth_and_nodes() {
        let mut deep = serde_json::json!(1);
        for _ in 0..MAX_SCHEMA_DEPTH {
            deep = serde_json::json!([deep]);
        }
        assert!(!within_schema_bounds(&deep));
        let wide = Value::Array(vec![Value::Null; MAX_SCHEMA_NODES]);
        assert!(!within_schema_bounds(&wide));
        assert!(within_schema_bounds(&serde_json::json!({"type": "object"})));
    }
}
