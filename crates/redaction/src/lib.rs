#![doc = include_str!("../README.md")]

mod credential;
mod error;
mod json;
mod panic;
mod scan;
mod secret;
mod secrets;
mod stream;
mod view;

pub use error::{Error, Result};
pub use json::{SENSITIVE_FIELDS, is_sensitive_field};
pub use panic::{MAX_PANIC_MESSAGE_CHARS, install_panic_hook, panic_report};
pub use secret::{REDACTED, Secret};
pub use secrets::{MIN_SECRET_LEN, Secrets, SecretsBuilder};
pub use stream::StreamRedactor;
