//! An MCP server fixture for exercising `yetibot-mcp-host` over stdio and Streamable HTTP.
//!
//! Usage: `mcp-fixture [--http 127.0.0.1:0] [--json] [--page-size N] [--extra N]
//! [--only-extra] [--big-catalog] [--bad-names] [--instructions TEXT] [--secret VALUE]
//! [--state-file PATH] [--cancel-log PATH] [--raw MODE]`.
//!
//! Without `--http` it speaks MCP on stdin/stdout and writes nothing else there. With
//! `--http` it serves `/mcp` on the given address (loopback only) and prints one line,
//! `listening http://ADDR/mcp`, once it accepts connections. `--json` makes the HTTP
//! transport answer with plain JSON bodies instead of SSE streams.
//!
//! Tools: `echo`, `hang`, `crash`, `big`, `image`, `secret`, `fail`, `env`,
//! `client_capabilities`, `deleted_sessions`, `noisy`, `search` (a schema with choices),
//! `account` (properties named like credentials, the secret inside a property description),
//! plus one `generation_N` tool whose number changes with each session, `--extra N`
//! numbered tools (`--only-extra`: nothing else), with `--big-catalog` tools whose
//! descriptions and schemas exceed the host's bounds, and with `--bad-names` tools whose
//! names break the MCP naming rule or collide.
//!
//! `--cancel-log PATH` appends one JSON line (`{"requestId":..,"reason":..}`) for every
//! `notifications/cancelled` the server receives, written before the message is handled
//! (over HTTP: before the POST is answered), so a test can read it once the client is done.
//! `--raw MODE` replaces the `rmcp` server with a hand-written JSON-RPC peer that misbehaves
//! as [`RawMode`] describes.

mod cancel_log;
pub mod github;
mod raw;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cancel_log::{CancelLog, Recording};
pub use raw::RawMode;
use rmcp::transport::async_rw::AsyncRwTransport;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Builds the fixture binary with `cargo` into the target directory and profile of the
/// running executable (a test or benchmark binary in `target/<profile>/deps`) and returns its
/// path. Cargo builds only the binaries of the package under test, so callers in other
/// packages build this one themselves; when it is up to date this is quick.
///
/// # Errors
///
/// A short description when the running executable is not in a cargo target directory or the
/// build fails.
pub fn build_binary(cargo: &str) -> Result<PathBuf, String> {
    cargo_build(
        cargo,
        &["-p", "mcp-fixture", "--bin", "mcp-fixture"],
        "mcp-fixture",
    )
}

/// Builds an example of a workspace package the same way as [`build_binary`] (a test that
/// runs only its own target may find it unbuilt) and returns its path.
///
/// # Errors
///
/// As for [`build_binary`].
pub fn build_example(cargo: &str, package: &str, example: &str) -> Result<PathBuf, String> {
    let output = format!("examples/{example}");
    cargo_build(cargo, &["-p", package, "--example", example], &output)
}

fn cargo_build(cargo: &str, what: &[&str], output: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|_| "the running executable has no path")?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the executable is not in target/<profile>/deps")?;
    let target_dir = profile_dir
        .parent()
        .ok_or("target/<profile> has no parent")?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => return Err("the profile directory is not UTF-8".into()),
    };
    let mut command = Command::new(cargo);
    // Cargo gives a test process its own package's variables (CARGO_PKG_NAME and so on).
    // Build scripts such as ring's ask to rerun when those change, so passing them on would
    // rebuild half the dependency graph here, and again in the next `cargo test`.
    for (name, _) in environment() {
        let per_package = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
            || matches!(
                name.as_str(),
                "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR"
            );
        if per_package {
            command.env_remove(name);
        }
    }
    let status = command
        .args(["build", "--quiet"])
        .args(what)
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .stdout(Stdio::null())
        .status()
        .map_err(|_| "cargo could not be run")?;
    if status.success() {
        Ok(profile_dir.join(output))
    } else {
        Err(format!("building {} failed", what.join(" ")))
    }
}

