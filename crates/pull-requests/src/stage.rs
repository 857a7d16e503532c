//! Staging: the arguments of `stage_changes` checked without I/O ([`check`]), the
//! snapshot of the base commit and every touched file and directory at that commit
//! ([`snapshot`], at most [`MAX_SOURCE_READS`] reads), and the immutable proposal made of
//! them ([`Proposal::new`]). Nothing is written to GitHub here.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use yetibot_conversation::ToolId;
use yetibot_mcp_host::{HostReply, Session};
use yetibot_redaction::Secrets;
use yetibot_tool_policy::{
    GithubPolicy, PathRefusal, Toolset, check_change_path, is_listed_repository,
};

use crate::limits::{
    MAX_BODY_CHARS, MAX_SOURCE_READS, MAX_STAGED_BYTES, MAX_STAGED_FILES, MAX_TITLE_CHARS,
    PROPOSAL_TTL,
};
#[cfg(doc)]
use crate::proposal::random_hex;
use crate::proposal::{
    AUTOMATIC_FOOTER, MANUAL_FOOTER, Proposal, ProposedFile, Requester, State, short_sha256,
};
use crate::read::{self, Contents, ShapeError};
use crate::review::{FileView, diff_pages, exact, pack, text_rows};

/// Why a staging was refused. The texts name the rule, never the configuration's values or
/// a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    #[error(
        "stage_changes takes owner, repo, base, title, optional body and files [{{path, content}}], nothing else"
    )]
    /// Not the tool's argument object.
    Malformed,
    /// The request's toolset is not a `github-pr` one.
    #[error("staging needs a github-pr toolset")]
    NotPullRequestToolset,
    /// The repository is not on the toolset's list.
    #[error("this repository is not one this toolset may change")]
    Repository,
    /// The base branch is not on `:base-branches`.
    #[error("pull requests may only target the toolset's base branches")]
    BaseBranch,
    /// The title is empty, too long or several lines.
    #[error("the title must be one line of 1 to 200 visible characters")]
    Title,
    /// The body is too long.
    #[error("the body must be at most 4,000 characters")]
    Body,
    /// No file, more than five, or a path twice (compared without case).
    #[error("stage 1 to 5 files, each path once")]
    FileCount,
    /// A path the toolset may not change.
    #[error("{path}: {reason}")]
    Path {
        /// The path, as a refusal may show it (one line, at most 120 characters).
        path: String,
        /// Why.
        reason: PathRefusal,
    },
    /// More than 8 KiB of new text.
    #[error("the new content is larger than 8 KiB in all")]
    TooLarge,
    /// A file with a NUL byte (the path, as shown).
    #[error("{0}: binary content (NUL bytes) cannot be staged")]
    Binary(String),
    /// A configured credential in a path, the text, the title or the body.
    #[error("the change contains a configured credential; nothing was staged")]
    Credential,
}

/// The checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staging {
    /// The repository's owner, as the model wrote it.
    pub owner: String,
    /// The repository's name, as the model wrote it.
    pub repo: String,
    /// The base branch.
    pub base: String,
    /// The pull request's title, trimmed.
    pub title: String,
    /// The model's body, trimmed (the footer comes later).
    pub body: String,
    /// Each file's path and complete new text.
    pub files: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    owner: String,
    repo: String,
    base: String,
    title: String,
    #[serde(default)]
    body: String,
    files: Vec<FileArg>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileArg {
    path: String,
    content: String,
}

