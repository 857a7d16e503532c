//! The error type of the yetibot-ai-providers crate, with a closed set of categories.
//!
//! No message ever contains a key, a key-file path or its content, a request header or a
//! provider's response body: the fields are provider names, statuses and static reasons,
//! and at most a provider's own short account of an error (its error code, or the message
//! of its JSON error body), bounded, cleaned of control characters and redacted.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is invalid. `path` is relative to the `:ai` map
    /// (`providers[1].url`); `reason` never contains the value.
    #[error("{path}: {reason}")]
    InvalidConfig {
        /// Where the problem is, relative to the `:ai` map.
        path: String,
        /// What is wrong, in words that are safe to print.
        reason: String,
    },
    /// The provider is not ready for this request (a placeholder key, no model); nothing was
    /// sent.
    #[error("provider {provider} is not set up: {reason}")]
    Setup {
        /// The provider's name.
        provider: String,
        /// What to configure, in words that are safe to print.
        reason: &'static str,
    },
    /// The key file could not be used; nothing was sent.
    #[error("credential unavailable for provider {provider}")]
    CredentialUnavailable {
        /// The provider's name.
        provider: String,
    },
    /// The connection could not be established; nothing reached the provider.
    #[error("provider {provider} is unreachable")]
    Unreachable {
        /// The provider's name.
        provider: String,
    },
    /// A deadline passed: connecting, waiting for the reply or between body reads.
    #[error("provider {provider} timed out {phase}")]
    Timeout {
        /// The provider's name.
        provider: String,
        /// Which wait timed out, e.g. `while connecting`.
        phase: &'static str,
    },
    /// The provider answered with a redirect, which is never followed.
    #[error("provider {provider} answered with redirect {status}, which is not followed")]
    Redirect {
        /// The provider's name.
        provider: String,
        /// The 3xx status.
        status: u16,
    },
    /// The provider limited the request rate (429).
    #[error("provider {provider} is rate limited{}", retry_hint(*retry_after_secs))]
    RateLimited {
        /// The provider's name.
        provider: String,
        /// A numeric `Retry-After` in seconds, when supplied and at most one day.
        retry_after_secs: Option<u64>,
    },
    /// The provider denied access (403).
    #[error("provider {provider} denied access")]
    AccessDenied {
        /// The provider's name.
        provider: String,
    },
    /// Any other non-success status.
    #[error("provider {provider} answered HTTP {status} ({reason}){}", detail_hint(detail.as_deref()))]
    HttpStatus {
        /// The provider's name.
        provider: String,
        /// The status code.
        status: u16,
        /// The status's standard reason phrase.
        reason: &'static str,
        /// What the provider said was wrong, when its error body says so in JSON
        /// (`error.message`, else `error.code`, else a top-level `message` or `detail`): at
        /// most [`MAX_ERROR_DETAIL_CHARS`](crate::limits::MAX_ERROR_DETAIL_CHARS)
        /// characters, control characters removed, every known credential redacted. Never
        /// the body itself.
        detail: Option<String>,
    },
    /// The reply could not be understood, or the stream ended before completing.
    #[error("provider {provider} sent a malformed response: {reason}")]
    Malformed {
        /// The provider's name.
        provider: String,
        /// What was wrong, from a fixed list.
        reason: &'static str,
    },
    /// The reply exceeded a size bound.
    #[error("provider {provider} sent too much data: {what} exceeds {limit} bytes")]
    TooLarge {
        /// The provider's name.
        provider: String,
        /// Which bound, e.g. `SSE event`.
        what: &'static str,
        /// The bound.
        limit: usize,
    },
    /// The provider reported that the response failed.
    #[error("provider {provider} failed the response: {reason}{}", code_hint(code.as_deref()))]
    ProviderFailed {
        /// The provider's name.
        provider: String,
        /// Which signal ended the turn, from a fixed list.
        reason: &'static str,
        /// The error code the provider gave (`server_error`), when it gave a short one made
        /// of letters, digits, `_`, `-` and `.` only; anything else is left out.
        code: Option<String>,
    },
    /// The connection to the provider was lost after the request was sent: the request may
    /// have run.
    #[error("provider {provider} lost the connection {phase}")]
    ConnectionLost {
        /// The provider's name.
        provider: String,
        /// When: `before its answer began`, `while it sent its answer`.
        phase: &'static str,
    },
    /// The TLS configuration could not be built.
    #[error("the HTTPS client could not be built")]
    Tls(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The closed set of error categories callers branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Category {
    /// Invalid configuration.
    Config,
    /// The provider needs setup (placeholder key, missing model).
    Setup,
    /// The key file could not be used.
    Credential,
    /// No connection.
    Unreachable,
    /// A deadline passed.
    Timeout,
    /// A 3xx reply.
    Redirect,
    /// A 429 reply.
    RateLimited,
    /// A 403 reply.
    AccessDenied,
    /// Another non-success status.
    HttpStatus,
    /// An unparseable reply or an unfinished stream.
    Malformed,
    /// A reply over a size bound.
    TooLarge,
    /// The provider reported a failed response.
    ProviderFailed,
    /// The connection was lost after the request was sent.
    ConnectionLost,
    /// The local HTTPS client could not be built.
    Client,
}

impl Category {
    /// A stable kebab-case name, e.g. `rate-limited`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Setup => "setup",
            Self::Credential => "credential",
            Self::Unreachable => "unreachable",
            Self::Timeout => "timeout",
            Self::Redirect => "redirect",
            Self::RateLimited => "rate-limited",
            Self::AccessDenied => "access-denied",
            Self::HttpStatus => "http-status",
            Self::Malformed => "malformed-response",
            Self::TooLarge => "too-large",
            Self::ProviderFailed => "provider-failed",
            Self::ConnectionLost => "connection-lost",
            Self::Client => "client",
        }
    }
}

