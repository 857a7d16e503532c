//! The tool loop's executor: `yetibot/...` tools run from the native tool table, every other
//! tool goes to the request's MCP session. Arguments reach each tool as the model's own text,
//! except that a GitHub toolset's reads are held to its repositories (a search gets their
//! `repo:` qualifiers added).

use yetibot_conversation::ToolId;
use yetibot_mcp_host::CallOutcome;
use yetibot_tool_policy::{
    Arguments, Execution, RepositoryRefusal, ToolExecutor, guard_github_read,
};

use crate::natives::{self, ToolContext};

/// Routes one request's tool calls.
pub(crate) struct Router<'a> {
    /// What native tools run with, the request's MCP session among them.
    pub(crate) natives: ToolContext<'a>,
}

impl Router<'_> {
    /// A GitHub read of a GitHub toolset checked against its `:repositories`: `Ok(None)` to
    /// send the arguments as they are, `Ok(Some(text))` to send these instead (a search
    /// scoped to the repositories). Tools of other toolsets pass.
    fn github_read(
        &self,
        tool: &ToolId,
        arguments: &Arguments,
    ) -> Result<Option<String>, RepositoryRefusal> {
        let Some(github) = self
            .natives
            .delegate
            .selection
            .toolset()
            .and_then(|toolset| toolset.github.as_ref())
        else {
            return Ok(None);
        };
        let scoped = guard_github_read(tool.name(), arguments.object(), &github.repositories)?;
        Ok(scoped.map(|object| serde_json::Value::Object(object).to_string()))
    }
}

impl ToolExecutor for Router<'_> {
    fn check(&self, tool: &ToolId, arguments: &Arguments) -> bool {
        if tool.is_native() {
            return natives::native(tool.name())
                .is_some_and(|native| native.check(&self.natives, arguments.raw()));
        }
        // MCP arguments are the server's to judge (preflight has already required one
        // strict JSON object within the size bound), except that a GitHub read must stay
        // within its toolset's repositories.
        self.natives
            .session
            .is_some_and(|session| session.catalog().get(tool).is_some())
            && self.github_read(tool, arguments).is_ok()
    }

    fn authorize(&self, tool: &ToolId) -> bool {
        // A native tool's own conditions (its service, and Wise's chat policy) are asked
        // again; MCP tools have none beyond the toolset's, which the loop rechecks.
        if tool.is_native() {
            return natives::native(tool.name()).is_some_and(|native| native.admits(&self.natives));
        }
        true
    }

    async fn execute(&mut self, _call_id: &str, tool: &ToolId, arguments: &Arguments) -> Execution {
        if tool.is_native() {
            return match natives::native(tool.name()) {
                Some(native) => native.run(&self.natives, arguments.raw()).await,
                None => Execution::ToolError("this tool is not available".to_owned()),
            };
        }
        let Some(session) = self.natives.session else {
            return Execution::ToolError("this tool is not available".to_owned());
        };
        // Checked again right before the call, and a search scoped to the repositories.
        let scoped = match self.github_read(tool, arguments) {
            Ok(scoped) => scoped,
            Err(refusal) => return Execution::ToolError(refusal.to_string()),
        };
        let sent = scoped.as_deref().unwrap_or(arguments.raw());
        match session.call(tool, sent).await {
            Ok(CallOutcome::Success(output)) => {
                Execution::Success(output.untrusted_text().to_owned())
            }
            Ok(CallOutcome::ToolError(output)) => {
                Execution::ToolError(output.untrusted_text().to_owned())
            }
            Ok(CallOutcome::Unknown(_)) => Execution::Unknown,
            // Refused before anything was sent.
            Err(error) => Execution::ToolError(error.to_string()),
        }
    }
}
