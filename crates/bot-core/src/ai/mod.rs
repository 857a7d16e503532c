//! The AI commands (`ai` today; `grok`, `zen` and `cf` as they land): options, routing,
//! piped data, the tool loop's model turn and tool router, and the metadata every answer
//! carries, with its cost label.

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
mod zen;

pub use command::commands;
pub use meta::{AnswerMeta, TokenCounts};
pub use prompt::RUNNER_INSTRUCTIONS;
pub use services::{AiServices, Clock};
