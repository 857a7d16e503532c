//! yetibot-discovery-cache at its boundary: ownership answers, the refresh loop on a paused clock,
//! and properties of the bounds.

mod ownership;
mod properties;
mod refresher;
