//! The bounds every crate of a request agrees on: how many tools one request offers, how long
//! a call's arguments and a tool's result may be, and how long tool and function names are.

/// The most tools one request offers a model: the bot's native tools and every connected
/// server's MCP tools together, counted after every allowlist has narrowed them.
pub const MAX_TOOLS: usize = 64;

/// The longest argument text of one tool call, in characters. A longer call is refused
/// before it runs.
pub const MAX_ARGUMENT_CHARS: usize = 16_384;

/// The longest tool result handed back to a model, in characters.
pub const MAX_RESULT_CHARS: usize = 20_000;

/// The longest function name the Chat Completions and Responses APIs accept, in bytes
/// ([`function_name`](crate::function_name) never returns a longer one). Equal to
/// [`MAX_TOOLS`] by coincidence only.
pub const MAX_FUNCTION_NAME_BYTES: usize = 64;

/// The longest tool name an MCP server may list, in characters (the MCP naming rule).
pub const MAX_TOOL_NAME_CHARS: usize = 128;
