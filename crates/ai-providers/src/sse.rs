//! Server-sent events under bounds: an incremental parser that looks at every byte once,
//! plus the body reader that feeds it within the read deadline and the turn's byte bound.
//!
//! The parser follows the WHATWG event-stream rules that matter to a client that never
//! reconnects: a leading UTF-8 byte-order mark is dropped once (however the body splits
//! it), lines end at CR, LF or CRLF (also split across chunks), `:` starts a comment, a
//! field's value loses one leading space, `data` lines are joined with LF, `event` names
//! the event, and a blank line dispatches an event that has data. `id` and `retry` are
//! read and ignored. Bytes that are not UTF-8 make the stream malformed rather than being
//! replaced, since every payload we read is JSON.
//!
//! Each byte is scanned once: a line split across chunks is carried over and never
//! rescanned, so the cost of a stream is linear in its size however the peer chunks it,
//! and an event is refused the moment it crosses its character bound, before the rest of
//! it arrives.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body as _, Incoming};
use tokio::time::{Instant, Sleep};

use crate::config::Provider;
use crate::error::{Error, Result};
use crate::transport::ClientOptions;

/// How long a finished stream may take to end its body (see [`Events::finish`]).
pub(crate) const FINISH_GRACE: Duration = Duration::from_secs(1);

const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// Why a stream cannot be read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The body broke off.
    Transport,
    /// More wire bytes than the turn allows.
    TurnTooLarge,
    /// One event (with its unfinished line) has more characters than allowed.
    EventTooLarge,
    /// An event's data or name is not UTF-8.
    NotUtf8,
}

/// One dispatched event, borrowed from the parser until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event<'a> {
    /// The `event` field, empty when the stream did not name the event.
    pub(crate) event: &'a str,
    /// The `data` lines joined with LF.
    pub(crate) data: &'a str,
}

/// An incremental, bounded event-stream parser. Feed it chunks with [`Parser::feed`] and
/// take events with [`Parser::advance`] and [`Parser::event`]; it performs no I/O.
#[derive(Debug)]
pub(crate) struct Parser {
    /// The chunk being parsed and the first byte not yet looked at.
    chunk: Bytes,
    pos: usize,
    /// The start of a line that the previous chunk did not finish.
    partial: Vec<u8>,
    /// The last byte of the previous chunk was a CR, so a leading LF belongs to it.
    after_cr: bool,
    /// How many bytes of the byte-order mark have been matched; `None` once decided.
    bom: Option<usize>,
    /// The event being assembled.
    data: Vec<u8>,
    name: Vec<u8>,
    has_data: bool,
    /// Characters of the event so far, its unfinished line included.
    event_chars: usize,
    max_event_chars: usize,
    /// The last dispatched event, valid UTF-8; its buffers are reused afterwards.
    ready_data: String,
    ready_name: String,
    dispatched: bool,
}

impl Parser {
    pub(crate) fn new(max_event_chars: usize) -> Self {
        Self {
            chunk: Bytes::new(),
            pos: 0,
            partial: Vec::new(),
            after_cr: false,
            bom: Some(0),
            data: Vec::new(),
            name: Vec::new(),
            has_data: false,
            event_chars: 0,
            max_event_chars,
            ready_data: String::new(),
            ready_name: String::new(),
            dispatched: false,
        }
    }

    /// Hands the parser the next chunk. Call only after [`Parser::advance`] returned
    /// `Ok(false)` (the previous chunk is used up).
    pub(crate) fn feed(&mut self, chunk: Bytes) {
        debug_assert!(self.pos >= self.chunk.len(), "the previous chunk is unused");
        self.chunk = chunk;
        self.pos = 0;
        if let Some(matched) = self.bom {
            self.strip_bom(matched);
        }
    }

    /// Parses on until an event is dispatched (`Ok(true)`, read it with
    /// [`Parser::event`]) or the chunk is used up (`Ok(false)`, feed the next one).
    pub(crate) fn advance(&mut self) -> std::result::Result<bool, Fault> {
        // After a dispatch, the event's buffers become the assembly buffers again (nothing
        // is assembled between a dispatch and the next call).
        if self.dispatched {
            self.dispatched = false;
            self.data = std::mem::take(&mut self.ready_data).into_bytes();
            self.data.clear();
            self.name = std::mem::take(&mut self.ready_name).into_bytes();
            self.name.clear();
        }
        // The chunk is moved out while its lines are interpreted (which needs `&mut self`)
        // and put back before returning; moving a `Bytes` costs nothing, cloning one does.
        let chunk = std::mem::take(&mut self.chunk);
        let result = self.advance_in(&chunk);
        self.chunk = chunk;
        result
    }

