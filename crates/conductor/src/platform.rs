//! The command layer's platform capability over an adapter's outbox: what one request may
//! do on the platform it came from. It reacts in the request's own channel or thread only,
//! reads the thread the request was sent in, and hands progress snapshots and interim
//! messages to the conductor's status card and live replies without ever waiting.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, watch};
use yetibot_chat_adapters::{Event, HistoryError, HistoryLimits, Outbox, Place, SendError};
use yetibot_command::limits::{MAX_THREAD_BYTES, MAX_THREAD_MESSAGES};
use yetibot_command::{
    Platform, PlatformError, Progress, ThreadError, ThreadMessage, ThreadSource,
};

/// The most interim messages one request sends before the conductor has posted them: more
/// than a tool loop can produce (one per turn, at most 21 turns), so none is ever dropped.
pub(crate) const MAX_INTERIM_MESSAGES: usize = 32;

/// One request's platform.
pub(crate) struct RequestPlatform {
    outbox: Arc<dyn Outbox>,
    place: Place,
    message_id: String,
    thread: Option<PlatformThread>,
    progress: Option<watch::Sender<Option<Progress>>>,
    interim: Option<mpsc::Sender<String>>,
}

impl RequestPlatform {
    /// The platform of a request made by `event`, through `outbox`.
    pub(crate) fn new(outbox: &Arc<dyn Outbox>, event: &Event) -> Self {
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
        }
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
}

impl Platform for RequestPlatform {
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
