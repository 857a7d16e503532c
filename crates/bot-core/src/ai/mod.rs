//! The AI commands (`ai`, `grok`, `zen`, `cf`): their options and piped input today; the
//! commands, the tool loop's model turn and tool router, and the reply metadata as they land.

pub mod flags;
pub mod piped;
