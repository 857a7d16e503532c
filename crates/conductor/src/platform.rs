//! The command layer's platform capability over an adapter's outbox: what one request may
//! do on the platform it came from. It reacts in the request's own channel or thread only,
//! reads the thread the request was sent in, and hands progress snapshots and interim
//! messages to the conductor's status card and live replies without ever waiting.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, watch};
use yetibot_chat_adapters::{
    Event, EventKind, HistoryError, HistoryLimits, Outbox, Place, SendError,
};
use yetibot_command::limits::{MAX_THREAD_BYTES, MAX_THREAD_MESSAGES};
use yetibot_command::{
    LiveText, Platform, PlatformError, Progress, ThreadError, ThreadMessage, ThreadSource,
};

/// The most interim messages one request sends before the conductor has posted them: more
/// than a tool loop can produce (one per turn, at most 21 turns), so none is ever dropped.
pub(crate) const MAX_INTERIM_MESSAGES: usize = 32;

/// The most bytes of an answer's text shown while it is written; past it the text shown
/// ends with `…` until the finished answer replaces it.
pub const MAX_LIVE_TEXT_BYTES: usize = 16 * 1024;

/// One request's platform.
pub(crate) struct RequestPlatform {
    outbox: Arc<dyn Outbox>,
    place: Place,
    message_id: String,
    thread: Option<PlatformThread>,
    progress: Option<watch::Sender<Option<Progress>>>,
    interim: Option<mpsc::Sender<String>>,
    live_text: Option<watch::Sender<LiveShown>>,
    /// The files attached to the event's message, as its adapter described them.
    attachments: Vec<yetibot_conversation::Attachment>,
    /// The event is a new message as sent (not an edit, a reaction or a press).
    original: bool,
}

impl RequestPlatform {
    /// The platform of a request made by `event`, through `outbox`; `new_message` when the
    /// request is the message's first run (not an edit or a confirmed rerun).
    pub(crate) fn new(outbox: &Arc<dyn Outbox>, event: &Event, new_message: bool) -> Self {
        let thread = event.place.thread.as_ref().map(|_| PlatformThread {
            outbox: Arc::clone(outbox),
            place: event.place.clone(),
            before: event.message_id.clone(),
        });
        Self {
            outbox: Arc::clone(outbox),
            place: event.place.clone(),
            message_id: event.message_id.clone(),
            thread,
            progress: None,
            interim: None,
            live_text: None,
            attachments: event.attachments.clone(),
            original: new_message
                && event.revision == 0
                && matches!(event.kind, EventKind::Message { .. }),
        }
    }

    /// Whether `url` is one of the message's own attachments.
    fn carries(&self, url: &str) -> bool {
        self.attachments
            .iter()
            .any(|attachment| attachment.url == url)
    }

    /// The same platform, also reporting progress: the receiver sees the newest snapshot
    /// (`None` until the first).
    pub(crate) fn with_progress(mut self) -> (Self, watch::Receiver<Option<Progress>>) {
        let (sender, receiver) = watch::channel(None);
        self.progress = Some(sender);
        (self, receiver)
    }

    /// The same platform, also showing interim messages, and their receiver.
    pub(crate) fn with_interim(mut self) -> (Self, mpsc::Receiver<String>) {
        let (sender, receiver) = mpsc::channel(MAX_INTERIM_MESSAGES);
        self.interim = Some(sender);
        (self, receiver)
    }

    /// The same platform, also showing the answer's text as the model writes it; the
    /// receiver sees the text so far (bounded by [`MAX_LIVE_TEXT_BYTES`]).
    pub(crate) fn with_live_text(mut self) -> (Self, watch::Receiver<LiveShown>) {
        let (sender, receiver) = watch::channel(LiveShown::default());
        self.live_text = Some(sender);
        (self, receiver)
    }
}

/// The answer's text so far, as the status card shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LiveShown {
    /// The text, at most [`MAX_LIVE_TEXT_BYTES`].
    pub(crate) text: String,
    /// Whether the bound was reached (the text ends with `…`, and more is ignored).
    full: bool,
}

impl LiveShown {
    /// Adds `piece`, keeping the text within [`MAX_LIVE_TEXT_BYTES`]: the piece that would
    /// cross the bound is cut at a character boundary and `…` marks the cut. Whether the
    /// text changed.
    fn append(&mut self, piece: &str) -> bool {
        const CUT: &str = "…";
        if piece.is_empty() || self.full {
            return false;
        }
        if self.text.len() + piece.len() <= MAX_LIVE_TEXT_BYTES {
            self.text.push_str(piece);
            return true;
        }
        let keep = MAX_LIVE_TEXT_BYTES - CUT.len();
        let mut end = keep.saturating_sub(self.text.len()).min(piece.len());
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&piece[..end]);
        let mut at = keep.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        self.text.truncate(at);
        self.text.push_str(CUT);
        self.full = true;
        true
    }

    /// Clears the text for a new turn. Whether there was any.
    fn restart(&mut self) -> bool {
        let had = !self.text.is_empty();
        *self = Self::default();
        had
    }
}

