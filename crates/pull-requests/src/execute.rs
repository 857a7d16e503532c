//! The one-shot executor `ai approve` runs. It never calls a model. It rechecks the policy
//! and the base, then runs a fixed sequence through the snapshot and writer connections:
//! base freshness (`get_commit`), the REST preflight read of the base commit, a new bot
//! branch that must start at the base, the push of exactly the approved bytes, the REST
//! read of the pushed commit (its only parent must be the base), a read of every pushed file
//! at that commit, and the draft pull request. The first step that fails or whose outcome
//! is unknown ends the run; nothing is retried, rolled back or cleaned up.

use serde_json::{Value, json};
use yetibot_ai_providers::ServiceCall;
use yetibot_conversation::{Provenance, ToolId};
use yetibot_mcp_host::{HostReply, ServerSelection, Session};
use yetibot_redaction::Secret;
use yetibot_tool_policy::{
    GITHUB_SNAPSHOT_TOOLS, GITHUB_WRITE_TOOLS, RequestContext, Selection, ToolsetKind,
    check_change_path, is_listed_repository,
};

use yetibot_ai_providers::Client;
use yetibot_mcp_host::Host;
use yetibot_tool_policy::ToolPolicy;

use crate::limits::{DEFAULT_BRANCH_PREFIX, MAX_EXECUTION_OPERATIONS};
use crate::proposal::{Audit, AuditEvent, AuditStep, Proposal, State, random_hex};
use crate::read::{self, Contents};
use crate::stage::Reads;

/// GitHub's REST API, which an execution reads commit ancestry from.
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";

/// What an execution runs with: the MCP host (the snapshot and writer connections), the
/// HTTP client for GitHub's REST API at `github_api`, the tool policy it rechecks, and
/// where its audit events go.
pub struct Executor<'a> {
    /// The MCP host.
    pub host: &'a Host,
    /// The client for the two REST reads.
    pub client: &'a Client,
    /// The policy as it stands now.
    pub policy: &'a ToolPolicy,
    /// GitHub's REST API base (`https://api.github.com`).
    pub github_api: &'a str,
    /// The audit sink, if any.
    pub audit: Option<&'a Audit>,
}

/// The largest REST commit object read.
const MAX_REST_COMMIT_BYTES: usize = 256 * 1024;

/// How a run ended, for the state and the requester.
struct Stop {
    step: &'static str,
    reason: String,
    unknown: bool,
}

impl Stop {
    fn failed(step: &'static str, reason: impl Into<String>) -> Self {
        Self {
            step,
            reason: reason.into(),
            unknown: false,
        }
    }

    fn unknown(step: &'static str, reason: impl Into<String>) -> Self {
        Self {
            step,
            reason: reason.into(),
            unknown: true,
        }
    }
}

impl std::fmt::Debug for Executor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("github_api", &self.github_api)
            .finish_non_exhaustive()
    }
}

/// One execution: the proposal, its services and what it has done so far.
struct Run<'a> {
    services: &'a Executor<'a>,
    proposal: &'a Proposal,
    /// MCP operations so far (at most [`MAX_EXECUTION_OPERATIONS`]).
    operations: usize,
    /// The bot branch, once its creation was asked for.
    branch: Option<String>,
    /// The pushed commit, once known.
    commit: Option<String>,
}

/// Runs an approved proposal once and returns its final state. It never calls a model and
/// never retries: the first step that fails or whose outcome is unknown ends it, and the
/// returned state says which step and where to look.
pub async fn execute(executor: &Executor<'_>, proposal: &Proposal) -> State {
    let services = executor;
    let mut run = Run {
        services,
        proposal,
        operations: 0,
        branch: None,
        commit: None,
    };
    let outcome = run.steps().await;
    let place = match (&run.branch, &run.commit) {
        (Some(branch), Some(commit)) => format!(" Inspect branch {branch} (commit {commit})."),
        (Some(branch), None) => format!(" Inspect branch {branch}."),
        _ => String::new(),
    };
    match outcome {
        Ok(url) => {
            run.audit(AuditStep::Opened, url.clone());
            State::Opened(url)
        }
        Err(stop) => {
            let step = if stop.unknown {
                AuditStep::Unknown
            } else {
                AuditStep::Failed
            };
            run.audit(step, format!("{}: {}{place}", stop.step, stop.reason));
            let text = format!(
                "stopped at {}: {}.{place} Nothing after that step ran and nothing is retried; this proposal is spent.",
                stop.step, stop.reason
            );
            if stop.unknown {
                State::Unknown(text)
            } else {
                State::Failed(text)
            }
        }
    }
}

