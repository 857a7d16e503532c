//! Workspace-wide tests: one binary, one module per area.

mod config_redaction;
mod discord;
mod platforms;
mod support;
mod tidy;