impl Error {
    /// For [`Error::InvalidConfig`], its relative path and reason; `None` otherwise.
    #[must_use]
    pub fn config_problem(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidConfig { path, reason } => Some((path, reason)),
            _ => None,
        }
    }

    /// The error's category.
    #[must_use]
    pub fn category(&self) -> Category {
        match self {
            Self::InvalidConfig { .. } => Category::Config,
            Self::Setup { .. } => Category::Setup,
            Self::CredentialUnavailable { .. } => Category::Credential,
            Self::Unreachable { .. } => Category::Unreachable,
            Self::Timeout { .. } => Category::Timeout,
            Self::Redirect { .. } => Category::Redirect,
            Self::RateLimited { .. } => Category::RateLimited,
            Self::AccessDenied { .. } => Category::AccessDenied,
            Self::HttpStatus { .. } => Category::HttpStatus,
            Self::Malformed { .. } => Category::Malformed,
            Self::TooLarge { .. } => Category::TooLarge,
            Self::ProviderFailed { .. } => Category::ProviderFailed,
            Self::ConnectionLost { .. } => Category::ConnectionLost,
            Self::Tls(_) => Category::Client,
        }
    }

    /// Whether the provider may have processed (and billed) the request although no usable
    /// answer arrived: a timeout after sending, a broken or malformed stream, a failed
    /// response. Such a request must not be repeated blindly.
    #[must_use]
    pub fn is_unknown_outcome(&self) -> bool {
        matches!(
            self,
            Self::Timeout { phase, .. } if *phase != TIMEOUT_CONNECT
        ) || matches!(
            self,
            Self::Malformed { .. }
                | Self::TooLarge { .. }
                | Self::ProviderFailed { .. }
                | Self::ConnectionLost { .. }
        )
    }

    /// Whether the request certainly never reached the peer: it could not be built, its
    /// credential could not be read, or no connection was made.
    #[must_use]
    pub fn never_sent(&self) -> bool {
        matches!(
            self,
            Self::Timeout { phase, .. } if *phase == TIMEOUT_CONNECT
        ) || matches!(
            self.category(),
            Category::Config
                | Category::Setup
                | Category::Credential
                | Category::Unreachable
                | Category::Client
        )
    }

    /// Whether the peer answered with a refusal (a redirect, `403`, `429` or another `4xx`
    /// status): the request arrived and was not carried out.
    #[must_use]
    pub fn refused(&self) -> bool {
        match self {
            Self::Redirect { .. } | Self::RateLimited { .. } | Self::AccessDenied { .. } => true,
            Self::HttpStatus { status, .. } => (400..500).contains(status),
            _ => false,
        }
    }

    /// A short message that is safe to show in chat.
    #[must_use]
    pub fn user_message(&self) -> String {
        self.to_string()
    }

    /// The `Retry-After` of a 429 reply, in seconds.
    #[must_use]
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::RateLimited {
                retry_after_secs, ..
            } => *retry_after_secs,
            _ => None,
        }
    }

    pub(crate) fn config(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidConfig {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// The timeout phase for connecting; such a timeout means nothing was sent.
pub(crate) const TIMEOUT_CONNECT: &str = "while connecting";

fn retry_hint(secs: Option<u64>) -> String {
    secs.map(|s| format!(" (retry after {s} s)"))
        .unwrap_or_default()
}

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// ` (code CODE)` for a provider's short error code, nothing otherwise.
fn code_hint(code: Option<&str>) -> String {
    code.map(|code| format!(" (code {code})"))
        .unwrap_or_default()
}

/// A provider's error code when it is short and plain enough to show: at most 64 letters,
/// digits, `_`, `-` and `.`. A code is the provider's text, so anything else is left out.
pub(crate) fn plain_code(code: Option<&str>) -> Option<String> {
    code.filter(|c| {
        (1..=64).contains(&c.len())
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    })
    .map(str::to_owned)
}

/// `: DETAIL` for a provider's own account of an error, nothing otherwise.
fn detail_hint(detail: Option<&str>) -> String {
    detail.map(|d| format!(": {d}")).unwrap_or_default()
}
