#![doc = include_str!("../README.md")]

mod attachment;
mod bidi;
mod edit;
mod endpoint;
mod error;
pub mod limits;
mod message;
mod provenance;
mod tool;
mod usage;

pub use attachment::{
    Attachment, MAX_ATTACHMENT_NAME_CHARS, MAX_ATTACHMENT_URL_CHARS, MAX_ATTACHMENTS,
};
pub use bidi::{is_bidi_control, strip_bidi_controls};
pub use edit::edit_distance;
pub use endpoint::{EndpointProblem, check_endpoint};
pub use error::{Error, Result};
pub use message::{Conversation, Message, ModelResponse, ReplayItem, ToolCall};
pub use provenance::{AdapterKind, Identity, Provenance};
pub use tool::{NATIVE_SOURCE, ToolDefinition, ToolId, function_name};
pub use usage::{Amount, USD_TICKS_PER_DOLLAR, Usage};
