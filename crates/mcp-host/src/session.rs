//! Per-request sessions: opening the selected servers, discovery, calls and teardown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientNotification, ClientRequest, Implementation,
    PaginatedRequestParams, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;
use yetibot_conversation::ToolId;
use yetibot_conversation::limits::{MAX_ARGUMENT_CHARS, MAX_TOOLS};
use yetibot_redaction::{Secret, Secrets};

use crate::catalog::{DropReason, DroppedTool, ServerCatalog, ServerInstructions, ToolInfo};
use crate::config::{Server, ServerSet, Transport};
use crate::error::{Error, Result};
use crate::limits::MAX_LIST_PAGES;
use crate::names::{is_valid_tool_name, shown_name};
use crate::outcome::{CallOutcome, HostReply, ToolOutput, UnknownReason};
use crate::replies::ExactReplies;
use crate::sanitize::one_line;

/// Names of the variables [`HostOptions::with_standard_env`] passes to local servers.
pub const STANDARD_ENV_NAMES: [&str; 7] =
    ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"];
/// `PATH` given to local servers when the caller supplies no standard environment.
pub const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Largest JSON body or SSE event accepted from a remote server, and largest stdio line.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;
/// Longest wait for a local server to exit after its input is closed before it is killed
/// (or `:timeout-ms` when that is shorter).
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How many bytes of a local server's stderr are kept; the rest is read and dropped.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// The reason given in the `notifications/cancelled` sent for a call that timed out.
pub const CANCEL_REASON: &str = "the client stopped waiting: timed out";

/// What one request opens: configured servers, each offering its whole catalog (within its
/// `:tools` allowlist) or narrowed to some of its tools, and the most MCP tools the request
/// takes. Narrowing happens before the tool limit, so a narrowed tool is offered wherever
/// it sits in the server's listing.
#[derive(Debug, Clone)]
pub struct ServerSelection {
    servers: Vec<(String, Option<Vec<String>>)>,
    tool_limit: usize,
}

impl Default for ServerSelection {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            tool_limit: MAX_TOOLS,
        }
    }
}

impl ServerSelection {
    /// No servers, and a limit of [`MAX_TOOLS`].
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// These servers, none narrowed.
    #[must_use]
    pub fn of(names: &[&str]) -> Self {
        names
            .iter()
            .fold(Self::new(), |selection, name| selection.server(*name))
    }

    /// Adds a server with its whole (allowlisted) catalog, replacing an earlier entry for it.
    #[must_use]
    pub fn server(self, name: impl Into<String>) -> Self {
        self.with(name.into(), None)
    }

    /// Adds a server narrowed to these tools, replacing an earlier entry for it: typically
    /// what a toolset selects from the server. Every named tool must be listed by the server
    /// and allowed by its `:tools`, or opening fails.
    #[must_use]
    pub fn narrowed<S: Into<String>>(
        self,
        name: impl Into<String>,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        let tools = tools.into_iter().map(Into::into).collect();
        self.with(name.into(), Some(tools))
    }

    /// Offers at most `limit` MCP tools (never more than [`MAX_TOOLS`]). A caller that adds
    /// its own tools to the same request passes what is left of its overall limit.
    #[must_use]
    pub fn with_tool_limit(mut self, limit: usize) -> Self {
        self.tool_limit = limit.min(MAX_TOOLS);
        self
    }

    /// The most MCP tools offered.
    #[must_use]
    pub fn tool_limit(&self) -> usize {
        self.tool_limit
    }

    /// The selected server names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(|(name, _)| name.as_str())
    }

    /// The narrowing of a server, or `None` when it offers its whole catalog or is not
    /// selected.
    #[must_use]
    pub fn narrowing(&self, server: &str) -> Option<&[String]> {
        self.servers
            .iter()
            .find(|(name, _)| name == server)
            .and_then(|(_, tools)| tools.as_deref())
    }

    fn with(mut self, name: String, tools: Option<Vec<String>>) -> Self {
        match self.servers.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = tools,
            None => self.servers.push((name, tools)),
        }
        self
    }
}

/// Options for a [`Host`] beyond the server configuration.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    child_env: Vec<(String, String)>,
    host_secrets: Vec<Secret>,
    secrets: Secrets,
}

