#![doc = include_str!("../README.md")]

mod config;
mod error;

pub use config::{
    Credential, DEFAULT_MAX_TURNS, MAX_GATEWAY_ID_LEN, MAX_MAX_TURNS, NATIVE_TOOLS, Provider,
    ProviderConfig, ProviderSet, ToolChoiceMode, WireApi, is_header_token, normalize_base_url,
};
pub use error::{Error, Result};
