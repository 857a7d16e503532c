//! The error type of the yetibot-discovery-cache crate.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// More providers are configured than the cache observes.
    #[error("{count} providers are configured; model discovery observes at most {limit}")]
    TooManyProviders {
        /// Configured providers.
        count: usize,
        /// The bound.
        limit: usize,
    },
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
