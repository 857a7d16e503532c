#![doc = include_str!("../README.md")]

mod config;
mod error;

pub use config::{
    AdminConfig, DEFAULT_MIN_PROBABILITY, ImgflipConfig, IntentRouter, IntentRouterConfig,
    MIN_MIN_PROBABILITY, XaiConfig, admin_users,
};
pub use error::{Error, Result};
