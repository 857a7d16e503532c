#![doc = include_str!("../README.md")]

mod credential;
mod error;
mod json;
pub mod limits;
mod panic;
pub mod private;
mod scan;
mod secret;
mod secrets;
mod stream;
mod view;

pub use error::{Error, Result};
pub use json::{SENSITIVE_FIELDS, is_sensitive_field};
pub use panic::{install_panic_hook, panic_report};
pub use secret::{REDACTED, Secret};
pub use secrets::{Secrets, SecretsBuilder};
pub use stream::StreamRedactor;