/// Checks a staging's arguments against a `github-pr` toolset's policy and the request's
/// credentials, with no I/O.
///
/// # Errors
///
/// The first [`StageError`] that applies.
pub fn check(
    arguments: &str,
    github: &GithubPolicy,
    secrets: &Secrets,
) -> Result<Staging, StageError> {
    let args: Args = serde_json::from_str(arguments).map_err(|_| StageError::Malformed)?;
    if !is_listed_repository(&github.repositories, &args.owner, &args.repo) {
        return Err(StageError::Repository);
    }
    if !github.base_branches.contains(&args.base) {
        return Err(StageError::BaseBranch);
    }
    let title = args.title.trim();
    if title.is_empty()
        || title.chars().count() > MAX_TITLE_CHARS
        || title
            .chars()
            .any(|c| c.is_control() || yetibot_tool_policy::is_hidden_character(c))
    {
        return Err(StageError::Title);
    }
    if args.body.chars().count() > MAX_BODY_CHARS {
        return Err(StageError::Body);
    }
    if args.files.is_empty() || args.files.len() > MAX_STAGED_FILES {
        return Err(StageError::FileCount);
    }
    let mut total = 0usize;
    for (i, file) in args.files.iter().enumerate() {
        check_change_path(&file.path, github).map_err(|reason| StageError::Path {
            path: shown_path(&file.path),
            reason,
        })?;
        // Paths compare without case: a case-insensitive checkout must not see two.
        if args.files[..i]
            .iter()
            .any(|other| other.path.eq_ignore_ascii_case(&file.path))
        {
            return Err(StageError::FileCount);
        }
        if file.content.contains('\0') {
            return Err(StageError::Binary(shown_path(&file.path)));
        }
        total += file.content.len();
    }
    if total > MAX_STAGED_BYTES {
        return Err(StageError::TooLarge);
    }
    let quotes_secret = std::iter::once(args.title.as_str())
        .chain(std::iter::once(args.body.as_str()))
        .chain(
            args.files
                .iter()
                .flat_map(|f| [f.path.as_str(), f.content.as_str()]),
        )
        .any(|text| secrets.contains_secret(text));
    if quotes_secret {
        return Err(StageError::Credential);
    }
    Ok(Staging {
        owner: args.owner,
        repo: args.repo,
        base: args.base,
        title: title.to_owned(),
        body: args.body.trim().to_owned(),
        files: args
            .files
            .into_iter()
            .map(|f| (f.path, f.content))
            .collect(),
    })
}

/// A path as a refusal may quote it: one line, at most 120 characters.
fn shown_path(path: &str) -> String {
    let line: String = path
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(120)
        .collect();
    line
}

/// The server of `toolset` whose session offers both snapshot tools.
pub fn reader(toolset: &Toolset, session: &Session) -> Option<String> {
    toolset.servers.iter().map(|s| s.name.clone()).find(|name| {
        yetibot_tool_policy::GITHUB_SNAPSHOT_TOOLS
            .iter()
            .all(|tool| session.catalog().get(&ToolId::new(name, *tool)).is_some())
    })
}

/// Source reads within [`MAX_SOURCE_READS`].
pub struct Reads<'s> {
    session: &'s Session,
    server: &'s str,
    owner: &'s str,
    repo: &'s str,
    /// Reads made so far.
    pub count: usize,
}

/// A read that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// No answer in time, or the answer was lost.
    #[error("GitHub did not answer a read in time or its answer was lost")]
    Unknown,
    /// The server refused the call.
    #[error("GitHub refused a read")]
    Refused,
    /// The answer's shape was not usable.
    #[error("{0}")]
    Shape(ShapeError),
    /// The staging would need more than [`MAX_SOURCE_READS`] reads.
    #[error("more than 11 source reads would be needed")]
    TooMany,
}

