//! A fake GitHub for the guarded pull-request workflow: one in-memory set of repositories
//! (branches, commits with their parents and trees, pull requests) served two ways on
//! loopback, in the test's own process:
//!
//! - an MCP server over Streamable HTTP ([`FakeGithub::serve_mcp`]) with the read and write
//!   tools of the GitHub MCP server in its published shapes: `get_commit` answers with a
//!   minimal commit **without parents**, `get_file_contents` with a text block and an
//!   embedded resource for a file (no `text` key for an empty file, a `blob` for a binary
//!   one), a JSON array for a directory and GitHub's exact error text for a missing path;
//!   `create_branch` and `push_files` with a Git reference, `create_pull_request` with
//!   `{id, url}`;
//! - GitHub's REST `GET /repos/{owner}/{repo}/git/commits/{sha}` ([`FakeGithub::serve_rest`]),
//!   the one read that shows a commit's parents, behind a bearer token.
//!
//! [`Fault`]s make it misbehave the ways the workflow must survive: a base branch that moves
//! while a branch is being created, a forged parent, a REST 404, a push whose reply never
//! comes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::Full;
use hyper::body::Bytes;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

/// One way the fake misbehaves, set with [`FakeGithub::fault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// When a branch is created, the base branch first gets a new commit (someone pushed),
    /// and the new branch starts from that one.
    MoveBaseOnCreateBranch,
    /// The REST commit read reports a parent other than the real one for any commit made by
    /// `push_files`.
    ForgedParent,
    /// The REST commit read answers 404 for every commit.
    RestNotFound,
    /// `push_files` applies the push and then never answers.
    PushNeverAnswers,
    /// `create_pull_request` answers with an error (the pull request is not made).
    PullRequestRefused,
}

/// A file or other entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Symlink(String),
}

#[derive(Debug, Clone)]
struct Commit {
    parent: Option<String>,
    message: String,
    tree: BTreeMap<String, Entry>,
}

/// A pull request the fake holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// `owner/repo`.
    pub repository: String,
    /// Its number.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
    /// The head branch.
    pub head: String,
    /// The base branch.
    pub base: String,
    /// Whether it is a draft.
    pub draft: bool,
}

#[derive(Debug, Default)]
struct State {
    /// `owner/repo` (lowercase) to its branches (name to commit SHA).
    repos: BTreeMap<String, BTreeMap<String, String>>,
    commits: BTreeMap<String, Commit>,
    pulls: Vec<PullRequest>,
    /// Every MCP call as `(tool, arguments)`.
    calls: Vec<(String, Value)>,
    /// Every REST request as `(path, authorization header)`.
    rest: Vec<(String, Option<String>)>,
    faults: Vec<Fault>,
    /// SHAs made by `push_files`.
    pushed: Vec<String>,
    counter: u64,
}

impl State {
    fn new_sha(&mut self) -> String {
        self.counter += 1;
        // Distinct, 40 hex digits, not sequential-looking.
        let a = self.counter.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let b = a.rotate_left(29) ^ 0xd1b5_4a32_d192_ed03;
        format!("{a:016x}{b:016x}{:08x}", self.counter)
    }

    fn commit(
        &mut self,
        parent: Option<String>,
        message: &str,
        tree: BTreeMap<String, Entry>,
    ) -> String {
        let sha = self.new_sha();
        self.commits.insert(
            sha.clone(),
            Commit {
                parent,
                message: message.to_owned(),
                tree,
            },
        );
        sha
    }

    fn branches(&self, repository: &str) -> Option<&BTreeMap<String, String>> {
        self.repos.get(&repository.to_ascii_lowercase())
    }

