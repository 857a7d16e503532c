//! The error type of the json-util crate.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `operation` argument names none of the 28 operators.
    #[error("unknown operation")]
    UnknownOperation,
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
