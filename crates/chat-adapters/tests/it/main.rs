//! Integration tests of the chat adapters. The web console's run with `--features web`,
//! Slack's with `--features slack` (the workspace build enables both through the binary).

#[cfg(feature = "slack")]
mod slack;
#[cfg(feature = "web")]
mod web;
