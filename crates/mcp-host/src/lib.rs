#![doc = include_str!("../README.md")]

mod catalog;
mod config;
mod error;
pub mod limits;
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
    DENIED_ENV_NAMES, DENIED_ENV_PREFIXES, Server, ServerConfig, ServerSet, Transport,
    check_server_url,
};
pub use error::{Error, Result};
pub use limits::{TRUNCATED_MARKER, UNTRUSTED_INSTRUCTIONS_LABEL};
pub use listing::{
    aggregate_data, focused_help, lookup, server_rows, summary_row, summary_rows, tool_data,
};
pub use names::is_valid_tool_name;
pub use outcome::{CallOutcome, HostReply, ToolOutput, UnknownReason};
pub use sanitize::sanitize_display;
pub use session::{
    CANCEL_REASON, FALLBACK_PATH, Host, HostOptions, STANDARD_ENV_NAMES, ServerSelection, Session,
};
// The shared vocabulary this crate's API speaks, re-exported so that the crate can be used
// on its own.
pub use yetibot_conversation::{NATIVE_SOURCE, ToolId, function_name};
