//! Request-scoped privacy for logs.
//!
//! Redacting known credentials is not enough once a request reads private content: a
//! GitHub file, a staged proposal or an image sent for extraction is private without
//! containing any secret the bot knows about, and a protocol crate logging at `debug` can
//! quote it whole. So a request runs inside a [`request_span`], and the code that is about
//! to touch private content calls [`mark_private`] inside it. A subscriber that honours the
//! contract (the bot's own does) then writes nothing more from inside that request, at any
//! level and from any crate, except the events whose target the embedder keeps on purpose
//! (the bot keeps its sanitized proposal audit). Other requests, running at the same time,
//! log as they always did.
//!
//! The contract, for a subscriber:
//! - the request span has the target [`REQUEST_TARGET`]; keep it enabled at every level;
//! - the marker is a `TRACE` event with the target [`PRIVATE_TARGET`], emitted inside the
//!   request's span or a span below it; keep it enabled, never write it, and from then on
//!   drop the events whose span scope holds that request span.
//!
//! Without such a subscriber both are inert: a span and a trace event that most filters
//! leave disabled, so nothing changes for an embedder who ignores them.
//!
//! ```
//! use tracing::Instrument as _;
//! use yetibot_redaction::private::{mark_private, request_span};
//!
//! async fn answer() {
//!     // ... the request decides to read a private repository:
//!     mark_private();
//!     // ... from here on, this request's log events are dropped.
//! }
//!
//! # fn main() {
//! let request = answer().instrument(request_span());
//! # drop(request);
//! # }
//! ```

/// The target of every [`request_span`].
pub const REQUEST_TARGET: &str = "yetibot_request";

/// The target of the marker event [`mark_private`] emits.
pub const PRIVATE_TARGET: &str = "yetibot_private";

/// A new span for one request (one chat event, one command line). Tasks a request spawns
/// belong to it when they are instrumented with it (`.in_current_span()`).
#[must_use]
pub fn request_span() -> tracing::Span {
    tracing::info_span!(target: REQUEST_TARGET, "request")
}

/// Marks the current request private: it is about to touch private content. Calling it
/// again, or outside any request span, changes nothing.
pub fn mark_private() {
    tracing::trace!(target: PRIVATE_TARGET, "private request");
}
