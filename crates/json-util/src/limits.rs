//! The tool's hard bounds: structural limits on JSON values and the small bounds on numbers,
//! optional fields and replies.

/// Structural limits a JSON text or value must stay within.
///
/// The reader enforces them while it reads, so a hostile text is rejected before it can
/// allocate past them; results are checked against the same numbers before they are
/// serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most UTF-8 bytes the serialized text may have.
    pub max_bytes: usize,
    /// Deepest nesting level a value may sit at; the root is at depth 0 and every member of
    /// an array or object is one level below its container.
    pub max_depth: usize,
    /// Most members one array or object may hold.
    pub max_entries: usize,
    /// Most nodes the whole value may have, counting every container, every scalar and every
    /// object key.
    pub max_nodes: usize,
}

impl Limits {
    /// The bounds of the `input_json` value and of every result.
    pub const TOOL: Self = Self {
        max_bytes: MAX_INPUT_BYTES,
        max_depth: 8,
        max_entries: 128,
        max_nodes: 1024,
    };

    /// The bounds used to read the tool-arguments object itself.
    ///
    /// The host's envelope caps arguments at [`MAX_ARGUMENT_CHARS`] characters, which is at
    /// most four times as many bytes; the structural limits are those of the tool.
    pub const ARGUMENTS: Self = Self {
        max_bytes: MAX_ARGUMENT_CHARS * 4,
        ..Self::TOOL
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::TOOL
    }
}

/// Most UTF-8 bytes of the serialized `input_json` value.
pub const MAX_INPUT_BYTES: usize = 12_288;

/// Most UTF-8 bytes of a whole serialized reply, success or failure.
pub const MAX_REPLY_BYTES: usize = 12_288;

/// The host's cap on one tool call's argument text, in characters: the shared limit of
/// `yetibot-conversation`, so every crate refuses the same calls.
pub use yetibot_conversation::limits::MAX_ARGUMENT_CHARS;

/// Most characters of one numeric token, in input and in results.
pub const MAX_NUMBER_CHARS: usize = 200;

/// Most significant digits of a decimal's unscaled value.
pub const MAX_DECIMAL_PRECISION: u64 = 128;

/// Smallest decimal scale (the negated power of ten the unscaled value is multiplied by).
pub const MIN_DECIMAL_SCALE: i64 = -308;

/// Largest decimal scale.
pub const MAX_DECIMAL_SCALE: i64 = 308;

/// Largest magnitude of a `range` start, end or step.
pub const MAX_RANGE_MAGNITUDE: i64 = 1_000_000;

/// Largest `count` of `take` and `drop`.
pub const MAX_COUNT: i64 = 128;

/// Most characters of a separator or query.
pub const MAX_TEXT_FIELD_CHARS: usize = 200;

/// Most segments of a `get` path.
pub const MAX_PATH_SEGMENTS: usize = 8;

/// Largest array index a `get` path may name.
pub const MAX_PATH_INDEX: i64 = 127;
