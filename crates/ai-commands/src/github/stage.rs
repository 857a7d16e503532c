//! `stage_changes`: the one tool through which a model proposes a change under a
//! `github-pr` toolset, as the AI commands offer and run it. The checks, the snapshot and the
//! proposal are `yetibot-pull-requests`'; this is the tool's description and schema, its
//! static check over the request's toolset, and its run over the request's session.

use serde_json::{Value, json};
use yetibot_mcp_host::Session;
use yetibot_pull_requests::limits::{MAX_BODY_CHARS, MAX_STAGED_FILES, MAX_TITLE_CHARS};
use yetibot_pull_requests::{
    AuditEvent, AuditStep, NewProposal, Proposal, Reads, StageError, check, random_hex, reader,
    snapshot,
};
use yetibot_redaction::Secrets;
use yetibot_tool_policy::{Execution, GithubPolicy, Toolset};

use crate::proposals::{StagingSlot, requester_of};
use crate::services::AiServices;

/// What one staging runs with: the request's services, toolset, caller, credentials and MCP
/// session, and the request's one staged proposal.
pub(crate) struct Request<'a> {
    pub(crate) services: &'a AiServices,
    pub(crate) toolset: Option<&'a Toolset>,
    pub(crate) caller: &'a yetibot_command::Caller,
    /// The provider and model generating the change.
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) secrets: &'a Secrets,
    pub(crate) session: Option<&'a Session>,
    pub(crate) staging: &'a StagingSlot,
}

/// What the model is told the tool does.
pub(crate) const DESCRIPTION: &str = "Stage a change to a GitHub repository as a proposal for the user to review and approve. Give the complete new text of each file you add or update (at most 5 text files and 8 KiB of new text in all; no deletions, renames or binary files), a pull request title and body. Read the current files with get_file_contents first. The host snapshots the base branch, checks the paths and content, and records the proposal; nothing is pushed until the user reviews every page with `ai proposal <id>` and approves with `ai approve <id>`. Stage once per request.";

/// The tool's argument schema.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "The repository owner."},
            "repo": {"type": "string", "description": "The repository name."},
            "base": {"type": "string", "description": "The branch the pull request targets."},
            "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
            "body": {"type": "string", "maxLength": MAX_BODY_CHARS,
                     "description": "What the change does and why."},
            "files": {
                "type": "array", "minItems": 1, "maxItems": MAX_STAGED_FILES,
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Path from the repository root, no leading slash."},
                        "content": {"type": "string", "description": "The file's complete new text."}
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["owner", "repo", "base", "title", "files"],
        "additionalProperties": false
    })
}

/// The static check the tool loop runs on a whole batch.
pub(crate) fn arguments_ok(toolset: Option<&Toolset>, secrets: &Secrets, arguments: &str) -> bool {
    policy(toolset).is_some_and(|(_, github)| check(arguments, github, secrets).is_ok())
}

/// The request's `github-pr` toolset and its GitHub policy.
fn policy(toolset: Option<&Toolset>) -> Option<(&Toolset, &GithubPolicy)> {
    let toolset = toolset?;
    if toolset.kind != yetibot_tool_policy::ToolsetKind::GithubPr {
        return None;
    }
    Some((toolset, toolset.github.as_ref()?))
}

/// Runs `stage_changes` for the request.
pub(crate) async fn run(tool: Request<'_>, arguments: &str) -> Execution {
    let Some((toolset, github)) = policy(tool.toolset) else {
        return Execution::ToolError(StageError::NotPullRequestToolset.to_string());
    };
    let staging = match check(arguments, github, tool.secrets) {
        Ok(staging) => staging,
        Err(error) => return Execution::ToolError(error.to_string()),
    };
    let Some(requester) = requester_of(tool.caller) else {
        return Execution::ToolError(
            "a proposal needs a request sent directly from Slack or Discord".to_owned(),
        );
    };
    if let Some(automatic) = &tool.staging.automatic
        && !yetibot_tool_policy::is_listed_repository(
            std::slice::from_ref(&automatic.repository),
            &staging.owner,
            &staging.repo,
        )
    {
        return Execution::ToolError(
            "this request may change only the repository it names".to_owned(),
        );
    }
    if let Some(id) = tool.staging.staged() {
        return Execution::ToolError(format!(
            "this request already staged proposal {id}; stage once per request"
        ));
    }
    let Some(session) = tool.session else {
        return Execution::ToolError("no GitHub connection is open for this request".to_owned());
    };
    let Some(server) = reader(toolset, session) else {
        return Execution::ToolError(
            "the toolset's connection does not offer get_commit and get_file_contents".to_owned(),
        );
    };
    let mut reads = Reads::new(session, &server, &staging.owner, &staging.repo);
    let snapshot = snapshot(&mut reads, &staging, tool.secrets).await;
    let source_reads = reads.count;
    let (base_sha, files) = match snapshot {
        Ok(snapshot) => snapshot,
        Err(error) => return Execution::ToolError(format!("{error}; nothing was staged")),
    };
    let services = tool.services;
    let automatic = tool.staging.automatic.is_some();
    let Some(id) = random_hex(8) else {
        return Execution::ToolError(
            "no randomness for a proposal ID; nothing was staged".to_owned(),
        );
    };
    let now = (services.clock)();
    let proposal = Proposal::new(
        NewProposal {
            id: id.clone(),
            toolset: toolset.name.clone(),
            reader: server,
            requester,
            provider: tool.provider.to_owned(),
            model: tool.model.to_owned(),
            created: now,
            automatic_branch: tool.staging.automatic.as_ref().map(|a| a.branch.clone()),
        },
        staging,
        base_sha,
        files,
    );
    let summary = if automatic {
        format!(
            "Staged change {id} for {repository} (base {base}): {count} file(s). When you finish, the host pushes exactly these files to a new branch and opens a draft pull request; nothing has been pushed yet. Tell the user a draft pull request will be opened.",
            repository = proposal.repository(),
            base = proposal.base_branch,
            count = proposal.files.len(),
        )
    } else {
        format!(
            "Staged proposal {id} for {repository} (base {base} at {sha}): {count} file(s), {pages} review page(s). Nothing has been pushed. The user reviews it with `ai proposal {id}` (pages 1 to {pages}) and approves it with `ai approve {id}` within 10 minutes, or cancels it with `ai cancel {id}`.",
            repository = proposal.repository(),
            base = proposal.base_branch,
            sha = proposal.base_sha.get(..12).unwrap_or_default(),
            count = proposal.files.len(),
            pages = proposal.pages.len(),
        )
    };
    let staged = AuditEvent::of(
        &proposal,
        AuditStep::Staged,
        format!("{} ({source_reads} source reads)", proposal.hash),
    );
    if services.proposals.insert(proposal, now).is_err() {
        return Execution::ToolError(
            "too many proposals are pending; cancel or approve one first".to_owned(),
        );
    }
    tool.staging.set(id);
    services.audit(&staged);
    Execution::Success(summary)
}
