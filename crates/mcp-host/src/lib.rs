#![doc = include_str!("../README.md")]

mod catalog;
mod config;
mod error;
mod limits;
mod listing;
mod outcome;
mod session;

pub use catalog::{Catalog, STANDARD_ANNOTATION_HINTS, ServerInstructions, ToolId, ToolInfo};
pub use config::{
    DEFAULT_TIMEOUT, RESERVED_SERVER_NAME, Server, ServerConfig, ServerSet, TIMEOUT_MS_RANGE,
    Transport, check_server_url,
};
pub use error::{Error, Result};
pub use limits::{
    MAX_ARGUMENT_CHARS, MAX_LIST_PAGES, MAX_SCHEMA_CHARS, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES,
    MAX_TEXT_CHARS, MAX_TOOLS, TRUNCATED_MARKER, UNTRUSTED_INSTRUCTIONS_LABEL,
};
pub use listing::{
    SUMMARY_DESCRIPTION_CHARS, aggregate_data, focused_help, lookup, server_rows, summary_row,
    summary_rows, tool_data,
};
pub use outcome::{CallOutcome, ToolOutput, UnknownReason};
pub use session::{
    CLOSE_GRACE, FALLBACK_PATH, Host, HostOptions, MAX_MESSAGE_BYTES, STANDARD_ENV_NAMES,
    STDERR_TAIL_BYTES, Session,
};