impl std::fmt::Debug for Reads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reads")
            .field("server", &self.server)
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl<'s> Reads<'s> {
    /// Reads of `owner/repo` through the snapshot tools of `server` on `session`.
    pub fn new(session: &'s Session, server: &'s str, owner: &'s str, repo: &'s str) -> Self {
        Self {
            session,
            server,
            owner,
            repo,
            count: 0,
        }
    }

    async fn call(&mut self, tool: &str, extra: &[(&str, &str)]) -> Result<Value, ReadError> {
        if self.count >= MAX_SOURCE_READS {
            return Err(ReadError::TooMany);
        }
        self.count += 1;
        let mut arguments = Map::new();
        arguments.insert("owner".to_owned(), json!(self.owner));
        arguments.insert("repo".to_owned(), json!(self.repo));
        for (key, value) in extra {
            arguments.insert((*key).to_owned(), json!(value));
        }
        match self
            .session
            .call_for_host(&ToolId::new(self.server, tool), arguments)
            .await
        {
            Ok(HostReply::Result(value)) => Ok(value),
            Ok(HostReply::Rejected { .. }) | Err(_) => Err(ReadError::Refused),
            Ok(HostReply::Unknown(_)) => Err(ReadError::Unknown),
        }
    }

    /// The commit SHA `reference` (a branch or a SHA) names now.
    pub async fn commit(&mut self, reference: &str) -> Result<String, ReadError> {
        let value = self
            .call("get_commit", &[("sha", reference), ("detail", "none")])
            .await?;
        read::commit_sha(&value).map_err(ReadError::Shape)
    }

    /// What `path` is at commit `sha` (`""` for the root directory).
    pub async fn contents(&mut self, path: &str, sha: &str) -> Result<Contents, ReadError> {
        let path = if path.is_empty() { "/" } else { path };
        let value = self
            .call("get_file_contents", &[("path", path), ("sha", sha)])
            .await?;
        read::contents(&value).map_err(ReadError::Shape)
    }
}

/// Why the snapshot refused a staging.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// The base commit could not be read.
    #[error("could not read the base branch: {0}")]
    Base(ReadError),
    /// A file or directory could not be read.
    #[error("{path}: {error}")]
    Read {
        /// The staged path, as shown.
        path: String,
        /// Why.
        error: ReadError,
    },
    /// A new file whose parent directory does not exist.
    #[error("{0}: a new file needs an existing parent directory")]
    NoParent(String),
    /// The path is a directory, link, submodule or a case-only twin of another entry.
    #[error("{0}: only regular text files can be changed (this is a directory, link or submodule)")]
    NotAFile(String),
    /// The existing text holds a configured credential.
    #[error("{0}: the existing file contains a configured credential; nothing was staged")]
    Credential(String),
    /// The staged text equals the current one.
    #[error("{0}: the staged text is the same as the current one")]
    Unchanged(String),
}

/// Reads the base and each file's current state at that exact commit: `(base SHA, files)`.
///
/// # Errors
///
/// The [`SnapshotError`] that stops the staging.
pub async fn snapshot(
    reads: &mut Reads<'_>,
    staging: &Staging,
    secrets: &Secrets,
) -> Result<(String, Vec<ProposedFile>), SnapshotError> {
    let base_sha = reads
        .commit(&staging.base)
        .await
        .map_err(SnapshotError::Base)?;
    let mut listings: Vec<(String, Vec<read::DirEntry>)> = Vec::new();
    let mut files = Vec::new();
    for (path, after) in &staging.files {
        let shown = shown_path(path);
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
        let cached = listings.iter().position(|(dir, _)| dir == parent);
        let index = match cached {
            Some(index) => index,
            None => {
                let listing = match reads.contents(parent, &base_sha).await {
                    Ok(Contents::Directory(entries)) => entries,
                    Ok(Contents::Missing | Contents::Text(_)) => {
                        return Err(SnapshotError::NoParent(shown));
                    }
                    Err(error) => {
                        return Err(SnapshotError::Read { path: shown, error });
                    }
                };
                listings.push((parent.to_owned(), listing));
                listings.len() - 1
            }
        };
        let entry = listings[index].1.iter().find(|e| e.name == name).cloned();
        let before = match entry {
            None => {
                // A case-only twin of an existing entry would be a second file on a
                // case-insensitive checkout.
                if listings[index]
                    .1
                    .iter()
                    .any(|e| e.name.eq_ignore_ascii_case(name))
                {
                    return Err(SnapshotError::NotAFile(shown));
                }
                None
            }
            Some(entry) if entry.kind == "file" => match reads.contents(path, &base_sha).await {
                Ok(Contents::Text(text)) => Some(text),
                Ok(_) => return Err(SnapshotError::NotAFile(shown)),
                Err(error) => {
                    return Err(SnapshotError::Read { path: shown, error });
                }
            },
            Some(_) => return Err(SnapshotError::NotAFile(shown)),
        };
        if before
            .as_deref()
            .is_some_and(|text| secrets.contains_secret(text))
        {
            return Err(SnapshotError::Credential(shown));
        }
        if before.as_deref() == Some(after.as_str()) {
            return Err(SnapshotError::Unchanged(shown));
        }
        files.push(ProposedFile {
            path: path.clone(),
            before,
            after: after.clone(),
        });
    }
    Ok((base_sha, files))
}