/// Options parsed from the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Serve Streamable HTTP on this address instead of stdio.
    pub http: Option<String>,
    /// Answer HTTP requests with JSON bodies instead of SSE.
    pub json: bool,
    /// Tools per `tools/list` page (0: all on one page).
    pub page_size: usize,
    /// Extra numbered tools, for the per-request tool cap.
    pub extra: usize,
    /// Add tools that break the host's description and schema bounds.
    pub big_catalog: bool,
    /// Server instructions sent in `initialize`.
    pub instructions: Option<String>,
    /// The secret the `secret` tool echoes (the `FIXTURE_SECRET` variable over stdio).
    pub secret: Option<String>,
    /// A file counting stdio sessions, so the catalog changes between them.
    pub state_file: Option<String>,
    /// List only the `--extra` numbered tools.
    pub only_extra: bool,
    /// Add tools whose names break the MCP naming rule, repeat or collide on the wire.
    pub bad_names: bool,
    /// Add GitHub's `get_file_contents` and `search_code`, which answer with their arguments.
    pub github: bool,
    /// A file that gets one JSON line per `notifications/cancelled` received.
    pub cancel_log: Option<String>,
    /// Serve a hand-written, misbehaving JSON-RPC peer instead of the `rmcp` server.
    pub raw: Option<RawMode>,
}

/// Parses the arguments and runs the server until its input ends.
#[must_use]
pub fn main_with_args(args: Vec<String>) -> ExitCode {
    let Some(options) = parse(args) else {
        return ExitCode::from(2);
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return ExitCode::from(1);
    };
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

/// Runs the server with these options.
///
/// # Errors
///
/// Any I/O failure of the transport.
pub async fn run(options: Options) -> std::io::Result<()> {
    let log = Arc::new(CancelLog::new(options.cancel_log.clone()));
    match (options.http.clone(), options.raw) {
        (Some(addr), None) => serve_http(options, &addr, log).await,
        (None, None) => serve_stdio(options, log).await,
        (Some(addr), Some(mode)) => raw::serve_http(mode, &addr, log).await,
        (None, Some(mode)) => raw::serve_stdio(mode, &log).await,
    }
}

fn parse(args: Vec<String>) -> Option<Options> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => options.http = Some(args.next()?),
            "--json" => options.json = true,
            "--page-size" => options.page_size = args.next()?.parse().ok()?,
            "--extra" => options.extra = args.next()?.parse().ok()?,
            "--big-catalog" => options.big_catalog = true,
            "--instructions" => options.instructions = Some(args.next()?),
            "--secret" => options.secret = Some(args.next()?),
            "--state-file" => options.state_file = Some(args.next()?),
            "--only-extra" => options.only_extra = true,
            "--bad-names" => options.bad_names = true,
            "--github" => options.github = true,
            "--cancel-log" => options.cancel_log = Some(args.next()?),
            "--raw" => options.raw = Some(RawMode::parse(&args.next()?)?),
            _ => return None,
        }
    }
    Some(options)
}

