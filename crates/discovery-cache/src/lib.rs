#![doc = include_str!("../README.md")]

mod bounds;
mod cache;
mod catalog;
mod error;
mod index;
pub mod limits;
mod refresher;

pub use bounds::Bounds;
pub use cache::{
    DiscoveryCache, Observation, Ownership, ProviderListing, Snapshot, Status, Uncertainty,
};
pub use error::{Error, Result};
pub use refresher::{Lister, Refresher, next_delay};
