//! Integration tests of the chat adapters. The web console's run with `--features web`,
//! Slack's with `--features slack` and Discord's with `--features discord` (the workspace
//! build enables all three).

#[cfg(feature = "discord")]
mod discord;
#[cfg(feature = "slack")]
mod slack;
#[cfg(feature = "web")]
mod web;
