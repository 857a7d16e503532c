//! `console_load`: the release `yetibot` binary's web console under concurrent prompts,
//! measured beside the same number of requests sent straight to the provider fixture in the
//! same run, so that the bot's own share of each answer's latency can be read off.
//!
//! ```text
//! cargo build --release -p yetibot-bin
//! cargo run --release -p benches --bin console_load -- target/release/yetibot
//! ```
//!
//! Options (defaults in parentheses): `--rooms N` (8, at most 16: one event stream per
//! room), `--per-room N` (25), `--delay-ms N` (20, the fixture's pause before each answer),
//! `--starts N` (5, start-to-ready samples), `--post-connections N` (48: how many prompt
//! POSTs may have their connection open at once; the console allows 256 open connections;
//! 0 opens all of them at once).
//!
//! What it does:
//!
//! 1. Starts the provider fixture in this process. `/v1/chat/completions` answers every
//!    request after the delay with `token=T;`, where `T` is the marker found in the request
//!    body, so that each answer is paired with its prompt exactly (not by arrival order). A
//!    streamed request (`"stream":true`, what the bot sends) gets the head at once and then
//!    the text, the finish and `[DONE]` as three events spread over the delay.
//! 2. Starts the binary `--starts` times, each in a fresh temporary working directory with
//!    an empty environment apart from `CONFIG_PATH` and `YETIBOT_WEB_PORT=0`: the time until
//!    the console URL is printed and until `GET /api/state` answers 200, beside `yetibot
//!    check-config` on the same configuration (the cost of starting the process and reading
//!    the configuration) as the peer. Every start but the last is stopped with SIGTERM.
//! 3. On the last one: idle RSS, then one room per event stream, a warm-up prompt per room,
//!    and `rooms * per-room` prompts posted concurrently, each text unique: every POST is
//!    released at once and at most `--post-connections` of them are connected together (a
//!    POST takes milliseconds, an answer tens of them, so the prompts overlap in the bot). A
//!    prompt's latency runs from the start of its POST to the `update` event carrying its
//!    answer on its room's stream, split at the moment the fixture received the bot's
//!    request. Every POST must get 202, every prompt exactly one answer (by message ID, in
//!    its own room, never `"error":true`), and `GET /api/state` must agree.
//! 4. The same number of requests, with the bot's own request body, sent concurrently
//!    straight to the fixture once before and once after the console round: its latency is
//!    the fixture's delay plus the loopback cost, and the bot's overhead at a percentile is
//!    the console's latency minus this one.
//! 5. Idle RSS and the bot's CPU time after the load, a clean stop, and a markdown report.
//!
//! It exits 1 when any request failed, was lost or was answered twice, and 2 on bad
//! arguments. Everything talks to 127.0.0.1.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use provider_fixture::client::{EventStream, RawResponse, parse_response};
use provider_fixture::{Fixture, Recorded, Reply, script};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

const USAGE: &str = "usage: console_load [YETIBOT] [--rooms N] [--per-room N] [--delay-ms N] [--starts N] [--post-connections N]";

/// What the fixture looks for in a request body and writes into its answer.
const MARK: &str = "token=";
/// How long one HTTP exchange may take before it counts as failed.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a round waits for its answers.
const ANSWER_DEADLINE: Duration = Duration::from_secs(120);
/// How long a round keeps listening after its last answer, for duplicates.
const DUPLICATE_GRACE: Duration = Duration::from_millis(1_000);
/// How long the bot rests before its idle RSS is read.
const SETTLE: Duration = Duration::from_secs(2);
/// Linux reports process CPU times in these ticks per second (`USER_HZ`).
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Debug, Clone)]
struct Options {
    binary: PathBuf,
    rooms: usize,
    per_room: usize,
    delay: Duration,
    starts: usize,
    post_connections: usize,
}

impl Options {
    fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            binary: PathBuf::from("target/release/yetibot"),
            rooms: 8,
            per_room: 25,
            delay: Duration::from_millis(20),
            starts: 5,
            post_connections: 48,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut number = |name: &str| -> Result<usize, String> {
                args.next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{name} needs a whole number"))
            };
            match arg.as_str() {
                "--rooms" => options.rooms = number("--rooms")?,
                "--per-room" => options.per_room = number("--per-room")?,
                "--delay-ms" => {
                    options.delay = Duration::from_millis(number("--delay-ms")? as u64);
                }
                "--starts" => options.starts = number("--starts")?,
                "--post-connections" => options.post_connections = number("--post-connections")?,
                "-h" | "--help" => return Err(String::new()),
                other if other.starts_with('-') => return Err(format!("unknown option {other}")),
                other => options.binary = PathBuf::from(other),
            }
        }
        if !(1..=16).contains(&options.rooms) {
            return Err("--rooms must be 1 to 16 (one event stream per room, 16 at most)".into());
        }
        if options.per_room == 0 || options.starts == 0 {
            return Err("--per-room and --starts must be at least 1".into());
        }
        Ok(options)
    }
}

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(why) => {
            let mut err = std::io::stderr().lock();
            if !why.is_empty() {
                let _ = writeln!(err, "console_load: {why}");
            }
            let _ = writeln!(err, "{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(&options)) {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(report.text.as_bytes());
            let _ = out.flush();
            if report.failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(why) => {
            let _ = writeln!(std::io::stderr().lock(), "console_load: {why}");
            ExitCode::FAILURE
        }
    }
}

