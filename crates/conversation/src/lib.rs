#![doc = include_str!("../README.md")]

mod bidi;
mod endpoint;
mod error;
pub mod limits;
mod message;
mod provenance;
mod tool;
mod usage;

pub use bidi::{is_bidi_control, strip_bidi_controls};
pub use endpoint::{EndpointProblem, check_endpoint};
pub use error::{Error, Result};
pub use message::{Conversation, Message, ModelResponse, ReplayItem, ToolCall};
pub use provenance::{AdapterKind, Identity, Provenance};
pub use tool::{NATIVE_SOURCE, ToolDefinition, ToolId, function_name};
pub use usage::{Amount, USD_TICKS_PER_DOLLAR, Usage};
