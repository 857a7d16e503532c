#![doc = include_str!("../README.md")]

mod caller;
mod commands;
mod config;
mod error;
mod files;
mod hygiene;
mod interpreter;
pub mod limits;
mod platform;
mod recent;
mod registry;
mod render;
pub mod syntax;
pub mod value;

pub use caller::Caller;
pub use commands::builtins;
pub use config::{
    AdminConfig, CommandConfig, DEFAULT_LOCAL_USER_ID, LocalConfig, admin_users, command_settings,
    local_caller,
};
pub use error::{ConfigError, Stopped};
pub use files::{FileError, Publish, ReplyFile};
pub use interpreter::{Interpreter, Reply, Settings};
pub use platform::{
    LiveText, Platform, PlatformError, Progress, Step, StepOutcome, ThreadError, ThreadMessage,
    ThreadSource,
};
pub use recent::Recent;
pub use registry::{
    Call, Category, CommandSpec, FileSlot, Handler, Hints, Plain, Registry, Route, Runner,
};
pub use render::messages;
pub use value::{MAX_NOTES, Outcome, PathStep, Piped, ReplyMeta};