/// The rendered report and whether anything went wrong.
struct Report {
    text: String,
    failed: bool,
}

/// When the fixture first received a request carrying each marker.
type Arrivals = Arc<std::sync::Mutex<HashMap<String, Instant>>>;

/// The fixture's answer to a Chat Completions request: the marker found in its body, after
/// the delay. Notes when the marker arrived.
fn echo(request: &Recorded, delay: Duration, arrivals: &Arrivals) -> Reply {
    let body = String::from_utf8_lossy(&request.body);
    let text = match marker(&body) {
        Some(token) => {
            arrivals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(token.to_owned())
                .or_insert_with(Instant::now);
            format!("{MARK}{token};")
        }
        None => "no marker".to_owned(),
    };
    // A streamed request (the bot's default) is answered the way a model server streams:
    // the head at once, then the text, the finish with usage and `[DONE]`, spread over the
    // delay.
    if body.contains(r#""stream":true"#) {
        let events = [
            format!("data: {}\n\n", script::chat_text_chunk(&text)),
            format!("data: {}\n\n", script::chat_finish_chunk("stop", 1, 1)),
            "data: [DONE]\n\n".to_owned(),
        ];
        return Reply::sse_chunks(events).slow(delay / 3);
    }
    Reply::json(script::chat_completion(&text)).slow(delay)
}

/// The last `token=...;` marker in `text`.
fn marker(text: &str) -> Option<&str> {
    let start = text.rfind(MARK)? + MARK.len();
    let len = text[start..].find(';')?;
    Some(&text[start..start + len])
}

async fn run(options: &Options) -> Result<Report, String> {
    let binary = std::fs::canonicalize(&options.binary).map_err(|e| {
        format!(
            "{}: {e} (build it with scripts/console-load.sh)",
            options.binary.display()
        )
    })?;
    let fixture = Fixture::start()
        .await
        .map_err(|e| format!("fixture: {e}"))?;
    let delay = options.delay;
    let arrivals = Arrivals::default();
    let noted = Arc::clone(&arrivals);
    fixture.respond_with("/v1/chat/completions", move |request| {
        echo(request, delay, &noted)
    });
    fixture.route(
        "/v1/models",
        Reply::json(
            r#"{"object":"list","data":[{"id":"m1","object":"model","owned_by":"local"}]}"#,
        ),
    );
    let home = Scratch::new("config")?;
    let config = home.path.join("config.edn");
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
        fixture.url("/v1")
    );
    std::fs::write(&config, edn).map_err(|e| format!("write the configuration: {e}"))?;

    // Start-to-ready, beside check-config on the same configuration.
    let mut starts = Vec::new();
    let mut checks = Vec::new();
    let mut stops = Vec::new();
    let mut bot = None;
    for n in 0..options.starts {
        checks.push(check_config(&binary, &config).await?);
        let (started, startup) = Bot::start(&binary, &config).await?;
        starts.push(startup);
        if n + 1 == options.starts {
            bot = Some(started);
        } else {
            stops.push(started.stop().await?);
        }
    }
    let bot = bot.ok_or("no bot was started")?;
    tokio::time::sleep(SETTLE).await;
    let rss_start = memory(bot.pid());
    let cpu_start = cpu_time(bot.pid());

    let console = bot.console.clone();
    let rooms: Vec<String> = (1..=options.rooms).map(|n| format!("load-{n}")).collect();
    for room in &rooms {
        let response = console
            .call("POST", "/api/rooms", Some(&json!({"name": room})))
            .await?;
        if response.status != 201 {
            return Err(format!(
                "POST /api/rooms {room}: status {}",
                response.status
            ));
        }
    }
    let (answers_tx, mut answers) = mpsc::unbounded_channel();
    let mut readers = tokio::task::JoinSet::new();
    for room in &rooms {
        let mut stream = EventStream::open(console.addr, "/api/events", &console.headers()).await;
        let status = stream.status().await;
        if status != 200 {
            return Err(format!("GET /api/events: status {status}"));
        }
        let hello = stream.next().await;
        if hello.event != "hello" {
            return Err(format!("the event stream began with {:?}", hello.event));
        }
        readers.spawn(follow(stream, room.clone(), answers_tx.clone()));
    }
    drop(answers_tx);

    let warmup = console_round(
        &console,
        &rooms,
        1,
        "w",
        options.post_connections,
        &arrivals,
        &mut answers,
    )
    .await;
    let template = fixture
        .requests()
        .iter()
        .rev()
        .find(|r| r.path == "/v1/chat/completions")
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .ok_or("the warm-up sent nothing to the fixture")?;
    let total = options.rooms * options.per_room;
    let before = direct_round(fixture.addr(), &template, total, "a").await;
    let load = console_round(
        &console,
        &rooms,
        options.per_room,
        "l",
        options.post_connections,
        &arrivals,
        &mut answers,
    )
    .await;
    let after = direct_round(fixture.addr(), &template, total, "b").await;
    tokio::time::sleep(SETTLE).await;
    let rss_end = memory(bot.pid());
    let cpu_end = cpu_time(bot.pid());
    let state = check_state(&console, &rooms, &[&warmup, &load]).await;
    readers.abort_all();
    while readers.join_next().await.is_some() {}
    let log = bot.log_summary();
    let stop = bot.stop().await?;
    stops.push(stop);

    let mut direct = before.clone();
    direct.merge(&after);
    let mut text = String::new();
    let failed = render(
        &mut text,
        &Rendered {
            options,
            starts: &starts,
            checks: &checks,
            stops: &stops,
            rss_start,
            rss_end,
            cpu: cpu_start.zip(cpu_end).map(|(a, b)| b.saturating_sub(a)),
            warmup: &warmup,
            load: &load,
            before: &before,
            after: &after,
            direct: &direct,
            state: &state,
            log: &log,
        },
    );
    Ok(Report { text, failed })
}

