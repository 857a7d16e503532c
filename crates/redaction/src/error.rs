//! The crate's single error type: what can go wrong while compiling a secret set.

/// Shorthand for results whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can fail in this crate.
///
/// Only building a [`Secrets`](crate::Secrets) set can fail; redaction itself never does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configured values could not be compiled into one matcher, typically because
    /// the set is too large for the automaton's state identifiers.
    #[error("could not compile {count} secret values into a matcher")]
    Build {
        /// How many distinct values the set was built from.
        count: usize,
        /// The matcher library's own explanation, kept opaque so that upgrading it cannot
        /// change this crate's API.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}
