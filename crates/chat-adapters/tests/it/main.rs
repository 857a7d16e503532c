//! Integration tests of the chat adapters. The web console's run with `--features web`
//! (the workspace build enables it through the binary).

#[cfg(feature = "web")]
mod web;