impl Run<'_> {
    fn audit(&self, step: AuditStep, detail: String) {
        let Some(audit) = self.services.audit else {
            return;
        };
        audit(&AuditEvent::of(self.proposal, step, detail));
    }

    /// The whole sequence; the pull request's URL when it is open.
    async fn steps(&mut self) -> Result<String, Stop> {
        let (writer, branch_prefix, token) = self.recheck().await?;
        let reader = self.proposal.reader.clone();
        let selection = ServerSelection::new()
            .narrowed(
                reader.clone(),
                GITHUB_SNAPSHOT_TOOLS.iter().map(|t| (*t).to_owned()),
            )
            .narrowed(
                writer.clone(),
                GITHUB_WRITE_TOOLS.iter().map(|t| (*t).to_owned()),
            );
        let session = self
            .services
            .host
            .open_selection(&selection)
            .await
            .map_err(|_| {
                Stop::failed("connecting", "the GitHub connections could not be opened")
            })?;
        let result = self
            .with_session(&session, &reader, &writer, &branch_prefix, &token)
            .await;
        session.close().await;
        result
    }

    /// Checks again, as of now, everything staging checked: the toolset and its access
    /// rules for the requester and the recorded provider and model, the repository, base
    /// branch, paths and credentials. Returns the writer, the branch prefix and the REST
    /// token.
    async fn recheck(&self) -> Result<(String, String, Secret), Stop> {
        let p = self.proposal;
        let policy_changed = |why: &str| Stop::failed("policy recheck", why.to_owned());
        let selection = Selection::choose(self.services.policy, Some(&p.toolset))
            .map_err(|_| policy_changed("the toolset is no longer configured"))?;
        let Some(toolset) = selection
            .toolset()
            .filter(|t| t.kind == ToolsetKind::GithubPr)
        else {
            return Err(policy_changed(
                "the toolset is no longer a github-pr toolset",
            ));
        };
        let provenance = Provenance::trusted(p.requester.adapter, p.requester.user_id.clone())
            .map_err(|_| policy_changed("the requester has no platform identity"))?;
        selection
            .authorize(&RequestContext {
                provenance,
                provider: p.provider.clone(),
                model: p.model.clone(),
            })
            .map_err(|error| Stop::failed("policy recheck", error.to_string()))?;
        let Some(github) = toolset.github.as_ref() else {
            return Err(policy_changed("the toolset has no GitHub policy"));
        };
        let listed = is_listed_repository(&github.repositories, &p.owner, &p.repo);
        if !listed || !github.base_branches.contains(&p.base_branch) {
            return Err(policy_changed(
                "the repository or base branch is no longer allowed",
            ));
        }
        if p.files
            .iter()
            .any(|f| check_change_path(&f.path, github).is_err())
        {
            return Err(policy_changed("a path is no longer allowed"));
        }
        if !toolset.servers.iter().any(|s| s.name == p.reader) {
            return Err(policy_changed(
                "the snapshot connection is no longer part of the toolset",
            ));
        }
        let secrets = self.services.host.secrets();
        if p.files.iter().any(|f| secrets.contains_secret(&f.after)) {
            return Err(policy_changed(
                "the change contains a configured credential",
            ));
        }
        let Some(writer) = github.write_server.clone() else {
            return Err(policy_changed("the toolset has no writer connection"));
        };
        let token = self
            .services
            .host
            .servers()
            .servers()
            .iter()
            .find(|s| s.name() == p.reader)
            .and_then(|s| s.github_api_token())
            .cloned()
            .ok_or_else(|| policy_changed("the snapshot connection has no :github-api-token"))?;
        let prefix = github
            .branch_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_BRANCH_PREFIX.to_owned());
        Ok((writer, prefix, token))
    }

    async fn with_session(
        &mut self,
        session: &Session,
        reader: &str,
        writer: &str,
        prefix: &str,
        token: &Secret,
    ) -> Result<String, Stop> {
        let p = self.proposal;
        let missing = GITHUB_WRITE_TOOLS
            .iter()
            .any(|tool| session.catalog().get(&ToolId::new(writer, *tool)).is_none());
        if missing {
            return Err(Stop::failed(
                "connecting",
                "the writer connection does not offer create_branch, push_files and create_pull_request",
            ));
        }
        // 1. The base has not moved since staging.
        let mut reads = Reads::new(session, reader, &p.owner, &p.repo);
        self.count()?;
        let now = reads
            .commit(&p.base_branch)
            .await
            .map_err(|error| Stop::failed("base check", error.to_string()))?;
        if now != p.base_sha {
            return Err(Stop::failed(
                "base check",
                format!(
                    "{} moved since the proposal was staged; nothing was written",
                    p.base_branch
                ),
            ));
        }
        // 2. The REST preflight: the base commit as GitHub's API shows it.
        let (sha, _) = self
            .rest_commit(session, token, &p.base_sha, "preflight")
            .await?;
        if sha != p.base_sha {
            return Err(Stop::failed(
                "preflight",
                "GitHub's API returned another commit",
            ));
        }
        self.audit(
            AuditStep::Preflight,
            format!("base {} at {}", p.base_branch, p.base_sha),
        );
        // 3. A new, unpredictable branch that must start at the base.
        // Automatic work names its branch after the chat message; a manual proposal gets an
        // unpredictable one.
        let branch = match &p.automatic_branch {
            Some(branch) => branch.clone(),
            None => {
                let suffix = random_hex(8)
                    .ok_or_else(|| Stop::failed("branch", "no randomness for a branch name"))?;
                format!("{prefix}{suffix}")
            }
        };
        self.branch = Some(branch.clone());
        let created = self
            .write(session, writer, "create_branch", json!({
                "owner": p.owner, "repo": p.repo, "branch": branch, "from_branch": p.base_branch,
            }))
            .await?;
        let start = read::reference_sha(&created, &branch)
            .map_err(|_| Stop::unknown("create branch", "GitHub's reply could not be read"))?;
        if start != p.base_sha {
            return Err(Stop::failed(
                "create branch",
                format!(
                    "the branch started at {start}, not the approved base (the base moved); nothing was pushed"
                ),
            ));
        }
        self.audit(AuditStep::BranchCreated, format!("{branch} at {start}"));
        // 4. Exactly the approved bytes, in one commit.
        let files: Vec<Value> = p
            .files
            .iter()
            .map(|f| json!({"path": f.path, "content": f.after}))
            .collect();
        let pushed = self
            .write(
                session,
                writer,
                "push_files",
                json!({
                    "owner": p.owner, "repo": p.repo, "branch": branch,
                    "message": p.title, "files": files,
                }),
            )
            .await?;
        let commit = read::reference_sha(&pushed, &branch)
            .map_err(|_| Stop::unknown("push", "GitHub's reply could not be read"))?;
        self.commit = Some(commit.clone());
        self.audit(AuditStep::Pushed, format!("{branch} at {commit}"));
        // 5. Ancestry: the pushed commit's one parent is the base.
        let (sha, parents) = self
            .rest_commit(session, token, &commit, "verification")
            .await?;
        if sha != commit || parents != [p.base_sha.clone()] {
            return Err(Stop::failed(
                "verification",
                "the pushed commit's parent is not the approved base; no pull request was opened",
            ));
        }
        // 6. Content: every file at the pushed commit is exactly what was approved.
        for file in &p.files {
            self.count()?;
            match reads.contents(&file.path, &commit).await {
                Ok(Contents::Text(text)) if text == file.after => {}
                Ok(_) => {
                    return Err(Stop::failed(
                        "verification",
                        "a pushed file differs from the approved text; no pull request was opened",
                    ));
                }
                Err(error) => {
                    return Err(Stop::failed(
                        "verification",
                        format!(
                            "a pushed file could not be read back ({error}); no pull request was opened"
                        ),
                    ));
                }
            }
        }
        self.audit(
            AuditStep::Verified,
            format!("{commit} has parent {}", p.base_sha),
        );
        // 7. The draft pull request.
        let opened = self
            .write(
                session,
                writer,
                "create_pull_request",
                json!({
                    "owner": p.owner, "repo": p.repo, "title": p.title, "body": p.body,
                    "head": branch, "base": p.base_branch, "draft": true,
                }),
            )
            .await?;
        read::pull_request_url(&opened, &p.repository())
            .map_err(|_| Stop::unknown("pull request", "GitHub's reply could not be read"))
    }

    /// Counts one MCP operation against [`MAX_EXECUTION_OPERATIONS`].
    fn count(&mut self) -> Result<(), Stop> {
        self.operations += 1;
        if self.operations > MAX_EXECUTION_OPERATIONS {
            return Err(Stop::failed(
                "limits",
                "the execution would exceed its operations",
            ));
        }
        Ok(())
    }

    /// One writer call. A refusal is a failure (GitHub says it did nothing); everything
    /// after the request left is an unknown outcome.
    async fn write(
        &mut self,
        session: &Session,
        writer: &str,
        tool: &'static str,
        arguments: Value,
    ) -> Result<Value, Stop> {
        self.count()?;
        let step = match tool {
            "create_branch" => "create branch",
            "push_files" => "push",
            _ => "pull request",
        };
        let Value::Object(arguments) = arguments else {
            return Err(Stop::failed(step, "internal: arguments are not an object"));
        };
        match session
            .call_for_host(&ToolId::new(writer, tool), arguments)
            .await
        {
            // GitHub's server reports its own 5xx and timeouts as tool errors too: only a
            // refused branch creation is known to have changed nothing.
            Ok(HostReply::Result(value))
                if value.get("isError").and_then(Value::as_bool) == Some(true) =>
            {
                if tool == "create_branch" {
                    Err(Stop::failed(step, "GitHub refused it"))
                } else {
                    Err(Stop::unknown(
                        step,
                        "GitHub reported an error, which may have come after the change was made",
                    ))
                }
            }
            Ok(HostReply::Result(value)) => Ok(value),
            Ok(HostReply::Rejected { .. }) => {
                Err(Stop::failed(step, "the writer refused the call"))
            }
            Err(_) => Err(Stop::failed(step, "the writer does not offer this tool")),
            Ok(HostReply::Unknown(reason)) => Err(Stop::unknown(
                step,
                format!("the writer's answer was lost ({})", reason.as_str()),
            )),
        }
    }

    /// GitHub's REST commit object for `sha`: its SHA and parents.
    async fn rest_commit(
        &mut self,
        session: &Session,
        token: &Secret,
        sha: &str,
        step: &'static str,
    ) -> Result<(String, Vec<String>), Stop> {
        let p = self.proposal;
        let url = format!(
            "{}/repos/{}/{}/git/commits/{sha}",
            self.services.github_api.trim_end_matches('/'),
            p.owner,
            p.repo
        );
        let call = ServiceCall::get("GitHub", &url, MAX_REST_COMMIT_BYTES)
            .bearer(token)
            .timeout(session.timeout());
        let body = self
            .services
            .client
            .call_service(call)
            .await
            .map_err(|error| {
                let why = match &error {
                    yetibot_ai_providers::Error::HttpStatus { status, .. } => {
                        format!("GitHub's API answered {status}")
                    }
                    _ => "GitHub's API could not be reached".to_owned(),
                };
                Stop::failed(step, why)
            })?;
        read::rest_commit(&body)
            .map_err(|_| Stop::failed(step, "GitHub's API returned an unexpected commit"))
    }
}
