//! The AI commands (`ai` and `cf` today; `grok` and `zen` as they land): options, routing,
//! piped data, the tool loop's model turn and tool router, and the metadata every answer
//! carries, with its cost label.

mod cf;
mod command;
pub mod cost;
pub mod flags;
mod listing;
mod meta;
pub mod piped;
mod prompt;
mod router;
mod services;
mod turn;

pub use command::commands;
pub use meta::{AnswerMeta, TokenCounts};
pub use prompt::RUNNER_INSTRUCTIONS;
pub use services::{AiServices, Clock};