/// A working directory of its own under the system's temporary folder, removed on drop.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new(kind: &str) -> Result<Self, String> {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "yetibot-console-load-{}-{kind}-{n}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The binary with an empty environment apart from its configuration and a free port.
fn yetibot(binary: &Path, config: &Path, dir: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("CONFIG_PATH", config)
        .env("YETIBOT_WEB_PORT", "0")
        .current_dir(dir)
        .stdin(Stdio::null());
    command
}

/// How long `yetibot check-config` takes from spawn to exit.
async fn check_config(binary: &Path, config: &Path) -> Result<Duration, String> {
    let dir = Scratch::new("check")?;
    let mut command = yetibot(binary, config, &dir.path);
    command
        .arg("check-config")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let status = command.status().map_err(|e| format!("check-config: {e}"))?;
        let took = started.elapsed();
        drop(dir);
        if status.success() {
            Ok(took)
        } else {
            Err(format!("check-config failed: {status}"))
        }
    })
    .await
    .map_err(|e| format!("check-config: {e}"))?
}

/// One start: until the URL line, and until the console answered `GET /api/state`.
#[derive(Debug, Clone, Copy)]
struct Startup {
    url: Duration,
    ready: Duration,
}

/// How the console is reached.
#[derive(Debug, Clone)]
struct Console {
    addr: SocketAddr,
    token: String,
}

impl Console {
    fn from_line(line: &str) -> Option<Self> {
        let rest = line.split_once("http://")?.1;
        let (host, query) = rest.split_once("/?token=")?;
        Some(Self {
            addr: host.parse().ok()?,
            token: query.trim().to_owned(),
        })
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("Host", self.addr.to_string()),
            (
                "Cookie",
                format!("yetibot_console_{}={}", self.addr.port(), self.token),
            ),
        ]
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<RawResponse, String> {
        let mut headers = self.headers();
        if body.is_some() {
            headers.push(("Content-Type", "application/json".into()));
        }
        let body = body.map(Value::to_string).unwrap_or_default();
        exchange(self.addr, method, path, &headers, body.as_bytes())
            .await
            .map(|(response, _)| response)
    }

    /// `POST path` with a JSON body: the response and how long the connect took.
    async fn post(&self, path: &str, body: &Value) -> Result<(RawResponse, Duration), String> {
        let mut headers = self.headers();
        headers.push(("Content-Type", "application/json".into()));
        exchange(
            self.addr,
            "POST",
            path,
            &headers,
            body.to_string().as_bytes(),
        )
        .await
    }
}

/// One request on its own connection (`Connection: close`), read to the end: the response
/// and how long the connect took. Unlike the fixture's test client it reports a failure
/// instead of panicking.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<(RawResponse, Duration), String> {
    let work = async {
        let started = Instant::now();
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {}", e.kind()))?;
        let connected = started.elapsed();
        let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (name, value) in headers {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        let _ = write!(head, "Content-Length: {}\r\n\r\n", body.len());
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| format!("write: {}", e.kind()))?;
        stream
            .write_all(body)
            .await
            .map_err(|e| format!("write: {}", e.kind()))?;
        let mut bytes = Vec::new();
        stream
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| format!("read: {}", e.kind()))?;
        if !bytes.windows(4).any(|w| w == b"\r\n\r\n") {
            return Err("closed without a response".to_owned());
        }
        Ok((parse_response(&bytes), connected))
    };
    tokio::time::timeout(EXCHANGE_TIMEOUT, work)
        .await
        .map_err(|_| "no response in time".to_owned())?
}

/// A running bot.
struct Bot {
    child: Child,
    console: Console,
    dir: Scratch,
}

