#![doc = include_str!("../README.md")]

mod capability;
mod chat;
mod client;
mod config;
mod credential;
mod error;
pub mod limits;
mod models;
mod pricing;
mod responses;
mod routing;
mod service;
mod sse;
mod transport;
mod turn;
mod usage;
mod workers;

pub use capability::{
    AuthKind, Billing, Capabilities, ContextWindowSource, ModelListing, OutputTokenParam,
    is_placeholder_key,
};
pub use client::{PROBE_TOOL, ProbeReport, probe_tool};
pub use config::{
    Credential, NATIVE_TOOLS, Provider, ProviderConfig, ProviderSet, ToolChoiceMode, WireApi,
    is_header_token, normalize_base_url,
};
pub use credential::read_key_file;
pub use error::{Category, Error, Result};
pub use models::{ModelInfo, ModelInterface, ModelList, TaskCategory, UNCATEGORIZED};
pub use pricing::{Price, Pricing};
pub use routing::{DefaultError, Route, RouteError, RouteRequest, RuntimeDefaults, route};
pub use service::{
    SERVICE_BODY_DEADLINE, SERVICE_READ_TIMEOUT, ServiceBody, ServiceCall, ServiceMethod,
};
pub use transport::{Client, ClientOptions};
pub use turn::{Ending, Turn, TurnEvent, TurnRequest};
pub use workers::{
    DEFAULT_WORKERS_API_URL, MAX_WORKERS_REPLY_BYTES, WORKERS_AI, WORKERS_BODY_DEADLINE,
    WORKERS_READ_TIMEOUT, WorkersAccount,
};
pub use yetibot_conversation::{
    Amount, Message, ModelResponse, ReplayItem, ToolCall, ToolDefinition, ToolId, Usage,
};