/// The manifest's hash as the review shows it.
fn manifest_hash(proposal: &Proposal) -> String {
    let manifest = json!({
        "repository": proposal.repository(),
        "base": proposal.base_branch,
        "base_sha": proposal.base_sha,
        "title": proposal.title,
        "body": proposal.body,
        "files": proposal.files.iter().map(|f| json!({"path": f.path, "content": f.after})).collect::<Vec<_>>(),
    });
    format!("sha256:{}", short_sha256(manifest.to_string().as_bytes()))
}

/// Renders a proposal's pages: the summary first, then the diff pages.
pub(crate) fn render_pages(proposal: &Proposal) -> Vec<String> {
    let views: Vec<FileView<'_>> = proposal
        .files
        .iter()
        .map(|f| FileView {
            path: &f.path,
            before: f.before.as_deref(),
            after: &f.after,
        })
        .collect();
    // The body first, shown whole, then the files.
    let mut rest = pack(vec![(
        "Pull request body, exactly:".to_owned(),
        "Pull request body".to_owned(),
        text_rows(&proposal.body),
    )]);
    rest.extend(diff_pages(&views));
    let total = rest.len() + 1;
    let files: Vec<String> = proposal
        .files
        .iter()
        .map(|f| {
            let what = if f.before.is_some() {
                "update"
            } else {
                "new file"
            };
            format!("{} ({what})", exact(&f.path))
        })
        .collect();
    let short = proposal.base_sha.get(..12).unwrap_or(&proposal.base_sha);
    let summary = format!(
        "Proposal {id}, page 1/{total}\n\
         Repository: {repository}\n\
         Base: {base} at {short} ({sha})\n\
         Hash: {hash}\n\
         Expires: {minutes} minutes after it was staged; approve with `ai approve {id}` after reading every page\n\
         Draft pull request title and files:\n```\n{title}\n{files}\n```",
        id = proposal.id,
        repository = proposal.repository(),
        base = proposal.base_branch,
        sha = proposal.base_sha,
        hash = proposal.hash,
        minutes = PROPOSAL_TTL.as_secs() / 60,
        title = exact(&proposal.title),
        files = files.join("\n"),
    );
    let mut pages = vec![summary];
    pages.extend(
        rest.into_iter()
            .enumerate()
            .map(|(i, page)| format!("Proposal {}, page {}/{total}\n{page}", proposal.id, i + 2)),
    );
    pages
}

/// The body the pull request carries: the model's text and the host's footer.
pub(crate) fn with_footer(body: &str, footer: &str) -> String {
    if body.is_empty() {
        footer.to_owned()
    } else {
        format!("{body}\n\n---\n{footer}")
    }
}

/// Everything a new proposal is made of besides what the snapshot read.
#[derive(Debug, Clone)]
pub struct NewProposal {
    /// Its ID ([`random_hex`]).
    pub id: String,
    /// The `github-pr` toolset whose policy it was checked against.
    pub toolset: String,
    /// The server that took the snapshot.
    pub reader: String,
    /// Who asked, and where.
    pub requester: Requester,
    /// The provider and model that generated it.
    pub provider: String,
    /// The model.
    pub model: String,
    /// When it is staged.
    pub created: tokio::time::Instant,
    /// For automatic work, the branch its execution creates.
    pub automatic_branch: Option<String>,
}

