#![doc = include_str!("../README.md")]

pub mod ai;
mod commands;
mod config;
mod error;
mod interpreter;
mod natives;
mod registry;
mod render;
mod store;
pub mod syntax;
pub mod value;

pub use commands::{MAX_REPEAT, MAX_XARGS_ITEMS, XARGS_PARALLELISM, builtins};
pub use config::{
    AdminConfig, CommandConfig, DEFAULT_LOCAL_USER_ID, DEFAULT_MIN_PROBABILITY, ImgflipConfig,
    IntentRouter, IntentRouterConfig, LocalConfig, MAX_PREFIX_CHARS, MIN_MIN_PROBABILITY,
    XaiConfig, admin_users, command_settings, local_caller,
};
pub use error::{Error, Result};
pub use interpreter::{
    Caller, Interpreter, MAX_ALIAS_DEPTH, MAX_COMMAND_RUNS, MAX_EMBEDDED_COMMANDS, MAX_NESTED_RUNS,
    Reply, Runner, Settings,
};
pub use natives::native_tools;
pub use registry::{BoxFuture, Call, Category, CommandSpec, Handler, Plain, Registry, Route};
pub use render::{MAX_IMAGE_MESSAGES, messages};
pub use store::{
    Alias, AliasStore, MAX_MEMORY_ALIASES, MAX_REMEMBERED_BYTES, MAX_REMEMBERED_CHANNELS,
    MAX_REMEMBERED_USERS, MemoryAliases, Recent, StoreError,
};
pub use value::{MAX_ROWS, MAX_VALUE_BYTES, Outcome, PathStep, Piped};