impl HostOptions {
    /// Options with no standard environment (local servers get only [`FALLBACK_PATH`] and
    /// their `:env`) and no host secrets.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the small standard environment of local servers from a lookup, typically a
    /// closure over the process environment in the binary: only [`STANDARD_ENV_NAMES`] are
    /// asked for. The library itself never reads the process environment.
    #[must_use]
    pub fn with_standard_env(mut self, lookup: impl Fn(&str) -> Option<String>) -> Self {
        self.child_env = STANDARD_ENV_NAMES
            .iter()
            .filter_map(|name| lookup(name).map(|value| ((*name).to_owned(), value)))
            .collect();
        self
    }

    /// Adds credentials of the host (provider keys and the like) to redact from results,
    /// on top of every server's header and env values.
    #[must_use]
    pub fn with_host_secrets<'a>(mut self, secrets: impl IntoIterator<Item = &'a Secret>) -> Self {
        self.host_secrets.extend(secrets.into_iter().cloned());
        self
    }

    /// Starts from an already built set, normally the one the binary builds once from the
    /// whole configuration, so that every crate redacts exactly the same values. The servers'
    /// own credentials and any host secrets are added on top; those already in the set cost
    /// nothing more.
    #[must_use]
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }
}

/// Opens sessions to configured servers. Cheap to share; performs no I/O until
/// [`Host::open`].
#[derive(Debug)]
pub struct Host {
    servers: ServerSet,
    child_env: Vec<(String, String)>,
    secrets: Secrets,
    http: Mutex<Option<reqwest::Client>>,
}

impl Host {
    /// A host for these servers.
    ///
    /// # Errors
    ///
    /// [`Error::Redaction`] if the credentials cannot be compiled into a redaction set.
    pub fn new(servers: ServerSet, options: HostOptions) -> Result<Self> {
        // Credentials are added as credentials, so the bare token of a header such as
        // "Bearer TOKEN" is hidden too (the redaction crate decides which parts count).
        let credentials = servers.servers().iter().flat_map(|s| s.credentials());
        let secrets = options
            .secrets
            .with_extra(options.host_secrets.iter().chain(credentials))
            .map_err(Error::Redaction)?;
        Ok(Self {
            servers,
            child_env: options.child_env,
            secrets,
            http: Mutex::new(None),
        })
    }

    /// The configured servers.
    #[must_use]
    pub fn servers(&self) -> &ServerSet {
        &self.servers
    }

    /// Every credential this host redacts from results.
    #[must_use]
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Opens the named servers, each with its whole (allowlisted) catalog; see
    /// [`Host::open_selection`].
    ///
    /// # Errors
    ///
    /// As for [`Host::open_selection`].
    pub async fn open(&self, names: &[&str]) -> Result<Session> {
        self.open_selection(&ServerSelection::of(names)).await
    }

