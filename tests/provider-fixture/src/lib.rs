#![doc = include_str!("../README.md")]
//!
//! The server runs on the caller's tokio runtime; dropping the [`Fixture`] stops accepting
//! connections.

pub mod client;
pub mod imgflip;
mod reply;
pub mod script;
mod server;
pub mod wise;
pub mod workers;
pub mod xai_images;

pub use reply::{End, Reply};
pub use server::{Fixture, Recorded};
