//! Every bound of the provider client, in one place: configuration ranges, key files, model
//! listings and their records, advertised prices, waits, and the doctor's probe.

pub use crate::client::PROBE_MAX_OUTPUT_TOKENS;
pub use crate::config::{
    DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_MAX_TURNS, MAX_CONTEXT_LENGTH, MAX_GATEWAY_ID_LEN,
    MAX_MAX_OUTPUT_TOKENS, MAX_MAX_TURNS, MIN_CONTEXT_LENGTH,
};
pub use crate::credential::{KEY_FILE_READ_TIMEOUT, MAX_KEY_FILE_BYTES};
pub use crate::models::{
    CLOUDFLARE_MAX_PAGES, CLOUDFLARE_PAGE_SIZE, MAX_MODEL_ID_BYTES, MAX_MODELS, MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH, MAX_RECORD_ENTRIES, MAX_RECORD_STRING_CHARS, MAX_TASK_NAME_CHARS,
};
pub use crate::pricing::{MAX_PRICE_FIELDS, MAX_UNKNOWN_NAME_BYTES, MAX_UNKNOWN_NAMES};
pub use crate::transport::{MAX_ERROR_DETAIL_CHARS, MAX_RETRY_AFTER_SECS};
