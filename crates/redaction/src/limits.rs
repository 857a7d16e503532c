//! The bounds of redaction: the shortest value redacted as a secret, and the longest panic
//! message reported.

pub use crate::panic::MAX_PANIC_MESSAGE_CHARS;
pub use crate::secrets::MIN_SECRET_LEN;