    /// Opens the selected servers concurrently, initializes them and discovers their tools:
    /// names are checked against the MCP naming rule, each server's `:tools` allowlist and
    /// then the selection's narrowing apply, and only then the tool limit, so a narrowed
    /// tool is offered wherever it sits in the listing. The catalog lists servers in
    /// configuration order and reports every listed tool it does not offer in
    /// [`ServerCatalog::dropped`]. Each step is bounded by `:timeout-ms`. If any server fails, the
    /// others are closed before the error is returned.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownServer`] for a name that is not configured; [`Error::Unavailable`]
    /// when a server cannot be started, reached, initialized or listed in time;
    /// [`Error::MissingTool`] when an allowlisted or narrowed tool is not listed (or a
    /// narrowed one is outside the server's `:tools`); [`Error::RefusedTool`] when one is
    /// listed but cannot be offered (a repeated name or a function-name collision);
    /// [`Error::NoCryptoProvider`] for a remote server without a rustls provider.
    pub async fn open_selection(&self, selection: &ServerSelection) -> Result<Session> {
        if let Some(unknown) = selection.names().find(|n| self.servers.get(n).is_none()) {
            return Err(Error::UnknownServer {
                server: one_line(unknown).chars().take(200).collect(),
            });
        }
        // Configuration order, whatever the order of the selection, so the catalog order is
        // stable.
        let selected: Vec<&Server> = self
            .servers
            .servers()
            .iter()
            .filter(|s| selection.names().any(|n| n == s.name()))
            .collect();
        let opened = futures_util::future::join_all(
            selected
                .iter()
                .map(|s| self.open_one(s, selection.narrowing(s.name()))),
        )
        .await;
        let mut connections = Vec::new();
        let mut tools = Vec::new();
        let mut dropped = Vec::new();
        let mut instructions = Vec::new();
        let mut failure = None;
        for result in opened {
            match result {
                Ok(discovered) => {
                    connections.push(discovered.connection);
                    tools.extend(discovered.tools);
                    dropped.extend(discovered.dropped);
                    instructions.push(discovered.instructions);
                }
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        let catalog = ServerCatalog::build(tools, instructions, dropped, selection.tool_limit());
        if failure.is_none() {
            failure = refused_wanted_tool(&catalog, &selected, selection);
        }
        let session = Session {
            connections,
            catalog,
            secrets: self.secrets.clone(),
            timeout: self.servers.timeout(),
        };
        match failure {
            Some(error) => {
                session.close().await;
                Err(error)
            }
            None => Ok(session),
        }
    }

    /// Opens every configured server; see [`Host::open_selection`].
    ///
    /// # Errors
    ///
    /// As for [`Host::open_selection`].
    pub async fn open_all(&self) -> Result<Session> {
        let names: Vec<&str> = self.servers.servers().iter().map(Server::name).collect();
        self.open(&names).await
    }

    /// Opens the named servers, runs `work` with the session, and closes the session
    /// however `work` ends; see [`Host::scoped_selection`].
    ///
    /// # Errors
    ///
    /// As for [`Host::open_selection`]; `work`'s own result is returned inside `Ok`.
    pub async fn scoped<T>(
        &self,
        names: &[&str],
        work: impl AsyncFnOnce(&Session) -> T,
    ) -> Result<T> {
        self.scoped_selection(&ServerSelection::of(names), work)
            .await
    }

    /// Opens the selected servers, runs `work` with the session, and closes the session
    /// however `work` ends, including by panicking: the child processes are reaped and remote
    /// sessions ended before the panic continues. Prefer it to [`Host::open_selection`]
    /// whenever the session's use fits in one async block, because dropping an unclosed
    /// [`Session`] kills local servers but cannot end remote sessions.
    ///
    /// # Errors
    ///
    /// As for [`Host::open_selection`]; `work`'s own result is returned inside `Ok`.
    pub async fn scoped_selection<T>(
        &self,
        selection: &ServerSelection,
        work: impl AsyncFnOnce(&Session) -> T,
    ) -> Result<T> {
        use futures_util::FutureExt as _;
        let session = self.open_selection(selection).await?;
        // The session is closed right after, so nothing observes state a panic left behind.
        let outcome = std::panic::AssertUnwindSafe(work(&session))
            .catch_unwind()
            .await;
        session.close().await;
        match outcome {
            Ok(value) => Ok(value),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    async fn open_one(&self, server: &Server, narrowing: Option<&[String]>) -> Result<Discovered> {
        let timeout = self.servers.timeout();
        let name = server.name();
        let connection = match server.transport() {
            Transport::Stdio { command, args, env } => {
                self.connect_stdio(name, command, args, env, timeout)
                    .await?
            }
            Transport::Http { url, headers } => {
                self.connect_http(name, url, headers, timeout).await?
            }
        };
        match discover(&connection, server, narrowing, &self.secrets, timeout).await {
            Ok((tools, dropped, instructions)) => Ok(Discovered {
                connection,
                tools,
                dropped,
                instructions,
            }),
            Err(error) => {
                connection.close(timeout).await;
                Err(error)
            }
        }
    }

    async fn connect_stdio(
        &self,
        name: &str,
        command: &str,
        args: &[String],
        env: &[(String, Secret)],
        timeout: Duration,
    ) -> Result<Connection> {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args).env_clear().kill_on_drop(true);
        if !self.child_env.iter().any(|(k, _)| k == "PATH") {
            cmd.env("PATH", FALLBACK_PATH);
        }
        cmd.envs(self.child_env.iter().map(|(k, v)| (k, v)));
        cmd.envs(env.iter().map(|(k, v)| (k, v.expose())));
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // The server leads its own process group, so closing or dropping the session also
        // ends what it started (an `npx` wrapper's node process, for example).
        let mut wrapped = CommandWrap::from(cmd);
        wrapped.wrap(ProcessGroup::leader());
        let mut child = ChildGuard::new(
            wrapped
                .spawn()
                .map_err(|_| Error::unavailable(name, "the command could not be started"))?,
        );
        let pid = child.inner.id();
        let stderr = child.inner.stderr().take().map(StderrDrain::start);
        let (Some(stdout), Some(stdin)) = (child.inner.stdout().take(), child.inner.stdin().take())
        else {
            return Err(Error::unavailable(
                name,
                "the command's stdio is unavailable",
            ));
        };
        let transport = ExactReplies::new(
            AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(MAX_MESSAGE_BYTES),
        );
        let service = match tokio::time::timeout(timeout, client_info().serve(transport)).await {
            Ok(Ok(service)) => service,
            failed => {
                // Kill and reap the child before reporting; its output is never shown.
                let _ = Box::into_pin(child.inner.kill()).await;
                child.reaped = true;
                let reason = if failed.is_err() {
                    "initialize timed out"
                } else {
                    "initialize failed"
                };
                return Err(Error::unavailable(name, reason));
            }
        };
        Ok(Connection {
            server: name.to_owned(),
            service,
            child: Some(child),
            stderr,
            pid,
        })
    }

    async fn connect_http(
        &self,
        name: &str,
        url: &str,
        headers: &[(String, Secret)],
        timeout: Duration,
    ) -> Result<Connection> {
        let client = self.http_client(timeout)?;
        let mut custom = HashMap::new();
        for (key, value) in headers {
            let key = http::HeaderName::from_bytes(key.as_bytes())
                .map_err(|_| Error::unavailable(name, "a header name is invalid"))?;
            let mut value = http::HeaderValue::from_str(value.expose())
                .map_err(|_| Error::unavailable(name, "a header value is invalid"))?;
            value.set_sensitive(true);
            custom.insert(key, value);
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(custom)
            .reinit_on_expired_session(false)
            .max_json_response_size(MAX_MESSAGE_BYTES)
            .max_sse_event_size(MAX_MESSAGE_BYTES)
            .control_request_timeout(timeout)
            .session_recovery_timeout(timeout);
        config.retry_config =
            Arc::new(rmcp::transport::common::client_side_sse::NeverRetry::default());
        let transport =
            ExactReplies::new(StreamableHttpClientTransport::with_client(client, config));
        let service = tokio::time::timeout(timeout, client_info().serve(transport))
            .await
            .map_err(|_| Error::unavailable(name, "initialize timed out"))?
            .map_err(|_| Error::unavailable(name, "initialize failed"))?;
        Ok(Connection {
            server: name.to_owned(),
            service,
            child: None,
            stderr: None,
            pid: None,
        })
    }

    fn http_client(&self, timeout: Duration) -> Result<reqwest::Client> {
        let mut cached = self
            .http
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = cached.as_ref() {
            return Ok(client.clone());
        }
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            return Err(Error::NoCryptoProvider);
        }
        // No redirects, no retries (reqwest's default policy would resend a request after an
        // HTTP/2 GOAWAY or REFUSED_STREAM), and no proxy from the process environment
        // (HTTP_PROXY and friends): a library reads no environment, and a remote server's
        // credentials must not travel through a proxy the operator did not configure.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .no_proxy()
            .connect_timeout(timeout)
            .tcp_nodelay(true)
            .build()
            .map_err(|_| Error::NoCryptoProvider)?;
        *cached = Some(client.clone());
        Ok(client)
    }
}

/// Connections to the servers selected for one request, and their catalog.
///
/// Close it with [`Session::close`]. If it is dropped instead (an error or a panic in the
/// caller), local servers are still killed (`kill_on_drop`) and the protocol tasks cancelled,
/// but a remote session may not get its closing `DELETE`.
#[derive(Debug)]
pub struct Session {
    connections: Vec<Connection>,
    catalog: ServerCatalog,
    secrets: Secrets,
    timeout: Duration,
}

impl Session {
    /// The tools offered to this request.
    #[must_use]
    pub fn catalog(&self) -> &ServerCatalog {
        &self.catalog
    }

    /// The bound on each operation.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Process IDs of the local servers, for diagnostics.
    #[must_use]
    pub fn process_ids(&self) -> Vec<u32> {
        self.connections.iter().filter_map(|c| c.pid).collect()
    }

    /// How many stderr bytes a local server has written so far. The bytes themselves are
    /// never shown to users or models.
    #[must_use]
    pub fn stderr_bytes(&self, server: &str) -> Option<usize> {
        let connection = self.connections.iter().find(|c| c.server == server)?;
        connection
            .stderr
            .as_ref()
            .map(|s| s.total.load(Ordering::Relaxed))
    }

    /// Calls a tool of this session's catalog once, never retrying. `arguments` is a JSON
    /// object of at most [`MAX_ARGUMENT_CHARS`] characters (blank means `{}`).
    ///
    /// # Errors
    ///
    /// Only when nothing was sent: [`Error::InvalidArguments`] or [`Error::UnknownTool`].
    /// Once the request is sent, every failure is a [`CallOutcome::Unknown`].
    pub async fn call(&self, id: &ToolId, arguments: &str) -> Result<CallOutcome> {
        if arguments.chars().nth(MAX_ARGUMENT_CHARS).is_some() {
            return Err(Error::InvalidArguments {
                reason: "exceed 16384 characters",
            });
        }
        let arguments = if arguments.trim().is_empty() {
            serde_json::Map::new()
        } else {
            match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(Error::InvalidArguments {
                        reason: "must be a JSON object",
                    });
                }
            }
        };
        Ok(match self.call_for_host(id, arguments).await? {
            HostReply::Result(value) => ToolOutput::from_result(&value, &self.secrets).map_or(
                CallOutcome::Unknown(UnknownReason::MalformedReply),
                |(output, is_error)| {
                    if is_error {
                        CallOutcome::ToolError(output)
                    } else {
                        CallOutcome::Success(output)
                    }
                },
            ),
            HostReply::Rejected { code, message } => {
                CallOutcome::ToolError(ToolOutput::from_rejection(code, &message, &self.secrets))
            }
            HostReply::Unknown(reason) => CallOutcome::Unknown(reason),
        })
    }

    /// Calls a tool of this session's catalog once for the host itself, never retrying, and
    /// returns the server's result as it came: the `CallToolResult` object, unredacted and
    /// unshortened (bounded only by [`MAX_MESSAGE_BYTES`]), for a host that must read exact
    /// bytes (a file it will compare or change). Nothing of it may reach a model or a chat
    /// before the host has checked it. [`Session::call`] sends through it too: one
    /// `tools/call`, answered within the timeout.
    ///
    /// # Errors
    ///
    /// Only when nothing was sent: [`Error::UnknownTool`].
    pub async fn call_for_host(
        &self,
        id: &ToolId,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<HostReply> {
        let unknown = || Error::UnknownTool {
            id: self
                .secrets
                .redact_text(&one_line(&id.to_string()))
                .chars()
                .take(200)
                .collect(),
        };
        if self.catalog.get(id).is_none() {
            return Err(unknown());
        }
        let connection = self
            .connections
            .iter()
            .find(|c| c.server == id.source())
            .ok_or_else(unknown)?;
        let params = CallToolRequestParams::new(id.name().to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let peer = connection.service.peer();
        let Ok(handle) = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        else {
            return Ok(HostReply::Unknown(UnknownReason::Disconnected));
        };
        // If the caller drops this future while it waits, the guard still queues a
        // cancellation (best effort: it cannot wait for the send).
        let mut guard = CancelOnDrop {
            peer,
            id: Some(handle.id.clone()),
        };
        let waited = tokio::time::timeout(self.timeout, handle.await_response()).await;
        let request_id = guard.id.take();
        let Ok(reply) = waited else {
            // The MCP cancellation rule: tell the server, by the call's request ID, that the
            // result will not be used. The outcome stays unknown either way, so the send is
            // bounded and its failure ignored.
            if let Some(id) = request_id {
                let _ = tokio::time::timeout(
                    self.timeout.min(CLOSE_GRACE),
                    peer.send_notification(cancellation(id)),
                )
                .await;
            }
            return Ok(HostReply::Unknown(UnknownReason::Timeout));
        };
        Ok(match reply {
            Err(ServiceError::Timeout { .. }) => HostReply::Unknown(UnknownReason::Timeout),
            Err(ServiceError::McpError(error)) => HostReply::Rejected {
                code: error.code.0,
                message: error.message.to_string(),
            },
            Err(ServiceError::UnexpectedResponse) => {
                HostReply::Unknown(UnknownReason::MalformedReply)
            }
            Err(_) => HostReply::Unknown(UnknownReason::Disconnected),
            Ok(ServerResult::CallToolResult(result)) => serde_json::to_value(&result).map_or(
                HostReply::Unknown(UnknownReason::MalformedReply),
                HostReply::Result,
            ),
            // A result `rmcp`'s types refuse, such as an embedded resource with neither
            // `text` nor `blob` (how the Go SDK sends an empty file, omitting the empty
            // text), arrives untyped; a result object with a content list is still one.
            Ok(ServerResult::CustomResult(custom))
                if custom.0.get("content").is_some_and(Value::is_array) =>
            {
                HostReply::Result(custom.0)
            }
            Ok(_) => HostReply::Unknown(UnknownReason::MalformedReply),
        })
    }

    /// Closes every connection concurrently: local servers get their stdin closed and are
    /// waited for (then signalled and killed if they linger), remote sessions are ended.
    /// Each close is bounded by the timeout.
    pub async fn close(self) {
        let timeout = self.timeout;
        futures_util::future::join_all(self.connections.into_iter().map(|c| c.close(timeout)))
            .await;
    }
}

/// `notifications/cancelled` for a request, with [`CANCEL_REASON`].
fn cancellation(id: RequestId) -> ClientNotification {
    ClientNotification::CancelledNotification(CancelledNotification::new(
        CancelledNotificationParam::new(Some(id), Some(CANCEL_REASON.to_owned())),
    ))
}

/// Queues a cancellation for a call whose future is dropped while it waits for the reply.
struct CancelOnDrop<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        use futures_util::FutureExt as _;
        if let Some(id) = self.id.take() {
            // The first poll puts the notification in the service's queue; the rest of the
            // future only waits for the send's result, which nobody is left to read.
            let _ = self.peer.send_notification(cancellation(id)).now_or_never();
        }
    }
}

#[derive(Debug)]
struct Connection {
    server: String,
    service: RunningService<RoleClient, ClientConfig>,
    child: Option<ChildGuard>,
    stderr: Option<StderrDrain>,
    pid: Option<u32>,
}

impl Connection {
    async fn close(mut self, timeout: Duration) {
        // Closing the service closes the transport: a local server's stdin is closed, a
        // remote session is deleted.
        let _ = self.service.close_with_timeout(timeout).await;
        if let Some(mut child) = self.child.take() {
            // A server that does not exit on end of input is killed, and always reaped.
            let grace = timeout.min(CLOSE_GRACE);
            let exited = matches!(
                tokio::time::timeout(grace, child.inner.wait()).await,
                Ok(Ok(_))
            );
            // Whatever the server started in its group ends with it.
            let _ = child.inner.start_kill();
            if !exited {
                let _ = Box::into_pin(child.inner.kill()).await;
            }
            child.reaped = true;
        }
        if let Some(mut stderr) = self.stderr.take() {
            stderr.task.abort();
            let _ = (&mut stderr.task).await;
        }
    }
}

/// A local server's process group. Dropping it without [`Connection::close`] kills the
/// whole group; the leader is then reaped by tokio (`kill_on_drop`).
struct ChildGuard {
    inner: Box<dyn ChildWrapper>,
    reaped: bool,
}

impl ChildGuard {
    fn new(inner: Box<dyn ChildWrapper>) -> Self {
        Self {
            inner,
            reaped: false,
        }
    }
}

impl std::fmt::Debug for ChildGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildGuard")
            .field("pid", &self.inner.id())
            .field("reaped", &self.reaped)
            .finish()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.inner.start_kill();
        }
    }
}

