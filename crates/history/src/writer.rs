//! Recording chat history without ever making a chat wait: records go into a bounded queue
//! that a [`Writer`] drains into the [`HistoryStore`] in batches. A full queue drops records
//! instead of blocking, and a store that fails is reported once per outage, not once per
//! record.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::mpsc;

use crate::limits::{DEFAULT_QUEUE_CAPACITY, MAX_RECORDED_BODY_BYTES, MAX_WRITE_BATCH};
use crate::store::{HistoryRecord, HistoryStore, StoreError};

/// What the history recorder reports, so that the program can log it. Each outage is
/// reported once when it starts and once when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A write failed after the writes before it had succeeded; later failures are quiet
    /// until a write succeeds again.
    WriteFailed(StoreError),
    /// The queue was full and a record was dropped; later drops are quiet until a write
    /// succeeds again.
    QueueFull,
    /// A write succeeded after failures or drops; `lost` records were not stored meanwhile.
    Recovered {
        /// How many records were dropped or failed to write during the outage.
        lost: u64,
    },
}

/// Receives [`Notice`]s (the binary logs them).
pub type Notify = Arc<dyn Fn(Notice) + Send + Sync>;

/// Settings of the history recorder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryOptions {
    /// How many records may wait for the writer; at least 1.
    pub queue_capacity: usize,
    /// The user ID recorded on the bot's replies.
    pub bot_user_id: String,
    /// The user name recorded on the bot's replies.
    pub bot_user_name: String,
}

impl Default for HistoryOptions {
    fn default() -> Self {
        Self {
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            bot_user_id: "yetibot".to_owned(),
            bot_user_name: "yetibot".to_owned(),
        }
    }
}

/// The interpreter's view of history: the store it reads and the queue it records into.
/// The command layer's interpreter takes it (`yetibot-command`'s `Interpreter::with_history`).
pub struct History {
    store: Arc<dyn HistoryStore>,
    sender: mpsc::Sender<HistoryRecord>,
    shared: Arc<Shared>,
    bot_user_id: String,
    bot_user_name: String,
}

/// Drains the queue into the store. The program runs [`Writer::run`] on its runtime and
/// owns the task: it ends once the [`History`] is dropped and every queued record is
/// handed to the store.
pub struct Writer {
    receiver: mpsc::Receiver<HistoryRecord>,
    store: Arc<dyn HistoryStore>,
    shared: Arc<Shared>,
    failing: bool,
}

struct Shared {
    notify: Notify,
    /// Whether records have been dropped since the last successful write.
    overflowing: AtomicBool,
    /// Records dropped or failed since the last successful write.
    lost: AtomicU64,
}

/// A history over `store`: the handle the interpreter records through and reads from, and
/// the writer that must run for records to reach the store.
#[must_use]
pub fn history(
    store: Arc<dyn HistoryStore>,
    options: HistoryOptions,
    notify: Notify,
) -> (History, Writer) {
    let (sender, receiver) = mpsc::channel(options.queue_capacity.max(1));
    let shared = Arc::new(Shared {
        notify,
        overflowing: AtomicBool::new(false),
        lost: AtomicU64::new(0),
    });
    (
        History {
            store: Arc::clone(&store),
            sender,
            shared: Arc::clone(&shared),
            bot_user_id: options.bot_user_id,
            bot_user_name: options.bot_user_name,
        },
        Writer {
            receiver,
            store,
            shared,
            failing: false,
        },
    )
}

impl History {
    /// The store reads go to.
    #[must_use]
    pub fn store(&self) -> &dyn HistoryStore {
        self.store.as_ref()
    }

    /// Queues `record` for the writer without waiting: when the queue is full the record is
    /// dropped (and the first drop of an outage is reported).
    pub fn record(&self, mut record: HistoryRecord) {
        cut_body(&mut record.body);
        match self.sender.try_send(record) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.shared.lost.fetch_add(1, Ordering::Relaxed);
                if !self.shared.overflowing.swap(true, Ordering::Relaxed) {
                    (self.shared.notify)(Notice::QueueFull);
                }
            }
            // The writer has stopped: the program is shutting down.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// The user ID recorded on the bot's replies.
    pub fn bot_user_id(&self) -> &str {
        &self.bot_user_id
    }

    /// The user name recorded on the bot's replies.
    pub fn bot_user_name(&self) -> &str {
        &self.bot_user_name
    }
}

impl Writer {
    /// Writes queued records in batches of up to [`MAX_WRITE_BATCH`] until the [`History`]
    /// is dropped and the queue is empty. A failed batch is not retried: the bot keeps
    /// answering, and the outage is reported once.
    pub async fn run(mut self) {
        let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
        while let Some(first) = self.receiver.recv().await {
            batch.push(first);
            while batch.len() < MAX_WRITE_BATCH {
                match self.receiver.try_recv() {
                    Ok(record) => batch.push(record),
                    Err(_) => break,
                }
            }
            let size = u64::try_from(batch.len()).unwrap_or(u64::MAX);
            match self.store.append(std::mem::take(&mut batch)).await {
                Ok(()) => {
                    let overflowed = self.shared.overflowing.swap(false, Ordering::Relaxed);
                    if self.failing || overflowed {
                        self.failing = false;
                        let lost = self.shared.lost.swap(0, Ordering::Relaxed);
                        (self.shared.notify)(Notice::Recovered { lost });
                    }
                }
                Err(error) => {
                    self.shared.lost.fetch_add(size, Ordering::Relaxed);
                    if !self.failing {
                        self.failing = true;
                        (self.shared.notify)(Notice::WriteFailed(error));
                    }
                }
            }
        }
    }
}

/// Cuts a body longer than [`MAX_RECORDED_BODY_BYTES`] at a character boundary.
fn cut_body(body: &mut String) {
    if body.len() > MAX_RECORDED_BODY_BYTES {
        let mut at = MAX_RECORDED_BODY_BYTES;
        while !body.is_char_boundary(at) {
            at -= 1;
        }
        body.truncate(at);
    }
}

impl fmt::Debug for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field(
                "queued",
                &(self.sender.max_capacity() - self.sender.capacity()),
            )
            .field("bot_user_id", &self.bot_user_id)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("failing", &self.failing)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_bodies_are_cut_at_a_character_boundary() {
        let mut body = format!("{}é", "a".repeat(MAX_RECORDED_BODY_BYTES - 1));
        cut_body(&mut body);
        assert_eq!(body.len(), MAX_RECORDED_BODY_BYTES - 1);
        let mut short = "short".to_owned();
        cut_body(&mut short);
        assert_eq!(short, "short");
    }
}
