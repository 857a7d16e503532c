#![doc = include_str!("../README.md")]

mod config;
mod error;

pub use config::{
    DEFAULT_TIMEOUT, RESERVED_SERVER_NAME, Server, ServerConfig, ServerSet, TIMEOUT_MS_RANGE,
    Transport, check_server_url,
};
pub use error::{Error, Result};
