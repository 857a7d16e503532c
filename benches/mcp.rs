//! Round-trip time of `echo` calls and the cost of opening a session plus `tools/list`,
//! through yetibot-mcp-host against the fixture server over stdio and Streamable HTTP.
//!
//! `cargo bench -p benches --bench mcp` prints one JSON line per transport (200 calls, 20
//! sessions); without `--bench` (as under `cargo test --benches`) it does a quick smoke run.
//! `scripts/mcp/bench.sh` runs this next to the official TypeScript and Python SDK clients.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use yetibot_mcp_host::{Host, HostOptions, ServerConfig, ServerSet, ToolId};

fn main() -> ExitCode {
    let full = std::env::args().any(|a| a == "--bench");
    let (calls, sessions) = if full { (200, 20) } else { (5, 2) };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    let Some(fixture) = fixture_bin() else {
        let _ = writeln!(std::io::stderr(), "could not build the fixture server");
        return ExitCode::FAILURE;
    };
    let stdio = ServerConfig {
        name: Some("fx".into()),
        command: Some(fixture.display().to_string()),
        ..ServerConfig::default()
    };
    let Some(mut server) = HttpServer::start(&fixture) else {
        return ExitCode::FAILURE;
    };
    let http = ServerConfig {
        name: Some("fx".into()),
        url: Some(server.url.clone()),
        ..ServerConfig::default()
    };
    let mut out = std::io::stdout().lock();
    let mut ok = true;
    for (transport, config) in [("stdio", stdio), ("http", http)] {
        match runtime.block_on(measure(config, calls, sessions)) {
            Some((open_ms, call_ms)) => {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::json!({
                        "client": "yetibot-mcp-host (Rust)",
                        "transport": transport,
                        "open_list_ms": open_ms,
                        "per_call_ms": call_ms,
                        "calls": calls,
                        "sessions": sessions,
                    })
                );
            }
            None => ok = false,
        }
    }
    server.stop();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Median open-plus-list time over `sessions` sessions, and mean time per call over `calls`
/// sequential calls in one session, both in milliseconds.
async fn measure(config: ServerConfig, calls: usize, sessions: usize) -> Option<(f64, f64)> {
    let servers = ServerSet::from_config(&[config], Some(30_000)).ok()?;
    let host = Host::new(servers, HostOptions::new()).ok()?;
    let mut opens = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let started = Instant::now();
        let session = host.open(&["fx"]).await.ok()?;
        opens.push(started.elapsed());
        session.close().await;
    }
    let session = host.open(&["fx"]).await.ok()?;
    let echo = ToolId::new("fx", "echo");
    // One warm-up call, as every client gets.
    session.call(&echo, r#"{"text":"warm"}"#).await.ok()?;
    let started = Instant::now();
    for _ in 0..calls {
        let outcome = session.call(&echo, r#"{"text":"ping"}"#).await.ok()?;
        outcome.output()?;
    }
    let total = started.elapsed();
    session.close().await;
    opens.sort_unstable();
    let median = opens.get(opens.len() / 2).copied().unwrap_or_default();
    Some((ms(median), ms(total) / calls as f64))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The fixture, built with the same cargo and profile as this benchmark.
fn fixture_bin() -> Option<PathBuf> {
    mcp_fixture::build_binary(env!("CARGO")).ok()
}

/// The fixture serving Streamable HTTP on a loopback port.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(fixture: &Path) -> Option<Self> {
        let mut child = Command::new(fixture)
            .args(["--http", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut line = String::new();
        let stdout = child.stdout.take()?;
        std::io::BufReader::new(stdout).read_line(&mut line).ok()?;
        let url = line.trim().strip_prefix("listening ")?.to_owned();
        Some(Self { child, url })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
