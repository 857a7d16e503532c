#![doc = include_str!("../README.md")]

pub mod ai;
pub mod chat;
mod commands;
mod config;
mod error;
mod interpreter;
mod natives;
mod recorder;
mod registry;
mod render;
mod store;
pub mod syntax;
pub mod value;

pub use commands::{
    HISTORY_DEFAULT_ROWS, MAX_REPEAT, MAX_XARGS_ITEMS, XARGS_PARALLELISM, builtins,
};
pub use config::{
    AdminConfig, CommandConfig, DEFAULT_LOCAL_USER_ID, DEFAULT_MIN_PROBABILITY, ImgflipConfig,
    IntentRouter, IntentRouterConfig, LocalConfig, MAX_PREFIX_CHARS, MIN_MIN_PROBABILITY,
    ReleaseInfoConfig, XaiConfig, admin_users, command_settings, local_caller, release_feed,
};
pub use error::{Error, Result};
pub use interpreter::{
    Caller, Interpreter, MAX_ALIAS_DEPTH, MAX_COMMAND_RUNS, MAX_EMBEDDED_COMMANDS, MAX_NESTED_RUNS,
    Reply, Runner, Settings,
};
pub use natives::{
    DEFAULT_HISTORY_LIMIT, HelpToolError, HistoryToolError, IMPLEMENTED_NATIVE_TOOLS,
    MAX_FEED_BYTES, MAX_FEED_NOTE_CHARS, MAX_FEED_NOTES_PER_RELEASE, MAX_FEED_RELEASES,
    MAX_FEED_TITLE_CHARS, MAX_HELP_CHARS, MAX_HELP_TOPICS, MAX_HISTORY_LIMIT,
    MAX_HISTORY_PAGE_CHARS, MAX_HISTORY_QUERY_CHARS, MAX_RELEASE_NOTES, RELEASE_NOTES_JSON,
    ReleaseFeed, ReleaseNote, ReleaseToolError, help_tool, history_count_tool, history_tool,
    native_definition, native_tools, parse_feed, release_info_tool, release_latest_tool,
    release_notes,
};
pub use recorder::{
    DEFAULT_QUEUE_CAPACITY, History, HistoryOptions, MAX_RECORDED_BODY_BYTES, MAX_WRITE_BATCH,
    Notice, Notify, Writer, history,
};
pub use registry::{BoxFuture, Call, Category, CommandSpec, Handler, Plain, Registry, Route};
pub use render::{MAX_IMAGE_MESSAGES, messages};
pub use store::{
    Alias, AliasStore, HistoryFilter, HistoryOrder, HistoryQuery, HistoryRecord, HistoryRow,
    HistoryScope, HistoryStore, MAX_HISTORY_BODY_CHARS, MAX_HISTORY_NAME_CHARS, MAX_MEMORY_ALIASES,
    MAX_REMEMBERED_BYTES, MAX_REMEMBERED_CHANNELS, MAX_REMEMBERED_USERS, MemoryAliases,
    RawHistoryRow, Recent, StoreError, TextMatch, Truncated,
};
pub use value::{MAX_ROWS, MAX_VALUE_BYTES, Outcome, PathStep, Piped};