impl Platform for RequestPlatform {
    fn room_id(&self) -> Option<&str> {
        Some(&self.place.room)
    }

    fn is_original_message(&self) -> bool {
        self.original
    }

    fn react<'a>(
        &'a self,
        emoji: &'a str,
        message_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let target = message_id.unwrap_or(&self.message_id);
            self.outbox
                .react(&self.place, target, emoji)
                .await
                .map_err(|error| match error {
                    SendError::Refused(reason) => PlatformError::Refused(reason),
                    SendError::Unconfirmed(reason) => PlatformError::Unconfirmed(reason),
                    SendError::Gone => PlatformError::Gone,
                    SendError::Stopping => PlatformError::Stopping,
                })
        })
    }

    fn thread(&self) -> Option<&dyn ThreadSource> {
        self.thread
            .as_ref()
            .map(|thread| thread as &dyn ThreadSource)
    }

    fn report(&self, progress: &Progress) {
        if let Some(sender) = &self.progress {
            sender.send_replace(Some(progress.clone()));
        }
    }

    fn shows_interim(&self) -> bool {
        self.interim.is_some()
    }

    fn interim(&self, text: String) {
        if let Some(sender) = &self.interim {
            let _ = sender.try_send(text);
        }
    }

    fn shows_live_text(&self) -> bool {
        self.live_text.is_some()
    }

    fn live_text(&self, piece: LiveText<'_>) {
        let Some(sender) = &self.live_text else {
            return;
        };
        match piece {
            LiveText::Append(text) => {
                sender.send_if_modified(|shown| shown.append(text));
            }
            LiveText::Restart => {
                sender.send_if_modified(LiveShown::restart);
            }
        }
    }

    fn attachments(&self) -> &[yetibot_conversation::Attachment] {
        &self.attachments
    }

    fn attachment_token(&self, url: &str) -> Option<yetibot_redaction::Secret> {
        // Only for a file the message carries: a command cannot ask for the token of an
        // arbitrary URL on the platform's file host.
        self.carries(url)
            .then(|| self.outbox.attachment_token(url))
            .flatten()
    }

    fn attachment_bytes(&self, url: &str) -> Option<Arc<[u8]>> {
        self.carries(url)
            .then(|| self.outbox.attachment_bytes(url))
            .flatten()
    }
}

/// A thread read through the adapter's outbox.
struct PlatformThread {
    outbox: Arc<dyn Outbox>,
    place: Place,
    before: String,
}

impl ThreadSource for PlatformThread {
    fn key(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.place.adapter,
            self.place.connection,
            self.place.room,
            self.place.thread.as_deref().unwrap_or_default()
        )
    }

    fn history(&self) -> BoxFuture<'_, Result<Vec<ThreadMessage>, ThreadError>> {
        Box::pin(async move {
            let limits = HistoryLimits {
                max_messages: MAX_THREAD_MESSAGES,
                max_bytes: MAX_THREAD_BYTES,
            };
            let messages = self
                .outbox
                .thread_history(&self.place, &self.before, limits)
                .await
                .map_err(|error| match error {
                    HistoryError::Unavailable(reason) => ThreadError::Unavailable(reason),
                    HistoryError::TooLong => ThreadError::TooLong,
                })?;
            Ok(messages
                .into_iter()
                .map(|m| ThreadMessage {
                    author: m.author,
                    text: m.text,
                    from_bot: m.from_bot,
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn live_text_is_bounded_and_marks_the_cut() {
        let mut shown = LiveShown::default();
        assert!(shown.append("Hello, "));
        assert!(!shown.append(""));
        let long = "é".repeat(MAX_LIVE_TEXT_BYTES);
        assert!(shown.append(&long));
        assert!(shown.text.len() <= MAX_LIVE_TEXT_BYTES);
        assert!(shown.text.starts_with("Hello, é") && shown.text.ends_with("é…"));
        assert!(!shown.append("more"), "nothing is added past the cut");
        assert!(shown.restart());
        assert!(!shown.restart());
        assert!(shown.append("next turn"));
        assert_eq!(shown.text, "next turn");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn live_text_never_exceeds_its_bound(
            pieces in prop::collection::vec("[a-z é€😀]{0,2000}", 0..30),
        ) {
            let mut shown = LiveShown::default();
            let mut all = String::new();
            for piece in &pieces {
                shown.append(piece);
                all.push_str(piece);
            }
            prop_assert!(shown.text.len() <= MAX_LIVE_TEXT_BYTES);
            if all.len() <= MAX_LIVE_TEXT_BYTES {
                prop_assert_eq!(&shown.text, &all);
            } else {
                let kept = shown.text.strip_suffix('…').expect("cut marked");
                prop_assert!(all.starts_with(kept));
            }
        }
    }
}
