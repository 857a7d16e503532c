//! Integration tests of the chat adapters. The web console's run with `--features web`,
//! Discord's with `--features discord` (the workspace build enables both).

#[cfg(feature = "discord")]
mod discord;
#[cfg(feature = "web")]
mod web;
