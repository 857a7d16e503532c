//! The bounds of the stores' configuration. The bounds of what a read returns are
//! `yetibot-history`'s (`yetibot_history::limits`); a read's time budget is in the README.

pub use crate::config::MAX_TABLE_PREFIX_CHARS;
