//! Automatic routing's receipts: what was decided about each chat message, so that a
//! redelivered message repeats its first outcome instead of running again.

use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

use crate::limits;

/// What automatic routing decided about one chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receipt {
    /// A read-only decision: answer normally.
    Answer,
    /// A read-only decision: this clarification was the answer.
    Clarify(String),
    /// Code work is running.
    Running,
    /// Code work finished with this reply.
    Done(String),
}

/// The process-local receipts of automatic routing, by platform message identity:
/// [`limits::MAX_CODE_WORK_RECEIPTS`] code-work entries (running ones are never dropped, and
/// a full set refuses new work) and up to [`limits::MAX_READ_ONLY_RECEIPTS`] read-only
/// decisions (the oldest dropped first), each completed one kept [`limits::RECEIPT_TTL`].
/// A redelivered message finds its receipt instead of running again. Nothing survives a
/// restart.
#[derive(Debug, Default)]
pub struct Receipts {
    entries: Mutex<Vec<(String, Receipt, Instant)>>,
}

/// Whether code work may start for a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// It may: a running receipt now holds its place.
    Started,
    /// The message was seen before; this is its receipt.
    Seen(Receipt),
    /// Too much code work is held.
    Full,
}

impl Receipts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Receipt, Instant)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn clean(entries: &mut Vec<(String, Receipt, Instant)>, now: Instant) {
        entries.retain(|(_, receipt, at)| {
            *receipt == Receipt::Running || now.duration_since(*at) < limits::RECEIPT_TTL
        });
    }

    /// The receipt of message `key`, if it was seen.
    pub fn get(&self, key: &str, now: Instant) -> Option<Receipt> {
        let mut entries = self.lock();
        Self::clean(&mut entries, now);
        entries
            .iter()
            .find(|(k, ..)| k == key)
            .map(|(_, receipt, _)| receipt.clone())
    }

    /// Records a read-only decision for `key`.
    pub fn decided(&self, key: &str, receipt: Receipt, now: Instant) {
        let mut entries = self.lock();
        Self::clean(&mut entries, now);
        if entries.iter().any(|(k, ..)| k == key) {
            return;
        }
        let read_only = |r: &Receipt| matches!(r, Receipt::Answer | Receipt::Clarify(_));
        if entries.iter().filter(|(_, r, _)| read_only(r)).count() >= limits::MAX_READ_ONLY_RECEIPTS
            && let Some(oldest) = entries.iter().position(|(_, r, _)| read_only(r))
        {
            entries.remove(oldest);
        }
        entries.push((key.to_owned(), receipt, now));
    }

    /// Starts code work for `key`, unless the message was seen or the set is full.
    pub fn begin(&self, key: &str, now: Instant) -> Begin {
        let mut entries = self.lock();
        Self::clean(&mut entries, now);
        if let Some((_, receipt, _)) = entries.iter().find(|(k, ..)| k == key) {
            return Begin::Seen(receipt.clone());
        }
        let code_work = |r: &Receipt| matches!(r, Receipt::Running | Receipt::Done(_));
        if entries.iter().filter(|(_, r, _)| code_work(r)).count() >= limits::MAX_CODE_WORK_RECEIPTS
        {
            return Begin::Full;
        }
        entries.push((key.to_owned(), Receipt::Running, now));
        Begin::Started
    }

    /// Ends the code work of `key` with its reply.
    pub fn finish(&self, key: &str, reply: String, now: Instant) {
        let mut entries = self.lock();
        if let Some(entry) = entries.iter_mut().find(|(k, ..)| k == key) {
            entry.1 = Receipt::Done(reply);
            entry.2 = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn receipts_are_bounded_and_expire() {
        let receipts = Receipts::default();
        let now = Instant::now();
        assert_eq!(receipts.begin("m1", now), Begin::Started);
        assert_eq!(receipts.begin("m1", now), Begin::Seen(Receipt::Running));
        receipts.finish("m1", "opened".to_owned(), now);
        assert_eq!(
            receipts.begin("m1", now),
            Begin::Seen(Receipt::Done("opened".to_owned()))
        );
        for i in 1..limits::MAX_CODE_WORK_RECEIPTS {
            assert_eq!(receipts.begin(&format!("w{i}"), now), Begin::Started);
        }
        assert_eq!(receipts.begin("one-more", now), Begin::Full);
        // Questions never take code-work places, and the oldest question goes first.
        for i in 0..=limits::MAX_READ_ONLY_RECEIPTS {
            receipts.decided(&format!("q{i}"), Receipt::Answer, now);
        }
        assert_eq!(receipts.get("q0", now), None);
        assert_eq!(receipts.get("q1", now), Some(Receipt::Answer));
        // After a day, completed receipts are gone; running ones stay.
        let later = now + limits::RECEIPT_TTL + Duration::from_secs(1);
        assert_eq!(receipts.get("m1", later), None);
        assert_eq!(receipts.get("w1", later), Some(Receipt::Running));
        assert_eq!(receipts.begin("one-more", later), Begin::Started);
    }
}
