#![doc = include_str!("../README.md")]

mod access;
mod arguments;
mod budget;
mod catalog;
mod change;
mod config;
mod error;
mod github;
mod ledger;
pub mod limits;
mod native;
mod preflight;
mod tool_loop;
pub mod trace;

pub use access::{
    Denial, NativeServices, RequestContext, Selection, ServerUse, check_tool_calling, filter_listed,
};
pub use arguments::Arguments;
pub use budget::{CallBudget, FlagProblem, ToolFlags};
pub use catalog::Catalog;
pub use change::{PathRefusal, check_change_path, is_hidden_character};
pub use config::{
    GithubPolicy, KnownNames, PolicyConfig, ProviderModels, ProviderModelsConfig, ServerRef,
    ServerRefConfig, ToolPolicy, Toolset, ToolsetConfig, ToolsetKind,
};
pub use error::{Error, Result};
pub use github::{
    GITHUB_READ_TOOLS, GITHUB_SNAPSHOT_TOOLS, GITHUB_WRITE_TOOLS, RepositoryRefusal,
    guard_github_read, is_listed_repository, is_reserved_github_tool,
};
pub use ledger::{Ledger, LedgerEntry, Outcome, Progress, ProgressCall};
pub use native::{NativeKind, NativeTool};
pub use preflight::{PreparedCall, Refusal, preflight};
pub use tool_loop::{
    AccessState, Answer, BudgetGuidance, Execution, LoopFailure, LoopSettings, ModelTurn,
    ToolExecutor, run,
};
// The shared vocabulary this crate's API speaks, re-exported so that the crate can be used
// on its own.
pub use yetibot_conversation::{
    AdapterKind, Conversation, Identity, Message, ModelResponse, NATIVE_SOURCE, Provenance,
    ReplayItem, ToolCall, ToolDefinition, ToolId, function_name,
};
