//! The timing bounds of discovery: how long an observation counts as fresh, how often a
//! provider is listed again, and the longest back-off after failures. Size bounds are a
//! [`Bounds`](crate::Bounds) value the caller chooses.

pub use crate::cache::FRESH_FOR;
pub use crate::refresher::{MAX_BACKOFF, REFRESH_EVERY};
