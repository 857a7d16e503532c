#![doc = include_str!("../README.md")]

mod args;
mod cf;
mod clef;
mod command;
mod config;
pub mod cost;
mod delegate;
pub mod flags;
mod free;
mod gi;
mod github;
mod images;
mod listing;
mod meme;
mod meta;
mod natives;
mod offer;
mod pinned;
pub mod piped;
mod prompt;
mod proposals;
mod request;
mod router;
mod services;
pub mod thread;
mod turn;
mod wise;
mod zen;

pub mod limits;

pub use command::commands;
pub use config::wise::{
    DEFAULT_WISE_API_URL, WiseAccount, WiseBalanceConfig, WiseChatConfig, WiseConfig,
    WiseProfileConfig, wise_account,
};
pub use config::{
    DEFAULT_IMGFLIP_API_URL, ImgflipAccount, ImgflipConfig, IntentRouter, IntentRouterConfig,
    ReleaseFeed, ReleaseInfoConfig, XaiAccount, XaiConfig, github_api_url, imgflip_account,
    release_feed, xai_account,
};
pub use meta::{AnswerMeta, TokenCounts};
pub use natives::{
    HelpToolError, HistoryToolError, ReleaseNote, ReleaseToolError, help_tool, history_count_tool,
    history_tool, native_tools, parse_feed, release_info_tool, release_latest_tool, release_notes,
};
pub use pinned::{GROK_PROVIDER, XAI_BASE_URL, XAI_DEFAULT_MODEL, xai_provider};
pub use request::{CATEGORY, RUNNER_INSTRUCTIONS};
pub use services::{AiServices, Clock, Discover};
pub use yetibot_pull_requests::DEFAULT_GITHUB_API_URL;
pub use yetibot_pull_requests::{Audit, AuditEvent, AuditStep};
