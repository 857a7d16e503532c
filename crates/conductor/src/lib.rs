#![doc = include_str!("../README.md")]

mod cache;
mod conductor;
mod platform;

pub use cache::DEFAULT_CACHE_CAPACITY;
pub use conductor::{Conductor, ConductorOptions, DEFAULT_DEADLINE, EXPIRED_BUTTON, UNDELIVERED};