    /// A SHA, a branch name, `refs/heads/<name>` or nothing (the default branch `main`).
    fn resolve(&self, repository: &str, reference: Option<&str>) -> Option<String> {
        let branches = self.branches(repository)?;
        let reference = reference.unwrap_or("main");
        if reference.len() == 40 && self.commits.contains_key(reference) {
            return Some(reference.to_owned());
        }
        let name = reference.strip_prefix("refs/heads/").unwrap_or(reference);
        branches.get(name).cloned()
    }
}

/// The fake GitHub: cheap to clone, every clone the same repositories.
#[derive(Debug, Clone, Default)]
pub struct FakeGithub {
    state: Arc<Mutex<State>>,
}

fn text(value: &str) -> Value {
    json!({"content": [{"type": "text", "text": value}]})
}

fn error(value: &str) -> Value {
    json!({"content": [{"type": "text", "text": value}], "isError": true})
}

impl FakeGithub {
    /// An empty fake.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `repository` (`owner/repo`) with one branch, `main`, whose one commit holds
    /// `files` (path and text).
    #[must_use]
    pub fn with_repo(self, repository: &str, files: &[(&str, &str)]) -> Self {
        {
            let mut state = self.state();
            let tree = files
                .iter()
                .map(|(p, t)| ((*p).to_owned(), Entry::File(t.as_bytes().to_vec())))
                .collect();
            let sha = state.commit(None, "initial", tree);
            state.repos.insert(
                repository.to_ascii_lowercase(),
                BTreeMap::from([("main".to_owned(), sha)]),
            );
        }
        self
    }

    /// Adds a binary file (raw bytes) to `main` of `repository` in a new commit.
    pub fn add_bytes(&self, repository: &str, path: &str, bytes: &[u8]) {
        self.change(repository, "main", path, Entry::File(bytes.to_vec()));
    }

    /// Adds a symbolic link to `main` of `repository` in a new commit.
    pub fn add_symlink(&self, repository: &str, path: &str, target: &str) {
        self.change(repository, "main", path, Entry::Symlink(target.to_owned()));
    }

    /// Commits `text` at `path` on `branch` (someone else pushed).
    pub fn push(&self, repository: &str, branch: &str, path: &str, text: &str) {
        self.change(
            repository,
            branch,
            path,
            Entry::File(text.as_bytes().to_vec()),
        );
    }

    fn change(&self, repository: &str, branch: &str, path: &str, entry: Entry) {
        let mut state = self.state();
        let Some(tip) = state
            .branches(repository)
            .and_then(|b| b.get(branch))
            .cloned()
        else {
            return;
        };
        let mut tree = state
            .commits
            .get(&tip)
            .map(|c| c.tree.clone())
            .unwrap_or_default();
        tree.insert(path.to_owned(), entry);
        let sha = state.commit(Some(tip), "someone else's change", tree);
        if let Some(branches) = state.repos.get_mut(&repository.to_ascii_lowercase()) {
            branches.insert(branch.to_owned(), sha);
        }
    }

