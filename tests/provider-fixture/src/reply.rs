//! Scripted replies: what the fixture answers and how the body ends.

use std::time::Duration;

use bytes::Bytes;

/// How a streamed body ends after its last chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The body ends normally.
    Close,
    /// The body never ends and never sends more data (a stalled stream).
    Stall,
    /// The connection is torn down mid-body (a truncated transfer).
    Abort,
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Body chunks, sent in order.
    pub chunks: Vec<Bytes>,
    /// A pause before each chunk (a slow stream).
    pub chunk_delay: Option<Duration>,
    /// What happens after the last chunk.
    pub end: End,
}

impl Reply {
    /// A `200` JSON reply.
    #[must_use]
    pub fn json(body: impl Into<String>) -> Self {
        Self::status_json(200, body)
    }

    /// A JSON reply with this status.
    #[must_use]
    pub fn status_json(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::from(body.into())],
            chunk_delay: None,
            end: End::Close,
        }
    }

    /// A `200` server-sent-event stream whose chunks are sent as given.
    #[must_use]
    pub fn sse_chunks<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::sse_bytes(chunks.into_iter().map(|c| Bytes::from(c.into())))
    }

    /// A `200` server-sent-event stream of raw byte chunks, for bodies that are not UTF-8
    /// piece by piece (a byte-order mark split byte by byte, invalid bytes).
    #[must_use]
    pub fn sse_bytes<I, B>(chunks: I) -> Self
    where
        I: IntoIterator<Item = B>,
        B: Into<Bytes>,
    {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: chunks.into_iter().map(Into::into).collect(),
            chunk_delay: None,
            end: End::Close,
        }
    }

    /// A `200` SSE stream with one `data:` event per JSON value, each in its own chunk.
    #[must_use]
    pub fn sse_events<I, S>(events: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Self::sse_chunks(
            events
                .into_iter()
                .map(|e| format!("data: {}\n\n", e.as_ref())),
        )
    }

    /// A redirect with this 3xx status pointing at `location`.
    #[must_use]
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::status_json(status, "{}").header("location", location)
    }

    /// Adds a response header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Pauses before each chunk.
    #[must_use]
    pub fn slow(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// Sets how the body ends.
    #[must_use]
    pub fn ending(mut self, end: End) -> Self {
        self.end = end;
        self
    }
}
