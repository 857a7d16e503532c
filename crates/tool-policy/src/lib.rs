#![doc = include_str!("../README.md")]

mod config;
mod error;

pub use config::{
    AdapterKind, FALLBACK_TOOL_CALLS, GithubPolicy, KnownNames, MAX_TOOL_CALLS, NATIVE_TOOL_NAMES,
    PolicyConfig, ProviderModels, ProviderModelsConfig, ServerRef, ServerRefConfig, ToolPolicy,
    Toolset, ToolsetConfig, ToolsetKind,
};
pub use error::{Error, Result};
