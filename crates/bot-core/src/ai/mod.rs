//! The AI commands (`ai`, `grok`, `zen`, `cf`): their options and the cost label of a
//! reply today; the commands, the tool loop's model turn and tool router, and the rest of
//! the reply metadata as they land.

pub mod cost;
pub mod flags;
