//! The bounds of the tool policy: the call budget's default and ceiling, and, re-exported
//! here, the bounds shared with the rest of a request, which are `yetibot-conversation`'s.

pub use crate::change::MAX_CHANGE_PATH_BYTES;
pub use crate::config::{FALLBACK_TOOL_CALLS, MAX_TOOL_CALLS};
pub use yetibot_conversation::limits::{MAX_ARGUMENT_CHARS, MAX_RESULT_CHARS, MAX_TOOLS};