    fn advance_in(&mut self, bytes: &[u8]) -> std::result::Result<bool, Fault> {
        if self.after_cr && self.pos < bytes.len() {
            self.after_cr = false;
            if bytes[self.pos] == b'\n' {
                self.pos += 1;
            }
        }
        while self.pos < bytes.len() {
            let rest = &bytes[self.pos..];
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                // An unfinished line: keep it, counted against the event's bound now, so an
                // oversized line fails as soon as it crosses the bound.
                self.count(rest)?;
                self.partial.extend_from_slice(rest);
                self.pos = bytes.len();
                return Ok(false);
            };
            let line_end = self.pos + end;
            let mut next = line_end + 1;
            if bytes[line_end] == b'\r' {
                if next < bytes.len() {
                    if bytes[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            // Line terminators count as one character each, which keeps the bound simple.
            self.count(&bytes[self.pos..=line_end])?;
            let dispatched = if self.partial.is_empty() {
                self.line(&bytes[self.pos..line_end])?
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&bytes[self.pos..line_end]);
                let dispatched = self.line(&line)?;
                line.clear();
                self.partial = line;
                dispatched
            };
            self.pos = next;
            if dispatched {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The event that the last [`Parser::advance`] dispatched.
    pub(crate) fn event(&self) -> Event<'_> {
        Event {
            event: &self.ready_name,
            data: &self.ready_data,
        }
    }

    /// Drops the byte-order mark at the start of the stream, however it is split. Bytes
    /// that turn out not to be a mark are parsed as the content they are.
    fn strip_bom(&mut self, mut matched: usize) {
        let bytes = &self.chunk[..];
        let mut i = 0;
        while matched < BOM.len() && i < bytes.len() {
            if bytes[i] != BOM[matched] {
                // Not a mark: whatever was held back is content, followed by this chunk.
                let mut content = BOM[..matched].to_vec();
                content.extend_from_slice(&bytes[i..]);
                self.chunk = Bytes::from(content);
                self.bom = None;
                return;
            }
            matched += 1;
            i += 1;
        }
        self.pos = i;
        self.bom = (matched < BOM.len()).then_some(matched);
    }

    fn count(&mut self, bytes: &[u8]) -> std::result::Result<(), Fault> {
        self.event_chars = self.event_chars.saturating_add(chars(bytes));
        if self.event_chars > self.max_event_chars {
            return Err(Fault::EventTooLarge);
        }
        Ok(())
    }

    /// Interprets one complete line; `true` when it dispatched an event.
    fn line(&mut self, line: &[u8]) -> std::result::Result<bool, Fault> {
        if line.is_empty() {
            self.event_chars = 0;
            return self.dispatch();
        }
        if line[0] == b':' {
            return Ok(false);
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &line[line.len()..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.name.clear();
                self.name.extend_from_slice(value);
            }
            _ => {}
        }
        Ok(false)
    }

    fn dispatch(&mut self) -> std::result::Result<bool, Fault> {
        if !self.has_data {
            self.name.clear();
            return Ok(false);
        }
        self.has_data = false;
        let data = std::mem::take(&mut self.data);
        let name = std::mem::take(&mut self.name);
        self.ready_data = String::from_utf8(data).map_err(|_| Fault::NotUtf8)?;
        self.ready_name = String::from_utf8(name).map_err(|_| Fault::NotUtf8)?;
        self.dispatched = true;
        Ok(true)
    }
}

/// A bounded stream of server-sent events from one response body.
pub(crate) struct Events {
    body: Option<Incoming>,
    parser: Parser,
    read_timeout: Duration,
    /// One timer for the whole stream, moved forward only when it fires early: touching the
    /// timer wheel for every read would cost more than parsing small events.
    deadline: Pin<Box<Sleep>>,
    total: usize,
    max_event_chars: usize,
    max_turn_bytes: usize,
}

impl Events {
    pub(crate) fn from_body(body: Incoming, options: &ClientOptions) -> Self {
        Self {
            body: Some(body),
            parser: Parser::new(options.max_event_chars),
            read_timeout: options.read_timeout,
            deadline: Box::pin(tokio::time::sleep(options.read_timeout)),
            total: 0,
            max_event_chars: options.max_event_chars,
            max_turn_bytes: options.max_turn_bytes,
        }
    }

    /// Reads on after the final event until the body ends, for at most [`FINISH_GRACE`]
    /// and within the same byte bound, so the connection can return to the pool. Anything
    /// still arriving is ignored; a body that does not end in time is simply dropped.
    pub(crate) async fn finish(&mut self) {
        let Some(body) = self.body.as_mut() else {
            return;
        };
        let max = self.max_turn_bytes;
        let total = &mut self.total;
        let drain = async {
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data() {
                    *total = total.saturating_add(data.len());
                    if *total > max {
                        return;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(FINISH_GRACE, drain).await;
    }

    /// The next event, `None` at the end of the stream. The event borrows the reader until
    /// the next call.
    pub(crate) async fn next(&mut self, provider: &Provider) -> Result<Option<Event<'_>>> {
        loop {
            match self.parser.advance() {
                Ok(true) => return Ok(Some(self.parser.event())),
                Ok(false) => {}
                Err(fault) => return Err(self.error(provider, fault)),
            }
            match self.read(provider).await? {
                Some(chunk) => self.parser.feed(chunk),
                // An event without its blank line at the end of the body is dropped, as the
                // event-stream rules say.
                None => return Ok(None),
            }
        }
    }

    /// The next data chunk of the body within the read deadline, `None` at its end.
    async fn read(&mut self, provider: &Provider) -> Result<Option<Bytes>> {
        // The deadline measures this wait only, not the caller's time between events. The
        // wait starts when the body first has nothing ready; a chunk that is already there
        // needs no clock reading.
        let mut waiting_since: Option<Instant> = None;
        loop {
            let Some(body) = self.body.as_mut() else {
                return Ok(None);
            };
            let frame = std::future::poll_fn(|cx| {
                if let Poll::Ready(frame) = Pin::new(&mut *body).poll_frame(cx) {
                    return Poll::Ready(Ok(frame));
                }
                let since = *waiting_since.get_or_insert_with(Instant::now);
                while self.deadline.as_mut().poll(cx).is_ready() {
                    let due = since + self.read_timeout;
                    if Instant::now() >= due {
                        return Poll::Ready(Err(()));
                    }
                    self.deadline.as_mut().reset(due);
                }
                Poll::Pending
            })
            .await;
            match frame {
                Err(()) => {
                    return Err(Error::Timeout {
                        provider: provider.name().to_owned(),
                        phase: "waiting for the next stream event",
                    });
                }
                Ok(None) => {
                    self.body = None;
                    return Ok(None);
                }
                Ok(Some(Err(_))) => return Err(self.error(provider, Fault::Transport)),
                Ok(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    self.total = self.total.saturating_add(data.len());
                    if self.total > self.max_turn_bytes {
                        return Err(self.error(provider, Fault::TurnTooLarge));
                    }
                    if !data.is_empty() {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    fn error(&self, provider: &Provider, fault: Fault) -> Error {
        let provider = provider.name().to_owned();
        match fault {
            Fault::Transport => Error::ConnectionLost {
                provider,
                phase: "while it sent its answer",
            },
            Fault::NotUtf8 => Error::Malformed {
                provider,
                reason: "the event stream is not valid UTF-8",
            },
            Fault::TurnTooLarge => Error::TooLarge {
                provider,
                what: "streamed turn",
                limit: self.max_turn_bytes,
            },
            Fault::EventTooLarge => Error::TooLarge {
                provider,
                what: "stream event (characters)",
                limit: self.max_event_chars,
            },
        }
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

/// Counts UTF-8 characters: every byte that is not a continuation byte starts one. ASCII,
/// the usual case, is checked a word at a time and then needs no counting.
fn chars(bytes: &[u8]) -> usize {
    if bytes.is_ascii() {
        bytes.len()
    } else {
        bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `chunks`, in order, or the fault that stopped the parser.
    fn parse(chunks: &[&[u8]], max: usize) -> std::result::Result<Vec<(String, String)>, Fault> {
        let mut parser = Parser::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(Bytes::copy_from_slice(chunk));
            while parser.advance()? {
                let event = parser.event();
                out.push((event.event.to_owned(), event.data.to_owned()));
            }
        }
        Ok(out)
    }

    fn ev(name: &str, data: &str) -> (String, String) {
        (name.to_owned(), data.to_owned())
    }

    #[test]
    fn fields_comments_and_line_endings_follow_the_event_stream_rules() {
        let stream =
            b": comment\ndata: a\r\ndata:b\revent: x\n\nid: 7\nretry: 10\ndata\n\n\n\ndata: tail";
        assert_eq!(
            parse(&[stream], 1 << 20),
            Ok(vec![ev("x", "a\nb"), ev("", "")])
        );
    }

    #[test]
    fn an_event_without_data_dispatches_nothing_and_forgets_its_name() {
        assert_eq!(
            parse(&[b"event: a\n\ndata: 1\n\n"], 1 << 20),
            Ok(vec![ev("", "1")])
        );
    }

    #[test]
    fn utf8_bom_split_one_byte_per_chunk_is_stripped_once() {
        let body = "\u{FEFF}data: {\"a\":1}\n\ndata: \u{FEFF}x\n\n".as_bytes();
        let chunks: Vec<&[u8]> = body.chunks(1).collect();
        let expected = Ok(vec![ev("", "{\"a\":1}"), ev("", "\u{FEFF}x")]);
        assert_eq!(parse(&chunks, 1 << 20), expected);
        assert_eq!(parse(&[body], 1 << 20), expected);
    }

    #[test]
    fn a_partial_bom_is_content() {
        // Two bytes of a mark followed by something else are not dropped: they are bytes
        // of the first line, here of a field name nobody uses.
        assert_eq!(
            parse(&[b"\xEF", b"\xBBdata: 1\n\ndata: 2\n\n"], 1 << 20),
            Ok(vec![ev("", "2")])
        );
        assert_eq!(
            parse(&[b"\xEF\xBB"], 1 << 20),
            Ok(vec![]),
            "an unfinished mark at the end is nothing"
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        assert_eq!(
            parse(&[b"data: 1\r", b"\n\r", b"\ndata: 2\r\n", b"\r\n"], 1 << 20),
            Ok(vec![ev("", "1"), ev("", "2")])
        );
    }

    #[test]
    fn oversized_line_fails_as_soon_as_it_crosses_the_bound() {
        let mut parser = Parser::new(10);
        parser.feed(Bytes::from_static(b"data: 123"));
        assert_eq!(parser.advance(), Ok(false));
        parser.feed(Bytes::from_static(b"45"));
        assert_eq!(parser.advance(), Err(Fault::EventTooLarge));
    }

    #[test]
    fn the_bound_counts_characters_not_bytes() {
        let text = "data: ééé\n\n";
        assert_eq!(text.chars().count(), 11);
        assert_eq!(parse(&[text.as_bytes()], 11), Ok(vec![ev("", "ééé")]));
        assert_eq!(parse(&[text.as_bytes()], 10), Err(Fault::EventTooLarge));
    }

    #[test]
    fn invalid_utf8_data_is_a_fault_not_a_panic() {
        assert_eq!(parse(&[b"data: \xFF\n\n"], 100), Err(Fault::NotUtf8));
        assert_eq!(
            parse(&[b"event: \xC3\ndata: 1\n\n"], 100),
            Err(Fault::NotUtf8)
        );
    }

    #[test]
    fn comment_only_streams_are_bounded_too() {
        let long = ": ".to_owned() + &"x".repeat(64);
        let chunks: Vec<&[u8]> = vec![long.as_bytes(); 3];
        assert_eq!(parse(&chunks, 100), Err(Fault::EventTooLarge));
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// Splits `bytes` at the given cut points.
        fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut out = Vec::new();
            let mut start = 0;
            for p in points {
                out.push(&bytes[start..p]);
                start = p;
            }
            out.push(&bytes[start..]);
            out
        }

        fn stream() -> impl Strategy<Value = Vec<u8>> {
            let line = prop_oneof![
                "data: [a-z{}\"é\u{FEFF}]{0,12}".prop_map(String::into_bytes),
                "event: [a-z.]{0,8}".prop_map(String::into_bytes),
                Just(b":keepalive".to_vec()),
                Just(Vec::new()),
                Just(b"id: 1".to_vec()),
            ];
            let end = prop_oneof![Just(&b"\n"[..]), Just(&b"\r\n"[..]), Just(&b"\r"[..])];
            (any::<bool>(), prop::collection::vec((line, end), 0..24)).prop_map(|(bom, lines)| {
                let mut out = if bom { BOM.to_vec() } else { Vec::new() };
                for (line, end) in lines {
                    out.extend_from_slice(&line);
                    out.extend_from_slice(end);
                }
                out
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Any bytes, split anywhere, never panic, and every event respects the bound.
            #[test]
            fn arbitrary_chunks_never_panic_and_respect_the_bound(
                bytes in prop::collection::vec(any::<u8>(), 0..512),
                cuts in prop::collection::vec(any::<usize>(), 0..8),
                max in 1usize..64,
            ) {
                if let Ok(events) = parse(&split(&bytes, &cuts), max) {
                    for (name, data) in events {
                        prop_assert!(name.chars().count() + data.chars().count() <= max);
                    }
                }
            }

            /// How a valid stream is chunked never changes what it means.
            #[test]
            fn splitting_never_changes_the_events(
                bytes in stream(),
                cuts in prop::collection::vec(any::<usize>(), 0..8),
            ) {
                let whole = parse(&[&bytes], 1 << 20);
                prop_assert_eq!(parse(&split(&bytes, &cuts), 1 << 20), whole);
            }
        }
    }
}
