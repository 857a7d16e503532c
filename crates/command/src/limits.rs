//! Every bound of the command language, in one place: how long a line may be, how large a
//! value, how much one line may run, what the memory behind `that` keeps, and how much of a
//! chat thread a request may read. The modules that apply them import them from here.

/// The longest line accepted, in bytes.
pub const MAX_LINE_BYTES: usize = 16 * 1024;
/// The most stages one expression (or sub-expression) may have.
pub const MAX_STAGES: usize = 32;
/// How deeply sub-expressions may nest.
pub const MAX_NESTING: usize = 8;
/// How deeply aliases may expand into one another.
pub const MAX_ALIAS_DEPTH: usize = 8;
/// How many commands one line may run in all, through pipes, sub-expressions, aliases,
/// `xargs` and `repeat` together.
pub const MAX_COMMAND_RUNS: usize = 1_000;
/// How deeply commands may run inside other commands (sub-expressions, alias bodies,
/// `xargs` and `repeat` runs, in any mix).
pub const MAX_NESTED_RUNS: usize = 32;
/// How many embedded backtick commands one chat message may run.
pub const MAX_EMBEDDED_COMMANDS: usize = 5;
/// The most channels [`Recent`](crate::Recent) remembers; the least recently used is forgotten first.
pub const MAX_REMEMBERED_CHANNELS: usize = 1024;
/// The longest line or command [`Recent`](crate::Recent) keeps, in bytes (a command's longest line).
pub const MAX_REMEMBERED_BYTES: usize = MAX_LINE_BYTES;
/// The most users per channel whose last command [`Recent`](crate::Recent) remembers.
pub const MAX_REMEMBERED_USERS: usize = 256;
/// The most files (generated images) one reply carries.
pub const MAX_REPLY_FILES: usize = 4;
/// The largest file a reply carries, in bytes.
pub const MAX_REPLY_FILE_BYTES: usize = 8 * 1024 * 1024;
/// The most image messages one answer posts.
pub const MAX_IMAGE_MESSAGES: usize = 30;
/// How many messages `history` shows without a following stage.
pub const HISTORY_DEFAULT_ROWS: u32 = 30;
/// The most items `xargs` runs a command for.
pub const MAX_XARGS_ITEMS: usize = 64;
/// How many of those runs may be in flight at once.
pub const XARGS_PARALLELISM: usize = 4;
/// The most times `repeat` runs a command.
pub const MAX_REPEAT: usize = 10;
/// The longest command prefix accepted.
pub const MAX_PREFIX_CHARS: usize = 8;
/// The most rows a value may have.
pub const MAX_ROWS: usize = 10_000;
/// The most bytes a value (or its data) may take as text.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// The most messages a chat thread may bring into one request.
pub const MAX_THREAD_MESSAGES: usize = 1_000;
/// The most text, in UTF-8 bytes, a chat thread may bring into one request.
pub const MAX_THREAD_BYTES: usize = 1 << 20;
