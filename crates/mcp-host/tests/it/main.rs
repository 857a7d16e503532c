//! Integration tests of yetibot-mcp-host against the in-repo MCP fixture server.

mod calls;
mod config;
mod discovery;
mod http;
mod listing;
mod replies;
mod support;
