//! Integration tests of mcp-host against the in-repo MCP fixture server.

mod calls;
mod discovery;
mod http;
mod listing;
mod support;
