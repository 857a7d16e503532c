//! The bounds of the command language, in one place: how long a line may be, how large a
//! value, how much one line may run, and how much of a chat thread a request may read.

pub use crate::commands::{HISTORY_DEFAULT_ROWS, MAX_REPEAT, MAX_XARGS_ITEMS, XARGS_PARALLELISM};
pub use crate::interpreter::{
    MAX_ALIAS_DEPTH, MAX_COMMAND_RUNS, MAX_EMBEDDED_COMMANDS, MAX_NESTED_RUNS,
};
pub use crate::recent::{MAX_REMEMBERED_BYTES, MAX_REMEMBERED_CHANNELS, MAX_REMEMBERED_USERS};
pub use crate::render::MAX_IMAGE_MESSAGES;
pub use crate::syntax::{MAX_LINE_BYTES, MAX_NESTING, MAX_STAGES};

/// The most rows a value may have.
pub const MAX_ROWS: usize = 10_000;
/// The most bytes a value (or its data) may take as text.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// The most messages a chat thread may bring into one request.
pub const MAX_THREAD_MESSAGES: usize = 1_000;
/// The most text, in UTF-8 bytes, a chat thread may bring into one request.
pub const MAX_THREAD_BYTES: usize = 1 << 20;
