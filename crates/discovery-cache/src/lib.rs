#![doc = include_str!("../README.md")]

mod bounds;
mod cache;
mod catalog;
mod error;
mod index;
mod refresher;

pub use bounds::Bounds;
pub use cache::{
    DiscoveryCache, FRESH_FOR, Observation, Ownership, ProviderListing, Snapshot, Status,
    Uncertainty,
};
pub use error::{Error, Result};
pub use refresher::{Lister, MAX_BACKOFF, REFRESH_EVERY, Refresher, next_delay};
