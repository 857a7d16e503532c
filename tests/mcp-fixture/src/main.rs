//! Command-line entry of the MCP fixture server; see the library for the options.

fn main() -> std::process::ExitCode {
    mcp_fixture::main_with_args(std::env::args().skip(1).collect())
}
