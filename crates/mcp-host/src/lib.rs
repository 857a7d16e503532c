#![doc = include_str!("../README.md")]

mod catalog;
mod config;
mod error;
mod limits;
mod listing;
mod names;
mod outcome;
mod replies;
mod sanitize;
mod session;

pub use catalog::{
    DropReason, DroppedTool, STANDARD_ANNOTATION_HINTS, ServerCatalog, ServerInstructions, ToolInfo,
};
pub use config::{
    DEFAULT_TIMEOUT, DENIED_ENV_NAMES, DENIED_ENV_PREFIXES, Server, ServerConfig, ServerSet,
    TIMEOUT_MS_RANGE, Transport, check_server_url,
};
pub use error::{Error, Result};
pub use limits::{
    MAX_LIST_PAGES, MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, MAX_TEXT_CHARS,
    TRUNCATED_MARKER, UNTRUSTED_INSTRUCTIONS_LABEL,
};
pub use listing::{
    SUMMARY_DESCRIPTION_CHARS, aggregate_data, focused_help, lookup, server_rows, summary_row,
    summary_rows, tool_data,
};
pub use names::is_valid_tool_name;
pub use outcome::{CallOutcome, ToolOutput, UnknownReason};
pub use sanitize::sanitize_display;
pub use session::{
    CANCEL_REASON, CLOSE_GRACE, FALLBACK_PATH, Host, HostOptions, MAX_MESSAGE_BYTES,
    STANDARD_ENV_NAMES, STDERR_TAIL_BYTES, ServerSelection, Session,
};
// The shared vocabulary this crate's API speaks, re-exported so that the crate can be used
// on its own.
pub use yetibot_conversation::{
    MAX_ARGUMENT_CHARS, MAX_FUNCTION_NAME_BYTES, MAX_RESULT_CHARS, MAX_TOOL_NAME_CHARS, MAX_TOOLS,
    NATIVE_SOURCE, ToolId, function_name,
};
