//! Server-sent events under bounds: wire bytes per turn, characters per event, read deadline.
//!
//! `eventsource-stream` does the framing but buffers an event without limit, so the byte
//! stream is checked before it reaches the parser: the total is counted, and so are the
//! characters since the last blank line (the end of an event).

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

use crate::config::Provider;
use crate::error::{Error, Result};
use crate::transport::ClientOptions;

/// How long a finished stream may take to end its body (see [`Events::finish`]).
pub(crate) const FINISH_GRACE: Duration = Duration::from_secs(1);

/// Why the byte stream stopped.
#[derive(Debug)]
pub(crate) enum Fault {
    Transport,
    TurnTooLarge,
    EventTooLarge,
}

type ByteStream = Pin<Box<dyn Stream<Item = std::result::Result<Bytes, Fault>> + Send>>;
type EventStream =
    Pin<Box<dyn Stream<Item = std::result::Result<Event, EventStreamError<Fault>>> + Send>>;

/// A bounded stream of server-sent events from one response body.
pub(crate) struct Events {
    inner: EventStream,
    read_timeout: Duration,
    /// One timer for the whole stream, moved forward only when it fires early: touching the
    /// timer wheel for every event would cost more than parsing small events.
    deadline: Pin<Box<Sleep>>,
    /// When the current wait began.
    last_read: Instant,
    max_event_chars: usize,
    max_turn_bytes: usize,
}

impl Events {
    pub(crate) fn from_body(body: Incoming, options: &ClientOptions) -> Self {
        let bytes = body
            .into_data_stream()
            .map(|r| r.map_err(|_| Fault::Transport));
        Self::from_stream(Box::pin(bytes), options)
    }

    pub(crate) fn from_stream(bytes: ByteStream, options: &ClientOptions) -> Self {
        let mut bound = Bound {
            total: 0,
            event_chars: 0,
            after_newline: false,
            max_total: options.max_turn_bytes,
            max_event: options.max_event_chars,
        };
        let checked = bytes.map(move |chunk| chunk.and_then(|c| bound.check(&c).map(|()| c)));
        Self {
            inner: Box::pin(checked.eventsource()),
            read_timeout: options.read_timeout,
            deadline: Box::pin(tokio::time::sleep(options.read_timeout)),
            last_read: Instant::now(),
            max_event_chars: options.max_event_chars,
            max_turn_bytes: options.max_turn_bytes,
        }
    }

    /// Reads on after the final event until the body ends, for at most [`FINISH_GRACE`]
    /// and within the same byte bounds, so the connection can return to the pool. Anything
    /// still arriving is ignored; a body that does not end in time is simply dropped.
    pub(crate) async fn finish(&mut self) {
        let drain = async { while let Some(Ok(_)) = self.inner.next().await {} };
        let _ = tokio::time::timeout(FINISH_GRACE, drain).await;
    }

    /// The next event, `None` at the end of the stream.
    pub(crate) async fn next(&mut self, provider: &Provider) -> Result<Option<Event>> {
        let name = || provider.name().to_owned();
        // The deadline measures this wait only, not the caller's time between events.
        self.last_read = Instant::now();
        let next = std::future::poll_fn(|cx| {
            if let Poll::Ready(item) = self.inner.poll_next_unpin(cx) {
                return Poll::Ready(Ok(item));
            }
            while self.deadline.as_mut().poll(cx).is_ready() {
                let due = self.last_read + self.read_timeout;
                if Instant::now() >= due {
                    return Poll::Ready(Err(()));
                }
                self.deadline.as_mut().reset(due);
            }
            Poll::Pending
        });
        match next.await {
            Err(()) => Err(Error::Timeout {
                provider: name(),
                phase: "waiting for the next stream event",
            }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(event))) => Ok(Some(event)),
            Ok(Some(Err(EventStreamError::Transport(fault)))) => Err(match fault {
                Fault::Transport => Error::Malformed {
                    provider: name(),
                    reason: "the stream was cut off",
                },
                Fault::TurnTooLarge => Error::TooLarge {
                    provider: name(),
                    what: "streamed turn",
                    limit: self.max_turn_bytes,
                },
                Fault::EventTooLarge => Error::TooLarge {
                    provider: name(),
                    what: "stream event (characters)",
                    limit: self.max_event_chars,
                },
            }),
            Ok(Some(Err(_))) => Err(Error::Malformed {
                provider: name(),
                reason: "the event stream is not valid SSE",
            }),
        }
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

struct Bound {
    total: usize,
    event_chars: usize,
    after_newline: bool,
    max_total: usize,
    max_event: usize,
}

impl Bound {
    /// Counts the wire bytes and the characters of each event in `chunk`. An event ends at
    /// a blank line; a carriage return only ever belongs to a line ending, so a line of
    /// nothing but `\r` is blank too (`\r\n\r\n` ends an event like `\n\n`). Every byte
    /// is counted once, and only line ends are inspected one by one.
    fn check(&mut self, chunk: &[u8]) -> std::result::Result<(), Fault> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > self.max_total {
            return Err(Fault::TurnTooLarge);
        }
        let mut segment = 0;
        for newline in memchr::memchr_iter(b'\n', chunk) {
            let mut start = newline;
            while start > 0 && chunk[start - 1] == b'\r' {
                start -= 1;
            }
            let blank = if start == 0 {
                self.after_newline
            } else {
                chunk[start - 1] == b'\n'
            };
            if blank {
                self.event_chars += chars(&chunk[segment..=newline]);
                if self.event_chars > self.max_event {
                    return Err(Fault::EventTooLarge);
                }
                self.event_chars = 0;
                segment = newline + 1;
            }
        }
        self.event_chars += chars(&chunk[segment..]);
        if self.event_chars > self.max_event {
            return Err(Fault::EventTooLarge);
        }
        if let Some(last) = chunk.iter().rposition(|&b| b != b'\r') {
            self.after_newline = chunk[last] == b'\n';
        }
        Ok(())
    }
}

/// Counts UTF-8 characters: every byte that is not a continuation byte starts one. Line
/// breaks and field names count too, which keeps the bound conservative. ASCII, the usual
/// case, is checked a word at a time and then needs no counting.
fn chars(bytes: &[u8]) -> usize {
    if bytes.is_ascii() {
        bytes.len()
    } else {
        bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
    }
}
