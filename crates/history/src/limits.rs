//! The bounds of the history interface: how long the text of a row read back may be, how
//! many aliases the in-memory store and a listing hold, and how the writer's queue is sized.

/// The longest message body a history read returns, in characters; longer bodies are cut
/// by the store's query and flagged.
pub const MAX_HISTORY_BODY_CHARS: usize = 1000;
/// The longest user name or user ID a history read returns, in characters.
pub const MAX_HISTORY_NAME_CHARS: usize = 100;
/// The most aliases the in-memory store holds.
pub const MAX_MEMORY_ALIASES: usize = 1024;
/// The most aliases one listing returns (as many rows as a pipeline value may carry).
pub const MAX_LISTED_ALIASES: usize = 10_000;
/// How many records wait for the writer by default.
pub const DEFAULT_QUEUE_CAPACITY: usize = 1024;
/// The most records the writer hands the store at once.
pub const MAX_WRITE_BATCH: usize = 64;
/// The longest body recorded, in bytes; longer text is cut at a character boundary (reads
/// return at most 1,000 characters of it anyway).
pub const MAX_RECORDED_BODY_BYTES: usize = 64 * 1024;
