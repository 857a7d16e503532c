//! The workflow's bounds, in one place.
use std::time::Duration;

/// Files a proposal may add or update.
pub const MAX_STAGED_FILES: usize = 5;
/// Bytes of new UTF-8 content a proposal may carry, all files together.
pub const MAX_STAGED_BYTES: usize = 8 * 1024;
/// Bytes an existing file may have to be updated (it is read whole).
pub const MAX_EXISTING_FILE_BYTES: usize = 20_000;
/// A directory with this many entries or more is not listed for a new file.
pub const MAX_DIRECTORY_ENTRIES: usize = 1_000;
/// Source reads one staging makes at most: the base commit, and per file its parent
/// directory and its current text.
pub const MAX_SOURCE_READS: usize = 1 + 2 * MAX_STAGED_FILES;
/// MCP operations one approved execution makes at most.
pub const MAX_EXECUTION_OPERATIONS: usize = 16;
/// How long a proposal may be approved after it was staged.
pub const PROPOSAL_TTL: Duration = Duration::from_secs(600);
/// Proposals held at once.
pub const MAX_PROPOSALS: usize = 128;
/// The longest pull request title.
pub const MAX_TITLE_CHARS: usize = 200;
/// The longest pull request body the model writes (the host's footer comes after).
pub const MAX_BODY_CHARS: usize = 4_000;
/// The branch prefix when a toolset sets none.
pub const DEFAULT_BRANCH_PREFIX: &str = "yetibot/ai-";
/// Code-work receipts of automatic routing held at once.
pub const MAX_CODE_WORK_RECEIPTS: usize = 128;
/// Read-only routing decisions held at once (the oldest is dropped first).
pub const MAX_READ_ONLY_RECEIPTS: usize = 128;
/// How long a completed receipt is kept.
pub const RECEIPT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

pub use crate::review::PAGE_CHARS;