/// Reads a local server's stderr so the child never blocks on a full pipe, keeping only a
/// bounded tail that is never shown to anyone.
#[derive(Debug)]
struct StderrDrain {
    task: JoinHandle<()>,
    total: Arc<AtomicUsize>,
}

impl StderrDrain {
    fn start(mut stderr: tokio::process::ChildStderr) -> Self {
        let total = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&total);
        let task = tokio::spawn(async move {
            let mut tail: Vec<u8> = Vec::with_capacity(STDERR_TAIL_BYTES);
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buffer).await {
                counter.fetch_add(n, Ordering::Relaxed);
                tail.extend_from_slice(buffer.get(..n).unwrap_or_default());
                let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                tail.drain(..excess);
            }
        });
        Self { task, total }
    }
}

impl Drop for StderrDrain {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn client_info() -> ClientConfig {
    // No roots, sampling or elicitation: the host advertises no client capabilities.
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("yetibot-mcp-host", env!("CARGO_PKG_VERSION")),
    )
}

/// One opened server: its connection, the tools it offers, the listed tools it does not, and
/// its instructions.
struct Discovered {
    connection: Connection,
    tools: Vec<ToolInfo>,
    dropped: Vec<DroppedTool>,
    instructions: ServerInstructions,
}

async fn discover(
    connection: &Connection,
    server: &Server,
    narrowing: Option<&[String]>,
    secrets: &Secrets,
    timeout: Duration,
) -> Result<(Vec<ToolInfo>, Vec<DroppedTool>, ServerInstructions)> {
    let name = server.name();
    let peer = connection.service.peer();
    let instructions = peer.peer_info().and_then(|info| info.instructions.clone());
    let instructions = ServerInstructions::new(name, instructions.as_deref(), secrets);
    let mut listed = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = tokio::time::timeout(timeout, peer.list_tools(params))
            .await
            .map_err(|_| Error::unavailable(name, "tools/list timed out"))?
            .map_err(|_| Error::unavailable(name, "tools/list failed"))?;
        for tool in &page.tools {
            let value = serde_json::to_value(tool)
                .map_err(|_| Error::unavailable(name, "tools/list returned an invalid tool"))?;
            listed.push(value);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if cursor.is_some() {
        return Err(Error::unavailable(name, "tools/list has too many pages"));
    }
    let mut tools = Vec::new();
    let mut dropped = Vec::new();
    for tool in &listed {
        match ToolInfo::from_listed(name, tool, secrets) {
            Ok(tool) => tools.push(tool),
            Err(rejected) => dropped.push(rejected),
        }
    }
    if let Some(wanted) = wanted_tools(server, narrowing)? {
        let mut copies: HashMap<&str, usize> = HashMap::new();
        for tool in &tools {
            *copies.entry(tool.id().name()).or_default() += 1;
        }
        for tool in &wanted {
            match copies.get(tool.as_str()) {
                None => return Err(missing_tool(name, tool)),
                Some(1) => {}
                Some(_) => return Err(refused_tool(name, tool, DropReason::RepeatedName)),
            }
        }
        tools.retain(|t| wanted.iter().any(|w| w == t.id().name()));
    }
    Ok((tools, dropped, instructions))
}

/// The tools a request asks of a server: its `:tools` allowlist, narrowed by the caller;
/// `None` for its whole catalog.
///
/// # Errors
///
/// [`Error::MissingTool`] when the narrowing names a tool the allowlist excludes.
fn wanted_tools(server: &Server, narrowing: Option<&[String]>) -> Result<Option<Vec<String>>> {
    Ok(match (server.tools(), narrowing) {
        (None, None) => None,
        (Some(allowed), None) => Some(allowed.to_vec()),
        (None, Some(narrowed)) => Some(narrowed.to_vec()),
        (Some(allowed), Some(narrowed)) => {
            if let Some(outside) = narrowed.iter().find(|t| !allowed.contains(t)) {
                return Err(missing_tool(server.name(), outside));
            }
            Some(narrowed.to_vec())
        }
    })
}

/// The first allowlisted or narrowed tool that the catalog dropped for a reason other than
/// the tool limit, as an error: the request fails rather than silently going without it.
fn refused_wanted_tool(
    catalog: &ServerCatalog,
    selected: &[&Server],
    selection: &ServerSelection,
) -> Option<Error> {
    catalog.dropped().iter().find_map(|dropped| {
        if dropped.reason() == DropReason::OverLimit {
            return None;
        }
        let server = selected.iter().find(|s| s.name() == dropped.server())?;
        let wanted = wanted_tools(server, selection.narrowing(server.name()))
            .ok()
            .flatten()?;
        wanted
            .iter()
            .any(|w| w == dropped.name())
            .then(|| refused_tool(dropped.server(), dropped.name(), dropped.reason()))
    })
}

fn missing_tool(server: &str, tool: &str) -> Error {
    Error::MissingTool {
        server: server.to_owned(),
        tool: shown_configured_name(tool),
    }
}

fn refused_tool(server: &str, tool: &str, reason: DropReason) -> Error {
    Error::RefusedTool {
        server: server.to_owned(),
        tool: shown_configured_name(tool),
        reason: reason.as_str(),
    }
}

/// A tool name from configuration or the caller, safe to put in an error message.
fn shown_configured_name(tool: &str) -> String {
    if is_valid_tool_name(tool) {
        tool.to_owned()
    } else {
        shown_name(tool)
    }
}
