#![doc = include_str!("../README.md")]

pub mod admission;
mod cache;
mod conductor;
pub mod limits;
mod platform;

pub use admission::{
    Admission, AdmissionLimits, ConcurrencyConfig, Limit, Offer, Refusal, Requester, Slot,
    admission_limits,
};
pub use cache::DEFAULT_CACHE_CAPACITY;
pub use conductor::{
    Conductor, ConductorOptions, DEFAULT_CARD_DELAY, DEFAULT_DEADLINE, EXPIRED_BUTTON, UNDELIVERED,
    USED_BUTTON,
};