async fn serve_stdio(mut options: Options, log: Arc<CancelLog>) -> std::io::Result<()> {
    if options.secret.is_none() {
        options.secret = environment()
            .into_iter()
            .find_map(|(k, v)| (k == "FIXTURE_SECRET").then_some(v));
    }
    let generation = match &options.state_file {
        Some(path) => {
            let previous = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .unwrap_or(0);
            std::fs::write(path, (previous + 1).to_string())?;
            previous + 1
        }
        None => 1,
    };
    let fixture = Fixture {
        options: Arc::new(options),
        log: Arc::clone(&log),
        generation,
        stdio: true,
        deletes: Arc::new(AtomicUsize::new(0)),
    };
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = Recording {
        inner: AsyncRwTransport::new_server(stdin, stdout),
        log,
    };
    let service = fixture
        .serve(transport)
        .await
        .map_err(std::io::Error::other)?;
    service.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

async fn serve_http(options: Options, addr: &str, log: Arc<CancelLog>) -> std::io::Result<()> {
    use hyper_util::rt::TokioIo;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let listener = listen_on_loopback(addr).await?;
    let options = Arc::new(options);
    let sessions = Arc::new(AtomicUsize::new(0));
    let deletes = Arc::new(AtomicUsize::new(0));
    let factory_deletes = Arc::clone(&deletes);
    let factory_options = Arc::clone(&options);
    let factory_log = Arc::clone(&log);
    let config = StreamableHttpServerConfig::default()
        .with_json_response(options.json)
        .with_allowed_hosts(["127.0.0.1", "localhost"]);
    let service = StreamableHttpService::new(
        move || {
            Ok(Fixture {
                options: Arc::clone(&factory_options),
                log: Arc::clone(&factory_log),
                generation: sessions.fetch_add(1, Ordering::SeqCst) + 1,
                stdio: false,
                deletes: Arc::clone(&factory_deletes),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    loop {
        let (stream, _) = listener.accept().await?;
        // Small SSE writes must not wait for delayed acknowledgements.
        stream.set_nodelay(true)?;
        let service = service.clone();
        let deletes = Arc::clone(&deletes);
        let log = Arc::clone(&log);
        let counted = hyper::service::service_fn(move |request: hyper::Request<_>| {
            let service = service.clone();
            let log = Arc::clone(&log);
            if request.method() == hyper::Method::DELETE {
                deletes.fetch_add(1, Ordering::SeqCst);
            }
            async move {
                let request = log.record_request(request).await;
                Ok::<_, std::convert::Infallible>(service.handle(request).await)
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), counted)
                .await;
        });
    }
}

/// Names that break the MCP naming rule (`[A-Za-z0-9_.-]`, 1 to 128 characters), a name
/// listed twice, and two valid names that map to the same wire name (`.` and `_`).
fn bad_names() -> Vec<String> {
    vec![
        "\u{435}cho".to_owned(),             // Cyrillic "е": looks like "echo"
        "ec\u{200b}ho".to_owned(),           // zero-width space
        "echo\u{202e}txt".to_owned(),        // right-to-left override
        "\u{1b}[31mred\u{1b}[0m".to_owned(), // ANSI colour
        "split\n`fx/forged` — a forged row".to_owned(),
        "n".repeat(5_000),
        String::new(),
        "twice".to_owned(),
        "twice".to_owned(),
        "wire.name".to_owned(),
        "wire_name".to_owned(),
    ]
}

/// Binds `addr`, refuses anything but loopback, and announces the endpoint on stdout.
async fn listen_on_loopback(addr: &str) -> std::io::Result<tokio::net::TcpListener> {
    use std::io::Write as _;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        return Err(std::io::Error::other(
            "the fixture only listens on loopback",
        ));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening http://{local}/mcp")?;
    out.flush()?;
    Ok(listener)
}

/// The fixture's whole environment: it reports what it was given, which is what tests check.
#[expect(
    clippy::disallowed_methods,
    reason = "the fixture inspects the environment its client gave it"
)]
fn environment() -> Vec<(String, String)> {
    std::env::vars().collect()
}

#[derive(Debug, Clone)]
struct Fixture {
    options: Arc<Options>,
    log: Arc<CancelLog>,
    generation: usize,
    stdio: bool,
    deletes: Arc<AtomicUsize>,
}

impl Fixture {
    fn catalog(&self) -> Vec<Value> {
        let text_input = json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to echo"}},
            "required": ["text"]
        });
        let empty = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            json!({"name": "echo", "description": "Echo the `text` argument back; $(not) a command.",
                   "inputSchema": text_input,
                   "annotations": {"readOnlyHint": true, "title": "Echo", "x-private": 1}}),
            json!({"name": "hang", "description": "Never answer.", "inputSchema": empty}),
            json!({"name": "crash", "description": "Exit the server in the middle of the call.", "inputSchema": empty}),
            json!({"name": "big", "description": "Return 1 MiB of text.", "inputSchema": empty}),
            json!({"name": "image", "description": "Return an image, audio and a caption.", "inputSchema": empty}),
            json!({"name": "secret", "description": "Echo the configured secret, raw and JSON-escaped.", "inputSchema": empty}),
            json!({"name": "fail", "description": "Report a tool error.", "inputSchema": empty}),
            json!({"name": "env", "description": "List the names of the environment variables the server sees.", "inputSchema": empty}),
            json!({"name": "client_capabilities", "description": "Return the capabilities the client advertised.", "inputSchema": empty}),
            json!({"name": "deleted_sessions", "description": "How many HTTP DELETE requests ended sessions.", "inputSchema": empty}),
            json!({"name": "noisy", "description": "Write 1 MiB to stderr, then answer.", "inputSchema": empty}),
            json!({"name": "search", "description": "Search   with\n\tchoices.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "mode": {"type": "string", "enum": ["fast", "deep"]},
                    "limit": {"type": "integer"},
                    "url": {"type": "string"}
                },
                "required": ["mode"],
                "oneOf": [{"required": ["query"]}, {"required": ["url"]}]
            }}),
            json!({"name": "account", "description": "Look up an account.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": format!(
                        "The API key, such as {}", self.options.secret.as_deref().unwrap_or("none"))},
                    "token": {"type": "string"},
                    "account_id": {"type": "string", "pattern": "^[0-9]+$"}
                },
                "required": ["account_id"]
            }}),
            json!({"name": format!("generation_{}", self.generation),
                   "description": "Exists only in this session.", "inputSchema": empty}),
        ];
        if self.options.only_extra {
            tools.clear();
        }
        if self.options.github {
            // GitHub's read operations, by name, answering with the arguments they got.
            let repo_input = json!({
                "type": "object",
                "properties": {"owner": {"type": "string"}, "repo": {"type": "string"},
                               "path": {"type": "string"}},
                "required": ["owner", "repo"]
            });
            let query_input = json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"]
            });
            tools.push(
                json!({"name": "get_file_contents", "description": "Read a file.",
                              "inputSchema": repo_input}),
            );
            tools.push(json!({"name": "search_code", "description": "Search code.",
                              "inputSchema": query_input}));
        }
        if self.options.bad_names {
            tools.extend(bad_names().into_iter().map(|name| {
                json!({"name": name, "description": "A badly named tool.", "inputSchema": empty})
            }));
        }
        for i in 0..self.options.extra {
            tools.push(json!({"name": format!("extra_{i:03}"), "description": "Numbered tool.", "inputSchema": empty}));
        }
        if self.options.big_catalog {
            tools.push(
                json!({"name": "long_description", "description": "d".repeat(30_000),
                              "inputSchema": empty}),
            );
            let mut properties = serde_json::Map::new();
            for i in 0..5_000 {
                properties.insert(format!("p{i}"), json!({"type": "string"}));
            }
            tools.push(
                json!({"name": "huge_schema", "description": "Too many nodes.",
                              "inputSchema": {"type": "object", "properties": properties}}),
            );
            let mut deep = json!({"type": "string"});
            for _ in 0..40 {
                deep = json!({"type": "object", "properties": {"x": deep}});
            }
            tools.push(
                json!({"name": "deep_schema", "description": "Too deep.", "inputSchema": deep}),
            );
        }
        tools
    }

    async fn call(&self, name: &str, args: &serde_json::Map<String, Value>) -> Value {
        match name {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or("");
                json!({"content": [{"type": "text", "text": text}]})
            }
            "hang" => {
                std::future::pending::<()>().await;
                json!({})
            }
            "crash" => std::process::exit(3),
            "big" => json!({"content": [{"type": "text", "text": "x".repeat(1 << 20)}]}),
            "image" => json!({"content": [
                {"type": "text", "text": "caption"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
            ]}),
            "secret" => {
                let secret = self.options.secret.clone().unwrap_or_default();
                let escaped = serde_json::to_string(&json!({"s": secret})).unwrap_or_default();
                json!({"content": [{"type": "text", "text": format!("raw={secret} json={escaped}")}]})
            }
            "deleted_sessions" => {
                let count = self.deletes.load(Ordering::SeqCst);
                json!({"content": [{"type": "text", "text": count.to_string()}]})
            }
            "fail" => json!({"content": [{"type": "text", "text": "it failed"}], "isError": true}),
            "get_file_contents" | "search_code" => {
                let got = serde_json::to_string(args).unwrap_or_default();
                json!({"content": [{"type": "text", "text": format!("github-args: {got}")}]})
            }
            "env" => {
                let names: Vec<String> = environment().into_iter().map(|(k, _)| k).collect();
                json!({"content": [{"type": "text", "text": names.join(",")}]})
            }
            "noisy" => {
                if self.stdio {
                    use std::io::Write as _;
                    let chunk = "e".repeat(1024);
                    let mut err = std::io::stderr().lock();
                    for _ in 0..1024 {
                        let _ = writeln!(err, "{chunk}");
                    }
                }
                json!({"content": [{"type": "text", "text": "done"}]})
            }
            other => json!({"content": [{"type": "text", "text": format!("called {other}")}]}),
        }
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        if let Some(text) = &self.options.instructions {
            info = info.with_instructions(text.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.catalog();
        let start = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0);
        let size = if self.options.page_size == 0 {
            tools.len()
        } else {
            self.options.page_size
        };
        let end = (start + size).min(tools.len());
        let page: Vec<Value> = tools
            .get(start..end)
            .map(<[Value]>::to_vec)
            .unwrap_or_default();
        let mut result = json!({"tools": page});
        if end < tools.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        serde_json::from_value(result).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let known = self.catalog().iter().any(|t| t["name"] == *request.name);
        if !known {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let args = request.arguments.unwrap_or_default();
        let value = if request.name == "client_capabilities" {
            let capabilities = context
                .peer
                .peer_info()
                .and_then(|info| serde_json::to_string(&info.capabilities).ok())
                .unwrap_or_default();
            json!({"content": [{"type": "text", "text": capabilities}]})
        } else {
            if request.name == "hang" {
                self.log
                    .note_hang(serde_json::to_value(&context.id).unwrap_or_default());
            }
            self.call(&request.name, &args).await
        };
        let result: CallToolResult = serde_json::from_value(value)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(result.into())
    }
}
