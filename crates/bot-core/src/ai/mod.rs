//! The AI commands (`ai`, `grok`, `zen`, `cf`): options, routing, piped data, thread
//! context, the tool loop's model turn and tool router, the `ai` delegation tool, and the
//! metadata every answer carries, with its cost label.

mod cf;
mod command;
pub mod cost;
pub mod delegate;
pub mod flags;
mod listing;
mod meta;
pub mod piped;
pub mod progress;
mod prompt;
mod router;
mod services;
pub mod thread;
mod turn;
mod zen;

pub use command::commands;
pub use meta::{AnswerMeta, TokenCounts};
pub use prompt::RUNNER_INSTRUCTIONS;
pub use services::{
    AiServices, Clock, GROK_PROVIDER, XAI_BASE_URL, XAI_DEFAULT_MODEL, xai_provider,
};
