//! Which tools a request offers: the MCP servers its toolset connects, narrowed to the
//! tools the toolset allows and bounded with the native tools, opened as one session whose
//! listed tools pass the toolset's kind rules.

use yetibot_conversation::{ToolId, limits::MAX_TOOLS};
use yetibot_mcp_host::{ServerSelection, Session};
use yetibot_tool_policy::{Selection, filter_listed};

use crate::services::AiServices;

/// The MCP servers a toolset selection connects, with the tools it allows of each.
pub(crate) fn server_uses(
    services: &AiServices,
    selection: &Selection<'_>,
) -> Vec<yetibot_tool_policy::ServerUse> {
    let configured: Vec<(&str, Option<&[String]>)> = services
        .host
        .servers()
        .servers()
        .iter()
        .map(|s| (s.name(), s.tools()))
        .collect();
    selection.servers(&configured)
}

/// What to open for these server uses: each server narrowed to the tools its use allows,
/// and at most `limit` MCP tools in all.
pub(crate) fn server_selection<'u>(
    uses: impl Iterator<Item = &'u yetibot_tool_policy::ServerUse>,
    limit: usize,
) -> ServerSelection {
    uses.fold(
        ServerSelection::new().with_tool_limit(limit),
        |wanted, server| match &server.tools {
            Some(tools) => wanted.narrowed(server.name.clone(), tools.iter().cloned()),
            None => wanted.server(server.name.clone()),
        },
    )
}

/// Opens the MCP servers the selection connects, narrowed to the tools it allows, leaving
/// room for `natives` native tools, and returns the session with the tools the toolset's
/// kind rules let it offer. `None` when it connects none.
pub(crate) async fn open_servers(
    services: &AiServices,
    selection: &Selection<'_>,
    natives: usize,
) -> Result<Option<(Session, Vec<ToolId>)>, String> {
    let uses = server_uses(services, selection);
    if uses.is_empty() {
        return Ok(None);
    }
    let wanted = server_selection(uses.iter(), MAX_TOOLS.saturating_sub(natives));
    let session = services
        .host
        .open_selection(&wanted)
        .await
        .map_err(|error| error.to_string())?;
    // The kind rules on what the servers actually listed (an open catalog may list
    // reserved names a search toolset must not offer).
    let mut offered = Vec::new();
    for server in &uses {
        let listed: Vec<String> = session
            .catalog()
            .tools()
            .iter()
            .filter(|t| t.id().source() == server.name)
            .map(|t| t.id().name().to_owned())
            .collect();
        match filter_listed(server, &listed) {
            Ok(kept) => {
                offered.extend(kept.into_iter().map(|name| ToolId::new(&server.name, name)))
            }
            Err(error) => {
                session.close().await;
                return Err(error.to_string());
            }
        }
    }
    Ok(Some((session, offered)))
}
