//! The console's live updates as server-sent events: a `hello` event first (with the
//! process's epoch, so that a page reconnecting to a restarted bot knows to reload), then
//! every update numbered by its sequence (the `id` a reconnecting browser sends back as
//! `Last-Event-ID`), ping comments while idle, and `reset` when a page fell too far behind
//! to catch up and must reload. A page that finds every stream taken gets a `full` event.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;
use tokio::sync::watch;

use super::Shared;
use super::api::{self, Body, error_response, secure};
use super::state::{Catchup, State};

/// Counts an open stream for as long as it lives.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Stream {
    state: Arc<State>,
    ping: std::time::Duration,
    changes: watch::Receiver<u64>,
    closing: watch::Receiver<bool>,
    last: u64,
    pending: VecDeque<Bytes>,
    _slot: Slot,
}

/// How long a browser waits before it tries again after a `full` event, in milliseconds.
const FULL_RETRY_MS: u32 = 10_000;

/// The event stream for a page that has seen updates up to `after` (`None`: a new page,
/// which starts from now). `browser`: the request came from a page's `EventSource`, which
/// cannot read a refusal's body, so a full console answers it with a `full` event saying
/// why (and when to retry) instead of a bare 503.
pub(crate) fn stream(shared: &Arc<Shared>, after: Option<u64>, browser: bool) -> Response<Body> {
    let open = shared.streams.fetch_add(1, Ordering::SeqCst);
    let slot = Slot(Arc::clone(shared));
    if open >= shared.bounds.max_event_streams {
        drop(slot);
        if browser {
            let full = json!({"error": format!(
                "too many console pages are open (the console serves {} at once); close one \
                 and this page connects by itself",
                shared.bounds.max_event_streams
            )});
            let body = format!("retry: {FULL_RETRY_MS}\nevent: full\ndata: {full}\n\n");
            let mut response = Response::new(api::body(body));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            return secure(response);
        }
        return error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many console pages are open; close one and reload",
        );
    }
    let state = Arc::clone(&shared.state);
    let now = state.seq();
    let hello = json!({
        "seq": now,
        "epoch": state.epoch(),
        "operator": {"id": shared.operator.id, "name": shared.operator.name},
    });
    let mut pending = VecDeque::new();
    pending.push_back(Bytes::from(format!("event: hello\ndata: {hello}\n\n")));
    let stream = Stream {
        ping: shared.bounds.ping_interval,
        changes: state.subscribe(),
        closing: shared.closing.clone(),
        last: after.unwrap_or(now),
        state,
        pending,
        _slot: slot,
    };
    let frames = futures_util::stream::unfold(stream, next_frame);
    let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    secure(response)
}

async fn next_frame(mut stream: Stream) -> Option<(Result<Frame<Bytes>, Infallible>, Stream)> {
    loop {
        if let Some(bytes) = stream.pending.pop_front() {
            return Some((Ok(Frame::data(bytes)), stream));
        }
        let closing = *stream.closing.borrow();
        match catch_up(
            &stream.state,
            &mut stream.last,
            &mut stream.pending,
            closing,
        ) {
            Step::Send => continue,
            Step::End => return None,
            Step::Wait => {}
        }
        tokio::select! {
            changed = stream.changes.changed() => {
                if changed.is_err() {
                    return None;
                }
            }
            // Loop once more: what was published before the stop still goes out.
            changed = stream.closing.changed() => {
                if changed.is_err() {
                    return None;
                }
            }
            () = tokio::time::sleep(stream.ping) => {
                stream.pending.push_back(Bytes::from_static(b": ping\n\n"));
            }
        }
    }
}

/// What a stream does next, having sent everything up to `last`.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Frames were queued.
    Send,
    /// Nothing is left to send and the console is stopping.
    End,
    /// Nothing to send yet.
    Wait,
}

/// Queues the updates published after `last`. A stopping console still sends what was
/// published before it stopped (the last answers of the requests it waited for), and only
/// then ends the stream; a page too far behind is told to reload unless the console is
/// stopping anyway.
fn catch_up(state: &State, last: &mut u64, pending: &mut VecDeque<Bytes>, closing: bool) -> Step {
    match state.updates_after(*last) {
        Catchup::Updates(updates) if !updates.is_empty() => {
            for (seq, update) in updates {
                *last = seq;
                pending.push_back(Bytes::from(format!(
                    "id: {seq}\nevent: update\ndata: {update}\n\n"
                )));
            }
            Step::Send
        }
        Catchup::Reset if !closing => {
            *last = state.seq();
            pending.push_back(Bytes::from(format!(
                "id: {}\nevent: reset\ndata: {{}}\n\n",
                *last
            )));
            Step::Send
        }
        _ if closing => Step::End,
        _ => Step::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Author;

    #[test]
    fn a_stopping_console_sends_what_was_published_before_it_ends_the_stream() {
        let bot = Author {
            id: "yetibot".into(),
            name: "yetibot".into(),
            is_bot: true,
        };
        let state = State::new(
            crate::web::ConsoleBounds::default(),
            "epoch".into(),
            "local".into(),
            bot,
        );
        let operator = Author {
            id: "op".into(),
            name: "op".into(),
            is_bot: false,
        };
        let mut last = state.seq();
        let (_, place) = state
            .add_user_with(&operator, "general", None, "!x", Vec::new())
            .expect("added");
        state.post(
            &place,
            vec![crate::reply::Outgoing::text(
                crate::reply::Role::Answer,
                "finished",
            )],
        );
        let mut pending = VecDeque::new();
        assert_eq!(catch_up(&state, &mut last, &mut pending, true), Step::Send);
        assert_eq!(pending.len(), 2, "the command and its answer");
        assert!(String::from_utf8_lossy(&pending[1]).contains("finished"));
        assert_eq!(catch_up(&state, &mut last, &mut pending, true), Step::End);
        assert_eq!(catch_up(&state, &mut last, &mut pending, false), Step::Wait);
    }
}