impl Proposal {
    /// The immutable proposal of a checked staging and its snapshot: the body gets the
    /// footer of its mode, the manifest its hash, and the review its pages.
    #[must_use]
    pub fn new(
        new: NewProposal,
        staging: Staging,
        base_sha: String,
        files: Vec<ProposedFile>,
    ) -> Self {
        let footer = if new.automatic_branch.is_some() {
            AUTOMATIC_FOOTER
        } else {
            MANUAL_FOOTER
        };
        let mut proposal = Self {
            id: new.id,
            toolset: new.toolset,
            reader: new.reader,
            owner: staging.owner,
            repo: staging.repo,
            base_branch: staging.base,
            base_sha,
            title: staging.title,
            body: with_footer(&staging.body, footer),
            files,
            hash: String::new(),
            requester: new.requester,
            provider: new.provider,
            model: new.model,
            created: new.created,
            pages: Vec::new(),
            seen: Vec::new(),
            state: State::Pending,
            automatic_branch: new.automatic_branch,
        };
        proposal.hash = manifest_hash(&proposal);
        proposal.pages = render_pages(&proposal);
        proposal.seen = vec![false; proposal.pages.len()];
        proposal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> GithubPolicy {
        GithubPolicy {
            repositories: vec!["your-org/your-repo".to_owned()],
            base_branches: vec!["main".to_owned()],
            allowed_paths: vec!["src/".to_owned()],
            denied_paths: vec!["src/credentials/".to_owned()],
            branch_prefix: None,
            write_server: Some("w".to_owned()),
        }
    }

    fn args(files: Value) -> String {
        json!({"owner": "your-org", "repo": "your-repo", "base": "main", "title": "Fix a typo",
               "body": "Fixes it.", "files": files})
        .to_string()
    }

    #[test]
    fn the_static_rules_refuse_before_any_read() {
        let secrets = Secrets::new(["sk-staged-canary-123456"]).expect("secrets");
        let ok = args(json!([{"path": "src/a.clj", "content": "(ns a)\n"}]));
        assert!(check(&ok, &policy(), &secrets).is_ok());
        let cases = [
            (args(json!([])), "stage 1 to 5 files"),
            (
                args(json!(
                    (0..6)
                        .map(|i| json!({"path": format!("src/{i}"), "content": "x"}))
                        .collect::<Vec<_>>()
                )),
                "stage 1 to 5 files",
            ),
            (
                args(json!([{"path": "src/a", "content": "x"}, {"path": "SRC/A", "content": "y"}])),
                "outside",
            ),
            (
                args(json!([{"path": "src/a", "content": "x"}, {"path": "src/A", "content": "y"}])),
                "stage 1 to 5 files",
            ),
            (
                args(json!([{"path": "README.md", "content": "x"}])),
                "outside the toolset's allowed paths",
            ),
            (
                args(json!([{"path": "src/credentials/k.clj", "content": "x"}])),
                "denied paths",
            ),
            (
                args(json!([{"path": "src/../x", "content": "x"}])),
                "plain relative path",
            ),
            (
                args(json!([{"path": "src/a", "content": "x".repeat(8193)}])),
                "8 KiB",
            ),
            (
                args(json!([{"path": "src/a", "content": "a\u{0}b"}])),
                "binary",
            ),
            (
                args(json!([{"path": "src/a", "content": "key sk-staged-canary-123456"}])),
                "credential",
            ),
            (
                args(json!([{"path": "src/a", "content": "x", "mode": "100755"}])),
                "nothing else",
            ),
        ];
        for (arguments, expected) in cases {
            let error = check(&arguments, &policy(), &secrets).expect_err(&arguments);
            assert!(error.to_string().contains(expected), "{arguments}: {error}");
            assert!(!error.to_string().contains("canary"));
        }
        let other_repo = ok.replace("your-repo", "other");
        assert_eq!(
            check(&other_repo, &policy(), &secrets),
            Err(StageError::Repository)
        );
        let other_base = ok.replace("\"main\"", "\"release\"");
        assert_eq!(
            check(&other_base, &policy(), &secrets),
            Err(StageError::BaseBranch)
        );
        let two_line_title = ok.replace("Fix a typo", "Fix\\na typo");
        assert_eq!(
            check(&two_line_title, &policy(), &secrets),
            Err(StageError::Title)
        );
    }
}
