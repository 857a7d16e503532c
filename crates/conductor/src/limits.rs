//! Every bound of the conductor, in one place: how many requests run and wait, the
//! conductor's deadlines, how much of an answer is shown while it is written, and how many
//! answers it remembers for buttons and edits.
pub use crate::admission::{
    DEFAULT_MEMORY_BUDGET_MIB, DEFAULT_PER_CHANNEL, DEFAULT_PER_USER, DEFAULT_QUEUE,
    DEFAULT_QUEUE_PER_USER, MAX_MEMORY_BUDGET_MIB, MAX_QUEUE, REQUEST_CHARGE_BYTES,
};
pub use crate::cache::DEFAULT_CACHE_CAPACITY;
pub use crate::conductor::{DEFAULT_CARD_DELAY, DEFAULT_DEADLINE};
pub use crate::platform::MAX_LIVE_TEXT_BYTES;
