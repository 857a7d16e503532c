#![doc = include_str!("../README.md")]

mod access;
mod arguments;
mod budget;
mod catalog;
mod config;
mod error;
mod github;
mod ledger;
mod preflight;
mod tool_loop;
pub mod trace;

pub use access::{
    Denial, GITHUB_NATIVE_TOOLS, Identity, NATIVE_SOURCE, NativeServices, Provenance,
    RequestContext, Selection, ServerUse, check_tool_calling, filter_listed,
};
pub use arguments::Arguments;
pub use budget::{CallBudget, FlagProblem, ToolFlags};
pub use catalog::{Catalog, MAX_TOOLS, ToolDefinition, ToolId, ToolSpec, function_name};
pub use config::{
    AdapterKind, FALLBACK_TOOL_CALLS, GithubPolicy, KnownNames, MAX_TOOL_CALLS, NATIVE_TOOL_NAMES,
    PolicyConfig, ProviderModels, ProviderModelsConfig, ServerRef, ServerRefConfig, ToolPolicy,
    Toolset, ToolsetConfig, ToolsetKind,
};
pub use error::{Error, Result};
pub use github::{
    GITHUB_READ_TOOLS, GITHUB_SNAPSHOT_TOOLS, GITHUB_WRITE_TOOLS, is_reserved_github_tool,
};
pub use ledger::{Ledger, LedgerEntry, Outcome, Progress, ProgressCall};
pub use preflight::{MAX_ARGUMENT_CHARS, PreparedCall, Refusal, ToolCall, preflight};
pub use tool_loop::{
    AccessState, Answer, BudgetGuidance, Conversation, Execution, LoopFailure, LoopSettings,
    MAX_RESULT_CHARS, Message, ModelResponse, ModelTurn, ToolExecutor, run,
};
