//! How the bot talks back to a platform ([`Outbox`]) and how adapters hand it events
//! ([`Intake`]). Both are platform-neutral: each adapter implements the trait over its own
//! API, and the bot's core drives every adapter the same way.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use tokio::sync::mpsc;

use crate::event::{Event, Place};
use crate::fit::Limits;
use crate::reply::Outgoing;

/// Messages the platform confirmed, as posted together: one per [`Outgoing`] (or more where
/// the platform split one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    /// Where they are.
    pub place: Place,
    /// The platform's message IDs, in order.
    pub ids: Vec<String>,
}

/// Why a send failed. The texts are fixed: never a platform's response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The platform refused the request (missing permission, unknown channel).
    #[error("the platform refused the message: {0}")]
    Refused(&'static str),
    /// The platform could not be reached or failed; the message may or may not be posted.
    #[error("the platform did not confirm the message: {0}")]
    Unconfirmed(&'static str),
    /// The message to edit or delete no longer exists.
    #[error("the message no longer exists")]
    Gone,
    /// The adapter is stopping.
    #[error("the chat adapter is stopping")]
    Stopping,
}

/// One earlier message of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryMessage {
    /// The author's display name.
    pub author: String,
    /// Its text (files are not read; a long answer shows its excerpt).
    pub text: String,
    /// Whether this bot wrote it.
    pub from_bot: bool,
}

/// The bounds of one thread read: more than this is an error, never a shorter thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// The most messages.
    pub max_messages: usize,
    /// The most text, in UTF-8 bytes.
    pub max_bytes: usize,
}

/// Why a thread could not be read completely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// A page could not be read; the reason is fixed text.
    #[error("the thread could not be read completely ({0})")]
    Unavailable(&'static str),
    /// The thread is longer than the limits.
    #[error("the thread is longer than one request may carry")]
    TooLong,
}

/// What the bot can do on one platform.
pub trait Outbox: Send + Sync {
    /// The platform's limits, which answers are fitted to before they are posted.
    fn limits(&self) -> Limits;

    /// The credential this platform's own file host needs to serve the attachment at `url`
    /// (Slack's private file URLs take the bot token), `None` for any other URL; by default
    /// none. A caller sends it to that URL's host only.
    fn attachment_token(&self, url: &str) -> Option<yetibot_redaction::Secret> {
        let _ = url;
        None
    }

    /// The bytes of an attachment this platform holds itself (a file uploaded to the local
    /// console, at a `console-upload:` URL nothing else can fetch); `None` for a file to be
    /// fetched from its URL, and by default.
    fn attachment_bytes(&self, url: &str) -> Option<std::sync::Arc<[u8]>> {
        let _ = url;
        None
    }

    /// Posts messages at `place`, in order. A failure after some were posted reports the
    /// ones that were not confirmed; nothing is resent automatically.
    fn post<'a>(
        &'a self,
        place: &'a Place,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>>;

    /// Replaces posted messages with new ones (a rerun or an edited command's new answer):
    /// the platform's messages are edited in place where it can, extra ones are deleted and
    /// missing ones posted.
    fn replace<'a>(
        &'a self,
        posted: &'a Posted,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>>;

    /// Deletes posted messages, best effort.
    fn delete<'a>(&'a self, posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>>;

    /// Adds the bot's reaction `emoji` to message `message_id` at `place`. Success means the
    /// platform confirmed it; an unconfirmed reaction must not be retried blindly. Platforms
    /// without reactions refuse.
    fn react<'a>(
        &'a self,
        place: &'a Place,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        let _ = (place, message_id, emoji);
        Box::pin(async { Err(SendError::Refused("this platform has no reactions")) })
    }

    /// Opens a thread for the answer to message `message_id` at `place` and returns the
    /// thread's place, where the answer then goes (`!thread`, Grok's reply threads). Inside a
    /// thread the conversation stays where it is. Platforms without threads, and this default,
    /// answer at `place` itself.
    fn open_thread<'a>(
        &'a self,
        place: &'a Place,
        message_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Place, SendError>> {
        let _ = (message_id, name);
        Box::pin(async move { Ok(place.clone()) })
    }

    /// The messages of the thread at `place` before message `before`, oldest first, read
    /// completely within `limits` or not at all. Outside a thread: an empty list.
    fn thread_history<'a>(
        &'a self,
        place: &'a Place,
        before: &'a str,
        limits: HistoryLimits,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>>;
}

/// One event with the outbox that answers it.
#[derive(Clone)]
pub struct Incoming {
    /// The event.
    pub event: Event,
    /// Where its answers go.
    pub outbox: Arc<dyn Outbox>,
}

impl std::fmt::Debug for Incoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming")
            .field("event", &self.event)
            .finish_non_exhaustive()
    }
}

/// Where adapters hand events to the bot: a bounded queue that never makes an adapter wait.
/// A full queue refuses the event, and the adapter tells the user the bot is busy.
#[derive(Debug, Clone)]
pub struct Intake(mpsc::Sender<Incoming>);

/// The bot's side of an [`Intake`].
#[derive(Debug)]
pub struct Events(mpsc::Receiver<Incoming>);

/// Why an event was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    /// The queue is full.
    #[error("the bot is busy; try again in a moment")]
    Busy,
    /// The bot is shutting down.
    #[error("the bot is shutting down")]
    Closed,
}

/// A queue of `capacity` events.
#[must_use]
pub fn intake(capacity: usize) -> (Intake, Events) {
    let (sender, receiver) = mpsc::channel(capacity.max(1));
    (Intake(sender), Events(receiver))
}

impl Intake {
    /// Offers one event without waiting.
    ///
    /// # Errors
    ///
    /// [`IntakeError::Busy`] when the queue is full, [`IntakeError::Closed`] after the bot
    /// stopped taking events.
    pub fn offer(&self, event: Event, outbox: Arc<dyn Outbox>) -> Result<(), IntakeError> {
        self.0
            .try_send(Incoming { event, outbox })
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => IntakeError::Busy,
                mpsc::error::TrySendError::Closed(_) => IntakeError::Closed,
            })
    }

    /// Reserves room for one event without waiting, so that an adapter can refuse a
    /// message before it shows it as sent.
    ///
    /// # Errors
    ///
    /// As [`Intake::offer`].
    pub fn reserve(&self) -> Result<Reservation<'_>, IntakeError> {
        self.0
            .try_reserve()
            .map(Reservation)
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(()) => IntakeError::Busy,
                mpsc::error::TrySendError::Closed(()) => IntakeError::Closed,
            })
    }

    /// Whether the bot has stopped taking events.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

/// Room for one event in an [`Intake`], held until it is used or dropped.
#[derive(Debug)]
pub struct Reservation<'a>(mpsc::Permit<'a, Incoming>);

impl Reservation<'_> {
    /// Queues the event.
    pub fn send(self, event: Event, outbox: Arc<dyn Outbox>) {
        self.0.send(Incoming { event, outbox });
    }
}

impl Events {
    /// The next event; `None` once every [`Intake`] is dropped or after [`Events::close`].
    pub async fn next(&mut self) -> Option<Incoming> {
        self.0.recv().await
    }

    /// Stops taking events: later offers fail with [`IntakeError::Closed`]; events already
    /// queued can still be read.
    pub fn close(&mut self) {
        self.0.close();
    }
}
