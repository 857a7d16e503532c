//! Integration tests of yetibot-mcp-host against the in-repo MCP fixture server.

mod calls;
mod discovery;
mod http;
mod listing;
mod support;