    /// Makes the fake misbehave this way from now on.
    pub fn fault(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    /// The commit SHA `branch` of `repository` points at.
    #[must_use]
    pub fn tip(&self, repository: &str, branch: &str) -> Option<String> {
        self.state().branches(repository)?.get(branch).cloned()
    }

    /// The branch names of `repository`.
    #[must_use]
    pub fn branches(&self, repository: &str) -> Vec<String> {
        self.state()
            .branches(repository)
            .map(|b| b.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The bytes at `path` on `branch` of `repository`.
    #[must_use]
    pub fn file(&self, repository: &str, branch: &str, path: &str) -> Option<Vec<u8>> {
        let state = self.state();
        let tip = state.branches(repository)?.get(branch)?;
        match state.commits.get(tip)?.tree.get(path)? {
            Entry::File(bytes) => Some(bytes.clone()),
            Entry::Symlink(_) => None,
        }
    }

    /// The parent of commit `sha`.
    #[must_use]
    pub fn parent(&self, sha: &str) -> Option<String> {
        self.state().commits.get(sha)?.parent.clone()
    }

    /// The pull requests made so far.
    #[must_use]
    pub fn pulls(&self) -> Vec<PullRequest> {
        self.state().pulls.clone()
    }

    /// The names of the MCP tools called so far, in order.
    #[must_use]
    pub fn called(&self) -> Vec<String> {
        self.state().calls.iter().map(|(t, _)| t.clone()).collect()
    }

    /// Every MCP call so far as `(tool, arguments)`.
    #[must_use]
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.state().calls.clone()
    }

    /// Every REST request so far as `(path, Authorization header)`.
    #[must_use]
    pub fn rest_requests(&self) -> Vec<(String, Option<String>)> {
        self.state().rest.clone()
    }

    /// The tools the MCP server lists: GitHub's six reads and the writer's three.
    fn catalog() -> Vec<Value> {
        let object = |required: &[&str], properties: Value| json!({"type": "object", "properties": properties, "required": required});
        let s = json!({"type": "string"});
        let n = json!({"type": "number"});
        vec![
            json!({"name": "get_commit", "description": "Get details for a commit from a GitHub repository",
                   "inputSchema": object(&["owner", "repo", "sha"], json!({"owner": s, "repo": s, "sha": s, "detail": s}))}),
            json!({"name": "get_file_contents", "description": "Get the contents of a file or directory from a GitHub repository",
                   "inputSchema": object(&["owner", "repo"], json!({"owner": s, "repo": s, "path": s, "ref": s, "sha": s}))}),
            json!({"name": "list_branches", "description": "List branches in a GitHub repository",
                   "inputSchema": object(&["owner", "repo"], json!({"owner": s, "repo": s, "page": n, "perPage": n}))}),
            json!({"name": "issue_read", "description": "Get information about a specific issue in a GitHub repository.",
                   "inputSchema": object(&["method", "owner", "repo", "issue_number"], json!({"method": s, "owner": s, "repo": s, "issue_number": n}))}),
            json!({"name": "pull_request_read", "description": "Get information on a specific pull request in GitHub repository.",
                   "inputSchema": object(&["method", "owner", "repo", "pullNumber"], json!({"method": s, "owner": s, "repo": s, "pullNumber": n}))}),
            json!({"name": "search_code", "description": "Fast and precise code search across ALL GitHub repositories",
                   "inputSchema": object(&["query"], json!({"query": s, "page": n, "perPage": n}))}),
            json!({"name": "create_branch", "description": "Create a new branch in a GitHub repository",
                   "inputSchema": object(&["owner", "repo", "branch"], json!({"owner": s, "repo": s, "branch": s, "from_branch": s}))}),
            json!({"name": "push_files", "description": "Push multiple files to a GitHub repository in a single commit",
                   "inputSchema": object(&["owner", "repo", "branch", "files", "message"], json!({"owner": s, "repo": s, "branch": s, "message": s,
                       "files": {"type": "array", "items": object(&["path", "content"], json!({"path": s, "content": s}))}}))}),
            json!({"name": "create_pull_request", "description": "Create a new pull request in a GitHub repository.",
                   "inputSchema": object(&["owner", "repo", "title", "head", "base"], json!({"owner": s, "repo": s, "title": s, "body": s, "head": s, "base": s, "draft": {"type": "boolean"}}))}),
        ]
    }

    async fn call(&self, name: &str, args: &Map<String, Value>) -> Value {
        let arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let repository = format!(
            "{}/{}",
            arg("owner").unwrap_or_default(),
            arg("repo").unwrap_or_default()
        );
        let never_answer = {
            let mut state = self.state();
            state
                .calls
                .push((name.to_owned(), Value::Object(args.clone())));
            name == "push_files" && state.faults.contains(&Fault::PushNeverAnswers)
        };
        let reply = match name {
            "get_commit" => self.get_commit(&repository, arg("sha").as_deref()),
            "get_file_contents" => self.get_file_contents(
                &repository,
                arg("path").as_deref().unwrap_or("/"),
                arg("sha").as_deref().or(arg("ref").as_deref()),
            ),
            "list_branches" => match self.state().branches(&repository) {
                Some(branches) => text(
                    &json!(
                        branches
                            .iter()
                            .map(
                                |(name, sha)| json!({"name": name, "sha": sha, "protected": false})
                            )
                            .collect::<Vec<_>>()
                    )
                    .to_string(),
                ),
                None => error("failed to list branches: 404 Not Found"),
            },
            "issue_read" | "pull_request_read" | "search_code" => {
                text(&format!("github-args: {}", Value::Object(args.clone())))
            }
            "create_branch" => self.create_branch(&repository, arg("branch"), arg("from_branch")),
            "push_files" => self.push_files(
                &repository,
                arg("branch"),
                arg("message"),
                args.get("files"),
            ),
            "create_pull_request" => self.create_pull_request(&repository, args),
            other => error(&format!("unknown tool {other}")),
        };
        if never_answer {
            std::future::pending::<()>().await;
        }
        reply
    }

    fn get_commit(&self, repository: &str, reference: Option<&str>) -> Value {
        let state = self.state();
        let Some(sha) = state.resolve(repository, reference) else {
            return error("failed to get commit: 404 Not Found");
        };
        let Some(commit) = state.commits.get(&sha) else {
            return error("failed to get commit: 404 Not Found");
        };
        // MinimalCommit: no parents, no tree.
        text(
            &json!({
                "sha": sha,
                "html_url": format!("https://github.com/{repository}/commit/{sha}"),
                "commit": {"message": commit.message,
                           "author": {"name": "Someone", "email": "someone@example.com", "date": "2026-12-01T00:00:00Z"}},
                "author": {"login": "someone"},
                "stats": {"additions": 1, "total": 1}
            })
            .to_string(),
        )
    }

    fn get_file_contents(&self, repository: &str, path: &str, reference: Option<&str>) -> Value {
        let state = self.state();
        let Some(sha) = state.resolve(repository, reference) else {
            return error(
                "failed to resolve git reference: could not resolve ref as a branch or a tag",
            );
        };
        let Some(commit) = state.commits.get(&sha) else {
            return error("failed to get commit");
        };
        let path = path.trim_start_matches('/');
        if let Some(entry) = commit.tree.get(path) {
            let uri = format!("repo://{repository}/sha/{sha}/contents/{path}");
            return match entry {
                Entry::Symlink(target) => text(
                    &json!({"type": "symlink", "path": path, "target": target, "content": ""})
                        .to_string(),
                ),
                Entry::File(bytes) if bytes.is_empty() => json!({"content": [
                    {"type": "text", "text": "successfully downloaded empty file (SHA: 0000)"},
                    {"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain"}}
                ]}),
                Entry::File(bytes) => match std::str::from_utf8(bytes) {
                    Ok(body) if !bytes.contains(&0) => json!({"content": [
                        {"type": "text", "text": "successfully downloaded text file (SHA: 1111)"},
                        {"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain; charset=utf-8", "text": body}}
                    ]}),
                    _ => json!({"content": [
                        {"type": "text", "text": "successfully downloaded binary file (SHA: 2222)"},
                        {"type": "resource", "resource": {"uri": uri, "mimeType": "application/octet-stream", "blob": "AAEC"}}
                    ]}),
                },
            };
        }
        // A directory: the entries directly under it.
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        let mut names: BTreeMap<String, &'static str> = BTreeMap::new();
        for (entry_path, entry) in &commit.tree {
            let Some(rest) = entry_path.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((dir, _)) => {
                    names.insert(dir.to_owned(), "dir");
                }
                None => {
                    let kind = if matches!(entry, Entry::Symlink(_)) {
                        "symlink"
                    } else {
                        "file"
                    };
                    names.insert(rest.to_owned(), kind);
                }
            }
        }
        if names.is_empty() {
            return error(
                "Failed to get file contents. The path does not point to a file or directory, or the file does not exist in the repository.",
            );
        }
        let listing: Vec<Value> = names
            .into_iter()
            .map(|(name, kind)| {
                json!({"type": kind, "name": name, "path": format!("{prefix}{name}"), "sha": "3333", "size": 1})
            })
            .collect();
        text(&Value::Array(listing).to_string())
    }

    fn reference(repository: &str, branch: &str, sha: &str) -> Value {
        text(
            &json!({
                "ref": format!("refs/heads/{branch}"),
                "url": format!("https://api.github.com/repos/{repository}/git/refs/heads/{branch}"),
                "object": {"type": "commit", "sha": sha,
                           "url": format!("https://api.github.com/repos/{repository}/git/commits/{sha}")},
                "node_id": "REF_1"
            })
            .to_string(),
        )
    }

    fn create_branch(
        &self,
        repository: &str,
        branch: Option<String>,
        from: Option<String>,
    ) -> Value {
        let (Some(branch), Some(from)) = (branch, from) else {
            return error("missing required parameter");
        };
        if self.state().faults.contains(&Fault::MoveBaseOnCreateBranch) {
            self.push(repository, &from, "moved.txt", "someone pushed meanwhile\n");
        }
        let mut state = self.state();
        let Some(branches) = state.branches(repository) else {
            return error("failed to get repository: 404 Not Found");
        };
        if branches.contains_key(&branch) {
            return error("failed to create branch: 422 Reference already exists");
        }
        let Some(sha) = branches.get(&from).cloned() else {
            return error("failed to get reference: 404 Not Found");
        };
        if let Some(branches) = state.repos.get_mut(&repository.to_ascii_lowercase()) {
            branches.insert(branch.clone(), sha.clone());
        }
        Self::reference(repository, &branch, &sha)
    }

    fn push_files(
        &self,
        repository: &str,
        branch: Option<String>,
        message: Option<String>,
        files: Option<&Value>,
    ) -> Value {
        let (Some(branch), Some(message), Some(Value::Array(files))) = (branch, message, files)
        else {
            return error("missing required parameter");
        };
        let mut state = self.state();
        let Some(tip) = state
            .branches(repository)
            .and_then(|b| b.get(&branch))
            .cloned()
        else {
            return error("failed to get branch reference: 404 Not Found");
        };
        let mut tree = state
            .commits
            .get(&tip)
            .map(|c| c.tree.clone())
            .unwrap_or_default();
        for file in files {
            let (Some(path), Some(content)) = (file["path"].as_str(), file["content"].as_str())
            else {
                return error("each file needs path and content");
            };
            tree.insert(path.to_owned(), Entry::File(content.as_bytes().to_vec()));
        }
        let sha = state.commit(Some(tip), &message, tree);
        state.pushed.push(sha.clone());
        if let Some(branches) = state.repos.get_mut(&repository.to_ascii_lowercase()) {
            branches.insert(branch.clone(), sha.clone());
        }
        Self::reference(repository, &branch, &sha)
    }

    fn create_pull_request(&self, repository: &str, args: &Map<String, Value>) -> Value {
        let arg = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut state = self.state();
        if state.faults.contains(&Fault::PullRequestRefused) {
            return error("failed to create pull request: 422 Validation Failed");
        }
        let number = state.pulls.len() as u64 + 1;
        state.pulls.push(PullRequest {
            repository: repository.to_owned(),
            number,
            title: arg("title"),
            body: arg("body"),
            head: arg("head"),
            base: arg("base"),
            draft: args.get("draft").and_then(Value::as_bool).unwrap_or(false),
        });
        text(&json!({"id": format!("{}", 1000 + number), "url": format!("https://github.com/{repository}/pull/{number}")}).to_string())
    }

    /// The REST answer for `path`: `(status, body)`.
    fn rest(&self, path: &str, authorization: Option<String>) -> (u16, Value) {
        let mut state = self.state();
        state.rest.push((path.to_owned(), authorization.clone()));
        if authorization.is_none() {
            return (401, json!({"message": "Requires authentication"}));
        }
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let ["repos", owner, repo, "git", "commits", sha] = parts.as_slice() else {
            return (404, json!({"message": "Not Found"}));
        };
        let repository = format!("{owner}/{repo}");
        if state.faults.contains(&Fault::RestNotFound) || state.branches(&repository).is_none() {
            return (404, json!({"message": "Not Found"}));
        }
        let Some(commit) = state.commits.get(*sha) else {
            return (404, json!({"message": "Not Found"}));
        };
        let mut parent = commit.parent.clone();
        if state.faults.contains(&Fault::ForgedParent) && state.pushed.iter().any(|p| p == sha) {
            parent = Some("f".repeat(40));
        }
        let parents: Vec<Value> = parent
            .iter()
            .map(|p| json!({"sha": p, "url": format!("https://api.github.com/repos/{repository}/git/commits/{p}"),
                            "html_url": format!("https://github.com/{repository}/commit/{p}")}))
            .collect();
        (
            200,
            json!({
                "sha": sha, "node_id": "C_1",
                "url": format!("https://api.github.com/repos/{repository}/git/commits/{sha}"),
                "html_url": format!("https://github.com/{repository}/commit/{sha}"),
                "author": {"name": "Someone", "email": "someone@example.com", "date": "2026-12-01T00:00:00Z"},
                "committer": {"name": "Someone", "email": "someone@example.com", "date": "2026-12-01T00:00:00Z"},
                "message": commit.message,
                "tree": {"sha": "4444", "url": "https://api.github.com/tree"},
                "parents": parents,
                "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null}
            }),
        )
    }

    /// Serves the MCP tools over Streamable HTTP on a loopback port, in this process, and
    /// returns the endpoint URL (`http://127.0.0.1:PORT/mcp`).
    ///
    /// # Errors
    ///
    /// The port could not be bound.
    pub async fn serve_mcp(&self) -> std::io::Result<String> {
        use hyper_util::rt::TokioIo;
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        let fake = self.clone();
        let config = StreamableHttpServerConfig::default()
            .with_json_response(true)
            .with_allowed_hosts(["127.0.0.1", "localhost"]);
        let service = StreamableHttpService::new(
            move || Ok(Handler(fake.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let service = service.clone();
                let serve = hyper::service::service_fn(move |request| {
                    let service = service.clone();
                    async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), serve)
                        .await;
                });
            }
        });
        Ok(url)
    }

    /// Serves the REST commit read on a loopback port, in this process, and returns its base
    /// URL (`http://127.0.0.1:PORT`).
    ///
    /// # Errors
    ///
    /// The port could not be bound.
    pub async fn serve_rest(&self) -> std::io::Result<String> {
        use hyper_util::rt::TokioIo;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let fake = self.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let fake = fake.clone();
                let serve = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let authorization = request
                            .headers()
                            .get(hyper::header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        let (status, body) = if request.method() == hyper::Method::GET {
                            fake.rest(request.uri().path(), authorization)
                        } else {
                            (405, json!({"message": "Method Not Allowed"}))
                        };
                        let response = hyper::Response::builder()
                            .status(status)
                            .header("content-type", "application/json; charset=utf-8")
                            .body(Full::new(Bytes::from(body.to_string())));
                        async move { response }
                    },
                );
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), serve)
                        .await;
                });
            }
        });
        Ok(url)
    }
}

/// One MCP session's handler over the shared fake.
#[derive(Debug, Clone)]
struct Handler(FakeGithub);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(json!({"tools": FakeGithub::catalog()}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let value = self.0.call(&request.name, &args).await;
        let result: CallToolResult = serde_json::from_value(value)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }
}
