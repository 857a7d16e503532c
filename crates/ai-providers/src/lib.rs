#![doc = include_str!("../README.md")]

mod capability;
mod chat;
mod client;
mod config;
mod credential;
mod error;
mod models;
mod pricing;
mod responses;
mod routing;
mod sse;
mod transport;
mod turn;
mod usage;

pub use capability::{
    AuthKind, Billing, Capabilities, ContextWindowSource, ModelListing, OutputTokenParam,
    is_placeholder_key,
};
pub use client::{PROBE_MAX_OUTPUT_TOKENS, PROBE_TOOL, ProbeReport, probe_tool};
pub use config::{
    Credential, DEFAULT_MAX_TURNS, MAX_CONTEXT_LENGTH, MAX_GATEWAY_ID_LEN, MAX_MAX_TURNS,
    MIN_CONTEXT_LENGTH, NATIVE_TOOLS, Provider, ProviderConfig, ProviderSet, ToolChoiceMode,
    WireApi, is_header_token, normalize_base_url,
};
pub use credential::{KEY_FILE_READ_TIMEOUT, MAX_KEY_FILE_BYTES};
pub use error::{Category, Error, Result};
pub use models::{
    CLOUDFLARE_MAX_PAGES, CLOUDFLARE_PAGE_SIZE, MAX_MODEL_ID_BYTES, MAX_MODELS, MAX_RECORD_BYTES,
    MAX_RECORD_DEPTH, MAX_RECORD_ENTRIES, MAX_RECORD_STRING_CHARS, MAX_TASK_NAME_CHARS, ModelInfo,
    ModelInterface, ModelList, TaskCategory, UNCATEGORIZED,
};
pub use pricing::{MAX_PRICE_FIELDS, MAX_UNKNOWN_NAME_BYTES, MAX_UNKNOWN_NAMES, Price, Pricing};
pub use routing::{DefaultError, Route, RouteError, RouteRequest, RuntimeDefaults, route};
pub use transport::{Client, ClientOptions, MAX_RETRY_AFTER_SECS};
pub use turn::{Turn, TurnEvent, TurnRequest};
pub use yetibot_conversation::{
    Amount, Message, ModelResponse, ReplayItem, ToolCall, ToolDefinition, ToolId, Usage,
};
