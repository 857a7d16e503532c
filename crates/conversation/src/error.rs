//! The error type of the yetibot-conversation crate.

/// Everything that can go wrong when building this crate's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A trusted identity was built with an empty or whitespace-only user ID.
    #[error("a trusted identity needs a nonblank platform user ID")]
    BlankUserId,
    /// A name that is not one of the adapter kinds. The name itself is not repeated, since
    /// it may come from configuration.
    #[error("not an adapter name: expected \"slack\", \"discord\", \"web\" or \"cli\"")]
    UnknownAdapter,
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
