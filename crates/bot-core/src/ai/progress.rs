//! Live progress of a request's tool calls, for adapters that edit a status message while
//! the model works. The loop publishes each sanitized snapshot into a watch channel: the
//! newest replaces the last, so a slow adapter never holds the loop up and never sees a
//! stale backlog. Adapters that show live replies (Discord's live Grok) also get each
//! completed assistant message that came with tool calls, while later tools still run.

use std::fmt;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use yetibot_tool_policy::Progress;

/// The sending side an adapter hands the interpreter in [`Caller::progress`](crate::Caller).
#[derive(Clone)]
pub struct ProgressSink(
    Arc<watch::Sender<Option<Progress>>>,
    Option<mpsc::Sender<String>>,
);

/// The most live messages one request sends before the adapter has read them: more than a
/// tool loop can produce (one per turn, at most 21 turns), so none is ever dropped.
pub const MAX_LIVE_MESSAGES: usize = 32;

impl ProgressSink {
    /// A sink and the receiver the adapter watches (`None` until the first call).
    #[must_use]
    pub fn channel() -> (Self, watch::Receiver<Option<Progress>>) {
        let (sender, receiver) = watch::channel(None);
        (Self(Arc::new(sender), None), receiver)
    }

    /// A sink that also carries live messages, and their receiver.
    #[must_use]
    pub fn with_live(self) -> (Self, mpsc::Receiver<String>) {
        let (sender, receiver) = mpsc::channel(MAX_LIVE_MESSAGES);
        (Self(self.0, Some(sender)), receiver)
    }

    /// Whether the adapter shows live messages.
    pub(crate) fn wants_live(&self) -> bool {
        self.1.is_some()
    }

    /// Hands the adapter one completed assistant message, without waiting.
    pub(crate) fn publish_message(&self, text: String) {
        if let Some(sender) = &self.1 {
            let _ = sender.try_send(text);
        }
    }

    /// Publishes a snapshot without waiting, whether or not anyone is watching.
    pub(crate) fn publish(&self, progress: &Progress) {
        self.0.send_replace(Some(progress.clone()));
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

impl PartialEq for ProgressSink {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ProgressSink {}
