//! Live progress of a request's tool calls, for adapters that edit a status message while
//! the model works. The loop publishes each sanitized snapshot into a watch channel: the
//! newest replaces the last, so a slow adapter never holds the loop up and never sees a
//! stale backlog.

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;
use yetibot_tool_policy::Progress;

/// The sending side an adapter hands the interpreter in [`Caller::progress`](crate::Caller).
#[derive(Clone)]
pub struct ProgressSink(Arc<watch::Sender<Option<Progress>>>);

impl ProgressSink {
    /// A sink and the receiver the adapter watches (`None` until the first call).
    #[must_use]
    pub fn channel() -> (Self, watch::Receiver<Option<Progress>>) {
        let (sender, receiver) = watch::channel(None);
        (Self(Arc::new(sender)), receiver)
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