impl Bot {
    async fn start(binary: &Path, config: &Path) -> Result<(Self, Startup), String> {
        let dir = Scratch::new("run")?;
        let stderr = std::fs::File::create(dir.path.join("stderr.log"))
            .map_err(|e| format!("stderr log: {e}"))?;
        let mut command = yetibot(binary, config, &dir.path);
        command.stdout(Stdio::piped()).stderr(stderr);
        let (line_tx, line_rx) = tokio::sync::oneshot::channel();
        let spawned = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        // Reads standard output to its end, so the pipe stays open; the URL line is stamped
        // as it arrives.
        std::thread::spawn(move || {
            let mut first = Some(line_tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains("Open the web console:")
                    && let Some(tx) = first.take()
                {
                    let _ = tx.send((Instant::now(), line));
                }
            }
        });
        let mut bot = Self {
            child,
            console: Console {
                addr: SocketAddr::from(([127, 0, 0, 1], 0)),
                token: String::new(),
            },
            dir,
        };
        let Ok(Ok((url_at, line))) = tokio::time::timeout(EXCHANGE_TIMEOUT, line_rx).await else {
            let log = bot.log_tail();
            let _ = bot.child.kill();
            let _ = bot.child.wait();
            return Err(format!(
                "the bot printed no console URL; its log ends:\n{log}"
            ));
        };
        bot.console =
            Console::from_line(&line).ok_or_else(|| format!("not a console URL: {line:?}"))?;
        let deadline = spawned + EXCHANGE_TIMEOUT;
        let ready = loop {
            if let Ok(response) = bot
                .console
                .call("GET", "/api/state?room=general", None)
                .await
                && response.status == 200
            {
                break Instant::now();
            }
            if Instant::now() > deadline {
                return Err("the console never answered GET /api/state with 200".into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        let startup = Startup {
            url: url_at - spawned,
            ready: ready - spawned,
        };
        Ok((bot, startup))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path.join("stderr.log")).unwrap_or_default()
    }

    fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// How many warning and error lines the bot logged, and the first few of them.
    fn log_summary(&self) -> LogSummary {
        let log = self.log();
        let flagged: Vec<String> = log
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR"))
            .map(str::to_owned)
            .collect();
        LogSummary {
            warnings: log.lines().filter(|l| l.contains("WARN")).count(),
            errors: log.lines().filter(|l| l.contains("ERROR")).count(),
            first: flagged.into_iter().take(5).collect(),
        }
    }

    /// SIGTERM, then the time until the process exited and its exit code.
    async fn stop(mut self) -> Result<Stop, String> {
        let asked = Instant::now();
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .map_err(|e| format!("kill: {e}"))?;
        if !status.success() {
            return Err(format!("kill -TERM failed: {status}"));
        }
        loop {
            if let Some(exit) = self.child.try_wait().map_err(|e| format!("wait: {e}"))? {
                return Ok(Stop {
                    took: asked.elapsed(),
                    code: exit.code(),
                });
            }
            if asked.elapsed() > EXCHANGE_TIMEOUT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Ok(Stop {
                    took: asked.elapsed(),
                    code: None,
                });
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Stop {
    took: Duration,
    code: Option<i32>,
}

#[derive(Debug, Clone, Default)]
struct LogSummary {
    warnings: usize,
    errors: usize,
    first: Vec<String>,
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// User plus system CPU time of a process, in ticks.
fn cpu_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it start with the state.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// An answer as one room's event stream delivered it.
#[derive(Debug)]
struct Seen {
    at: Instant,
    stream_room: String,
    message: Value,
}

/// What the streams send the rounds.
#[derive(Debug)]
enum Streamed {
    Answer(Seen),
    /// The stream told the page to reload: updates were skipped.
    Reset,
}

/// Follows one room's stream and forwards the bot's answers in that room.
async fn follow(mut stream: EventStream, room: String, out: mpsc::UnboundedSender<Streamed>) {
    loop {
        let event = stream.next().await;
        let at = Instant::now();
        match event.event.as_str() {
            "update" => {
                let Ok(update) = serde_json::from_str::<Value>(&event.data) else {
                    continue;
                };
                let message = &update["message"];
                if update["type"] == "message"
                    && message["role"] == "answer"
                    && message["room"] == room.as_str()
                {
                    let seen = Seen {
                        at,
                        stream_room: room.clone(),
                        message: message.clone(),
                    };
                    if out.send(Streamed::Answer(seen)).is_err() {
                        return;
                    }
                }
            }
            "reset" if out.send(Streamed::Reset).is_err() => return,
            _ => {}
        }
    }
}

/// What one round measured.
#[derive(Debug, Clone, Default)]
struct Round {
    /// Per answered prompt (or direct request): from the start of its request to its answer.
    latencies: Vec<Duration>,
    /// Console rounds: from the start of each POST to its 202.
    posts: Vec<Duration>,
    /// Console rounds: from the start of a POST until the fixture received the bot's request.
    inbound: Vec<Duration>,
    /// Console rounds: from the fixture receiving the request to the answer event (the
    /// fixture's delay included).
    outbound: Vec<Duration>,
    /// How long each successful request's connect took.
    connects: Vec<Duration>,
    /// Failed requests by reason.
    failures: BTreeMap<String, usize>,
    sent: usize,
    lost: usize,
    duplicated: usize,
    error_answers: usize,
    misrouted: usize,
    /// Answers whose marker belongs to no prompt of this round.
    stray: usize,
    resets: usize,
    /// Accept-queue overflows in this network namespace during the round.
    overflows: Option<u64>,
    wall: Duration,
    /// Console rounds: every prompt's marker and room, for the state check.
    prompts: Vec<(String, String)>,
}

impl Round {
    fn fail(&mut self, why: String) {
        *self.failures.entry(why).or_default() += 1;
    }

    fn failed(&self) -> usize {
        self.failures.values().sum()
    }

    fn clean(&self) -> bool {
        self.failed() == 0
            && self.lost == 0
            && self.duplicated == 0
            && self.error_answers == 0
            && self.misrouted == 0
            && self.stray == 0
            && self.resets == 0
    }

    fn merge(&mut self, other: &Self) {
        self.latencies.extend_from_slice(&other.latencies);
        self.posts.extend_from_slice(&other.posts);
        self.connects.extend_from_slice(&other.connects);
        for (why, n) in &other.failures {
            *self.failures.entry(why.clone()).or_default() += n;
        }
        self.sent += other.sent;
        self.wall += other.wall;
    }
}

/// Opens one gate for every task at once, optionally letting only `limit` through together.
fn gate(
    limit: usize,
) -> (
    Arc<tokio::sync::Semaphore>,
    tokio::sync::watch::Sender<bool>,
) {
    let permits = if limit == 0 {
        tokio::sync::Semaphore::MAX_PERMITS
    } else {
        limit
    };
    (
        Arc::new(tokio::sync::Semaphore::new(permits)),
        tokio::sync::watch::channel(false).0,
    )
}

/// Posts `per_room` prompts to every room at once and waits for every answer.
async fn console_round(
    console: &Console,
    rooms: &[String],
    per_room: usize,
    label: &str,
    limit: usize,
    arrivals: &Arrivals,
    answers: &mut mpsc::UnboundedReceiver<Streamed>,
) -> Round {
    let overflows = listen_overflows();
    let mut round = Round::default();
    // Anything left from an earlier round is late and belongs to none of these prompts.
    while let Ok(left) = answers.try_recv() {
        if let Streamed::Answer(_) = left {
            round.stray += 1;
        }
    }
    let (permits, go) = gate(limit);
    let mut posts = tokio::task::JoinSet::new();
    for (r, room) in rooms.iter().enumerate() {
        for n in 0..per_room {
            let token = format!("{label}-{r}-{n}");
            let text = format!("!ai --no-tools {MARK}{token}; please answer with the marker");
            round.prompts.push((token.clone(), room.clone()));
            let console = console.clone();
            let room = room.clone();
            let permits = Arc::clone(&permits);
            let mut go = go.subscribe();
            posts.spawn(async move {
                let _ = go.wait_for(|open| *open).await;
                let _permit = permits.acquire_owned().await;
                let started = Instant::now();
                let result = console
                    .post("/api/messages", &json!({"room": room, "text": text}))
                    .await;
                (token, started, Instant::now(), result)
            });
        }
    }
    round.sent = round.prompts.len();
    let began = Instant::now();
    go.send_replace(true);
    let mut started_at: HashMap<String, Instant> = HashMap::new();
    while let Some(done) = posts.join_next().await {
        let Ok((token, started, finished, result)) = done else {
            round.fail("a POST task panicked".into());
            continue;
        };
        match result {
            Ok((response, connected)) if response.status == 202 => {
                round.posts.push(finished - started);
                round.connects.push(connected);
                started_at.insert(token, started);
            }
            Ok((response, _)) => round.fail(format!(
                "POST /api/messages {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            )),
            Err(why) => round.fail(format!("POST /api/messages: {why}")),
        }
    }
    let rooms_of: HashMap<String, String> = round.prompts.iter().cloned().collect();
    // Only accepted prompts are shown and answered.
    round.prompts.retain(|(t, _)| started_at.contains_key(t));
    let mut first: HashMap<String, Instant> = HashMap::new();
    let mut ids: HashMap<String, HashSet<String>> = HashMap::new();
    let deadline = tokio::time::Instant::now() + ANSWER_DEADLINE;
    let mut grace_until: Option<tokio::time::Instant> = None;
    loop {
        let until = grace_until.unwrap_or(deadline);
        let Ok(Some(streamed)) = tokio::time::timeout_at(until, answers.recv()).await else {
            break;
        };
        let seen = match streamed {
            Streamed::Answer(seen) => seen,
            Streamed::Reset => {
                round.resets += 1;
                continue;
            }
        };
        let text = seen.message["text"].as_str().unwrap_or_default();
        let Some(token) = marker(text).filter(|t| rooms_of.contains_key(*t)) else {
            round.stray += 1;
            continue;
        };
        if rooms_of.get(token) != Some(&seen.stream_room) {
            round.misrouted += 1;
        }
        if seen.message["error"] == true {
            round.error_answers += 1;
        }
        let id = seen.message["id"].as_str().unwrap_or_default().to_owned();
        ids.entry(token.to_owned()).or_default().insert(id);
        first.entry(token.to_owned()).or_insert(seen.at);
        if grace_until.is_none() && started_at.keys().all(|t| first.contains_key(t)) {
            round.wall = began.elapsed();
            grace_until = Some(tokio::time::Instant::now() + DUPLICATE_GRACE);
        }
    }
    if grace_until.is_none() {
        round.wall = began.elapsed();
    }
    let arrived = arrivals
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    for (token, started) in &started_at {
        match first.get(token) {
            Some(answered) => {
                round.latencies.push(*answered - *started);
                if let Some(arrived) = arrived.get(token) {
                    round.inbound.push(*arrived - *started);
                    round.outbound.push(*answered - *arrived);
                }
            }
            None => round.lost += 1,
        }
    }
    round.duplicated = ids.values().map(|set| set.len().saturating_sub(1)).sum();
    round.overflows = overflows
        .zip(listen_overflows())
        .map(|(a, b)| b.saturating_sub(a));
    round
}

/// Sends `count` copies of the bot's own request body, each with its own marker, straight to
/// the fixture at once (as the bot sends its requests: no cap on connections).
async fn direct_round(fixture: SocketAddr, template: &str, count: usize, label: &str) -> Round {
    let overflows = listen_overflows();
    let mut round = Round {
        sent: count,
        ..Round::default()
    };
    let Some(original) = marker(template) else {
        round.fail("the bot's request carried no marker".into());
        return round;
    };
    let pattern = format!("{MARK}{original};");
    let (permits, go) = gate(0);
    let mut requests = tokio::task::JoinSet::new();
    for n in 0..count {
        let token = format!("{label}-{n}");
        let body = template.replace(&pattern, &format!("{MARK}{token};"));
        let permits = Arc::clone(&permits);
        let mut go = go.subscribe();
        requests.spawn(async move {
            let _ = go.wait_for(|open| *open).await;
            let _permit = permits.acquire_owned().await;
            let headers = [
                ("Host", fixture.to_string()),
                ("Content-Type", "application/json".to_owned()),
            ];
            let started = Instant::now();
            let result = exchange(
                fixture,
                "POST",
                "/v1/chat/completions",
                &headers,
                body.as_bytes(),
            )
            .await;
            (token, started.elapsed(), result)
        });
    }
    let began = Instant::now();
    go.send_replace(true);
    while let Some(done) = requests.join_next().await {
        let Ok((token, took, result)) = done else {
            round.fail("a request task panicked".into());
            continue;
        };
        match result {
            Ok((response, connected)) if response.status == 200 => {
                let body = String::from_utf8_lossy(&response.body);
                if body.contains(&format!("{MARK}{token};")) {
                    round.latencies.push(took);
                    round.connects.push(connected);
                } else {
                    round.fail("the fixture answered another request's marker".into());
                }
            }
            Ok((response, _)) => round.fail(format!("fixture status {}", response.status)),
            Err(why) => round.fail(format!("fixture: {why}")),
        }
    }
    round.wall = began.elapsed();
    round.overflows = overflows
        .zip(listen_overflows())
        .map(|(a, b)| b.saturating_sub(a));
    round
}

/// How often a listening socket's accept queue overflowed in this network namespace (each
/// time a SYN was dropped, and its client waits a second for the retransmission).
fn listen_overflows() -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let lines: Vec<&str> = table.lines().collect();
    lines.chunks(2).find_map(|pair| {
        let [names, values] = pair else { return None };
        let names = names.strip_prefix("TcpExt:")?.split_whitespace();
        let values = values.strip_prefix("TcpExt:")?.split_whitespace();
        names
            .zip(values)
            .find(|(name, _)| *name == "ListenOverflows")
            .and_then(|(_, value)| value.parse().ok())
    })
}

/// What `GET /api/state` shows after the rounds.
#[derive(Debug, Clone, Default)]
struct StateCheck {
    problems: Vec<String>,
    /// Status cards still shown after every answer arrived.
    status_cards: usize,
}

async fn check_state(console: &Console, rooms: &[String], rounds: &[&Round]) -> StateCheck {
    let mut check = StateCheck::default();
    for room in rooms {
        let response = match console
            .call("GET", &format!("/api/state?room={room}"), None)
            .await
        {
            Ok(response) if response.status == 200 => response,
            Ok(response) => {
                check
                    .problems
                    .push(format!("GET /api/state?room={room}: {}", response.status));
                continue;
            }
            Err(why) => {
                check
                    .problems
                    .push(format!("GET /api/state?room={room}: {why}"));
                continue;
            }
        };
        let state: Value = serde_json::from_slice(&response.body).unwrap_or_default();
        let messages = state["messages"].as_array().cloned().unwrap_or_default();
        let mut answered: HashMap<String, usize> = HashMap::new();
        let mut users = 0;
        for message in &messages {
            match message["role"].as_str() {
                Some("user") => users += 1,
                Some("status") => check.status_cards += 1,
                Some("answer") => {
                    if let Some(token) = message["text"].as_str().and_then(marker) {
                        *answered.entry(token.to_owned()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        let expected: Vec<&String> = rounds
            .iter()
            .flat_map(|r| r.prompts.iter())
            .filter(|(_, r)| r == room)
            .map(|(t, _)| t)
            .collect();
        if users != expected.len() {
            check.problems.push(format!(
                "{room}: {users} prompts shown, {} sent",
                expected.len()
            ));
        }
        for token in &expected {
            match answered.get(token.as_str()) {
                Some(1) => {}
                None => check.problems.push(format!("{room}: no answer to {token}")),
                Some(n) => check
                    .problems
                    .push(format!("{room}: {n} answers to {token}")),
            }
        }
        let extra = answered.keys().filter(|t| !expected.contains(t)).count();
        if extra > 0 {
            check.problems.push(format!(
                "{room}: {extra} answers to prompts of another room"
            ));
        }
    }
    check
}

/// The nearest-rank percentile `p` (0 to 100).
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1_000.0)
}

fn opt_ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".to_owned(), ms)
}

fn sorted(values: &[Duration]) -> Vec<Duration> {
    let mut values = values.to_vec();
    values.sort();
    values
}

fn median(values: &[Duration]) -> Option<Duration> {
    percentile(&sorted(values), 50.0)
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1_024.0)
}

struct Rendered<'a> {
    options: &'a Options,
    starts: &'a [Startup],
    checks: &'a [Duration],
    stops: &'a [Stop],
    rss_start: Option<(u64, u64)>,
    rss_end: Option<(u64, u64)>,
    cpu: Option<u64>,
    warmup: &'a Round,
    load: &'a Round,
    before: &'a Round,
    after: &'a Round,
    direct: &'a Round,
    state: &'a StateCheck,
    log: &'a LogSummary,
}

/// Writes the markdown report; `true` when anything failed.
fn render(out: &mut String, r: &Rendered<'_>) -> bool {
    let o = r.options;
    let total = o.rooms * o.per_room;
    let _ = writeln!(
        out,
        "## console_load: {total} prompts ({} rooms x {}), fixture delay {} ms, POST connections {}\n",
        o.rooms,
        o.per_room,
        o.delay.as_millis(),
        if o.post_connections == 0 {
            "unlimited".to_owned()
        } else {
            o.post_connections.to_string()
        }
    );

    let urls: Vec<Duration> = r.starts.iter().map(|s| s.url).collect();
    let readies: Vec<Duration> = r.starts.iter().map(|s| s.ready).collect();
    let ready = median(&readies);
    let check = median(r.checks);
    let _ = writeln!(
        out,
        "| start ({} runs) | median ms | min ms | max ms |",
        r.starts.len()
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    for (name, values) in [
        ("spawn to console URL line", &urls),
        ("spawn to GET /api/state 200", &readies),
        (
            "peer: `yetibot check-config` spawn to exit",
            &r.checks.to_vec(),
        ),
    ] {
        let s = sorted(values);
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} |",
            opt_ms(median(values)),
            opt_ms(s.first().copied()),
            opt_ms(s.last().copied())
        );
    }
    let stop_times: Vec<Duration> = r.stops.iter().map(|s| s.took).collect();
    let stop_sorted = sorted(&stop_times);
    let _ = writeln!(
        out,
        "| SIGTERM to exit | {} | {} | {} |",
        opt_ms(median(&stop_times)),
        opt_ms(stop_sorted.first().copied()),
        opt_ms(stop_sorted.last().copied())
    );
    if let (Some(ready), Some(check)) = (ready, check) {
        let _ = writeln!(
            out,
            "\nready / check-config (medians): {:.2}x",
            ready.as_secs_f64() / check.as_secs_f64().max(1e-9)
        );
    }

    let _ = writeln!(out, "\n| memory (bot) | VmRSS MiB | VmHWM MiB |");
    let _ = writeln!(out, "|---|---:|---:|");
    for (name, value) in [
        ("idle after start", r.rss_start),
        ("idle after the load", r.rss_end),
    ] {
        match value {
            Some((rss, hwm)) => {
                let _ = writeln!(out, "| {name} | {} | {} |", mib(rss), mib(hwm));
            }
            None => {
                let _ = writeln!(out, "| {name} | - | - |");
            }
        }
    }
    if let Some(ticks) = r.cpu {
        let seconds = ticks as f64 / TICKS_PER_SECOND;
        let prompts = (r.warmup.sent + r.load.sent).max(1) as f64;
        let _ = writeln!(
            out,
            "\nbot CPU time over the warm-up and the load: {:.2} s, {:.2} ms per prompt (10 ms ticks)",
            seconds,
            seconds * 1_000.0 / prompts
        );
    }

    let console = sorted(&r.load.latencies);
    let direct = sorted(&r.direct.latencies);
    let _ = writeln!(
        out,
        "\n| latency ms | console (POST to answer event) | direct to fixture (peer) | bot overhead | ratio |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    for (name, p) in [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("max", 100.0)] {
        let c = percentile(&console, p);
        let d = percentile(&direct, p);
        let (overhead, ratio) = match (c, d) {
            (Some(c), Some(d)) => (
                format!("{:.1}", (c.as_secs_f64() - d.as_secs_f64()) * 1_000.0),
                format!("{:.2}x", c.as_secs_f64() / d.as_secs_f64().max(1e-9)),
            ),
            _ => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {overhead} | {ratio} |",
            opt_ms(c),
            opt_ms(d)
        );
    }
    let _ = writeln!(
        out,
        "\nconnect (TCP handshake) p50/p99/max ms: console {} / {} / {}; direct {} / {} / {}",
        opt_ms(percentile(&sorted(&r.load.connects), 50.0)),
        opt_ms(percentile(&sorted(&r.load.connects), 99.0)),
        opt_ms(percentile(&sorted(&r.load.connects), 100.0)),
        opt_ms(percentile(&sorted(&r.direct.connects), 50.0)),
        opt_ms(percentile(&sorted(&r.direct.connects), 99.0)),
        opt_ms(percentile(&sorted(&r.direct.connects), 100.0)),
    );
    let _ = writeln!(
        out,
        "\n| console stage ms | p50 | p99 |\n|---|---:|---:|\n| POST start to the fixture receiving the bot's request | {} | {} |\n| fixture receiving it to the answer event ({} ms delay included) | {} | {} |",
        opt_ms(percentile(&sorted(&r.load.inbound), 50.0)),
        opt_ms(percentile(&sorted(&r.load.inbound), 99.0)),
        r.options.delay.as_millis(),
        opt_ms(percentile(&sorted(&r.load.outbound), 50.0)),
        opt_ms(percentile(&sorted(&r.load.outbound), 99.0)),
    );
    let posts = sorted(&r.load.posts);
    let _ = writeln!(
        out,
        "\nPOST /api/messages to 202: p50 {} ms, p99 {} ms. Wall time to the last answer: console {} ms; direct {} ms before and {} ms after the console round (direct p50 {} / {} ms).",
        opt_ms(percentile(&posts, 50.0)),
        opt_ms(percentile(&posts, 99.0)),
        ms(r.load.wall),
        ms(r.before.wall),
        ms(r.after.wall),
        opt_ms(percentile(&sorted(&r.before.latencies), 50.0)),
        opt_ms(percentile(&sorted(&r.after.latencies), 50.0)),
    );

    let _ = writeln!(
        out,
        "\n| round | sent | answered | failed | lost | duplicated | error answers | misrouted | stray | resets | listen overflows |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (name, round) in [
        ("console warm-up", r.warmup),
        ("console load", r.load),
        ("direct before", r.before),
        ("direct after", r.after),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            round.sent,
            round.latencies.len(),
            round.failed(),
            round.lost,
            round.duplicated,
            round.error_answers,
            round.misrouted,
            round.stray,
            round.resets,
            round
                .overflows
                .map_or_else(|| "-".to_owned(), |n| n.to_string())
        );
    }
    let mut failed = false;
    for (name, round) in [
        ("console warm-up", r.warmup),
        ("console load", r.load),
        ("direct before", r.before),
        ("direct after", r.after),
    ] {
        failed |= !round.clean();
        for (why, n) in &round.failures {
            let _ = writeln!(out, "- {name}: {n} x {why}");
        }
    }
    let _ = writeln!(
        out,
        "\nGET /api/state after the load: {} ({} status cards still shown)",
        if r.state.problems.is_empty() {
            "every prompt shown once with exactly one answer".to_owned()
        } else {
            format!("{} problems", r.state.problems.len())
        },
        r.state.status_cards
    );
    for problem in r.state.problems.iter().take(10) {
        let _ = writeln!(out, "- {problem}");
    }
    failed |= !r.state.problems.is_empty();
    let codes: Vec<String> = r
        .stops
        .iter()
        .map(|s| {
            s.code
                .map_or_else(|| "killed".to_owned(), |c| c.to_string())
        })
        .collect();
    let clean_stops = r.stops.iter().all(|s| s.code == Some(0));
    failed |= !clean_stops;
    let _ = writeln!(
        out,
        "Exit codes after SIGTERM: {}. The last bot logged {} warning and {} error lines.",
        codes.join(", "),
        r.log.warnings,
        r.log.errors
    );
    for line in &r.log.first {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "\nresult: {}", if failed { "FAILED" } else { "ok" });
    failed
}
