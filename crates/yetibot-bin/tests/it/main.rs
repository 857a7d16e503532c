//! Drives the `yetibot` executable from outside: `check-config` exit codes and output, and a
//! clean shutdown of the running bot on SIGINT and SIGTERM.

mod ai;
mod browser;
mod cf;
mod clef;
mod console;
mod discord;
mod discovery;
mod doctor;
mod gi;
mod github;
mod logging;
mod meme;
mod run;
mod slack;
mod wise;
mod zen;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running `yetibot` (the bot itself) in `dir` with this configuration and extra
/// variables, its standard error collected, stopped if a test fails first.
struct Service {
    child: std::process::Child,
    stderr: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl Service {
    fn start(dir: &Workdir, edn: &str, env: &[(&str, &str)]) -> Self {
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let path = file.to_str().expect("utf-8").to_owned();
        let mut vars = vec![("CONFIG_PATH", path.as_str())];
        vars.extend_from_slice(env);
        let mut child = yetibot(&dir.path, &vars)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect()
        });
        Self {
            child,
            stderr: Some(stderr),
        }
    }

    /// Waits for the bot to exit by itself and returns the exit code and every line of
    /// standard error.
    fn wait(mut self) -> (Option<i32>, Vec<String>) {
        let exit = self.child.wait().expect("wait");
        let lines = self
            .stderr
            .take()
            .map(|reader| reader.join().expect("stderr reader"))
            .unwrap_or_default();
        (exit.code(), lines)
    }

    /// Sends SIGTERM and returns the exit code and every line of standard error.
    fn stop(self) -> (Option<i32>, Vec<String>) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        self.wait()
    }
}

impl Drop for Service {
    /// A test that fails before stopping the bot must not leave it running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The in-repo MCP fixture server, built once for this test run.
fn mcp_fixture() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        mcp_fixture::build_binary(env!("CARGO"))
            .expect("the fixture builds")
            .display()
            .to_string()
    })
}

fn example_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/config.example.edn")
}

/// The example configuration without its PostgreSQL URL and its chat adapters (which name
/// no real server or workspace), in `dir`, so that the bot keeps its history in the SQLite
/// file there and serves only its console.
fn example_without_database(dir: &Workdir) -> PathBuf {
    let text = std::fs::read_to_string(example_config()).expect("example");
    // The `:adapters` map spans several lines: skip from its key until its braces close.
    let mut depth: i32 = 0;
    let kept: String = text
        .lines()
        .filter(|line| {
            if depth == 0 && !line.trim_start().starts_with(":adapters {") {
                return true;
            }
            let code = line.split(";;").next().unwrap_or_default();
            depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
            false
        })
        .filter(|line| !line.contains(":url \"postgresql://"))
        .map(|line| line.replace(":table {:prefix", ":db {:table {:prefix"))
        .collect::<Vec<_>>()
        .join("\n");
    let file = dir.path.join("config.edn");
    std::fs::write(&file, kept).expect("write config");
    file
}

/// A working directory of its own for one run of the binary (where the default SQLite
/// file `data/yetibot.db` lands), removed afterwards.
struct Workdir {
    path: PathBuf,
}

impl Workdir {
    fn new() -> Self {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("yetibot-it-cwd-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).expect("working directory");
        Self { path }
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The binary with an empty environment (so the developer's own `YETIBOT_*` variables cannot
/// leak into a test) plus the given variables, working in `dir`.
fn yetibot(dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_yetibot"));
    command.env_clear().current_dir(dir);
    for (k, v) in env {
        command.env(k, v);
    }
    command
}

/// Runs `yetibot` with `args` in `dir` with the configuration file `config`, on a blocking
/// thread so that a fixture on the test's runtime keeps answering.
async fn run_blocking(dir: &Path, config: &str, args: &[&str]) -> Output {
    let dir = dir.to_path_buf();
    let config = config.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        yetibot(&dir, &[("CONFIG_PATH", &config)])
            .args(&args)
            .output()
            .expect("the binary runs")
    })
    .await
    .expect("the run finishes")
}

/// A working directory holding a configuration file, for running `yetibot run` against
/// fixtures.
struct Configured {
    dir: Workdir,
    config: String,
}

impl Configured {
    /// A fresh directory with `edn` as its configuration.
    fn new(edn: &str) -> Self {
        Self::in_dir(Workdir::new(), edn)
    }

    /// `dir` (which may already hold key files) with `edn` as its configuration.
    fn in_dir(dir: Workdir, edn: &str) -> Self {
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("config");
        let config = file.to_str().expect("utf-8").to_owned();
        Self { dir, config }
    }

    /// `yetibot run` with `args`.
    async fn run(&self, args: &[&str]) -> Output {
        let args: Vec<&str> = std::iter::once("run").chain(args.iter().copied()).collect();
        run_blocking(&self.dir.path, &self.config, &args).await
    }
}

/// Everything a run printed, standard output then standard error.
fn printed(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// One run in a fresh working directory.
fn run(env: &[(&str, &str)], args: &[&str]) -> Output {
    run_in(&Workdir::new(), env, args)
}

fn run_in(dir: &Workdir, env: &[(&str, &str)], args: &[&str]) -> Output {
    yetibot(&dir.path, env)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Writes a configuration file into a fresh directory; returns the directory and the path.
fn write_config(name: &str, edn: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("yetibot-it-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("config.edn");
    std::fs::write(&file, edn).expect("write config");
    let path = file.to_str().expect("utf-8").to_owned();
    (dir, path)
}

/// A running bot whose stderr lines arrive on a channel.
struct Bot {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    reader: Option<std::thread::JoinHandle<()>>,
    _dir: Workdir,
}

impl Drop for Bot {
    /// A test that fails before stopping the bot must not leave it running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Bot {
    fn start(env: &[(&str, &str)]) -> Self {
        Self::start_in(Workdir::new(), env)
    }

    fn start_in(dir: Workdir, env: &[(&str, &str)]) -> Self {
        // Tests run side by side: the console takes any free port, never the default one.
        let mut env = env.to_vec();
        env.push(("YETIBOT_WEB_PORT", "0"));
        let mut child = yetibot(&dir.path, &env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            reader: Some(reader),
            _dir: dir,
        }
    }

    /// Waits for a line containing `text`; the generous deadline only guards against a hung
    /// binary.
    fn wait_for(&self, text: &str) -> bool {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) if line.contains(text) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }

    /// Sends `signal` (`INT`, `TERM`) and returns the exit code and the remaining lines.
    fn stop(mut self, signal: &str) -> (Option<i32>, Vec<String>) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let exit = self.child.wait().expect("wait");
        if let Some(reader) = self.reader.take() {
            reader.join().expect("reader");
        }
        (exit.code(), self.lines.try_iter().collect())
    }
}

#[test]
fn check_config_accepts_the_example_and_redacts_every_secret() {
    let path = example_config();
    let out = run(
        &[("CONFIG_PATH", path.to_str().expect("utf-8 path"))],
        &["check-config"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.ends_with("configuration is valid\n"), "{stdout}");
    for secret in [
        "YOUR_API_KEY",
        "YOUR_XAI_API_KEY",
        "YOUR_TAVILY_API_KEY",
        "READ_TOKEN_PLACEHOLDER",
        "YOUR_IMGFLIP_PASSWORD",
        "YOUR_DB_PASSWORD",
        "localhost:5432",
        "/run/secrets",
    ] {
        assert!(!stdout.contains(secret), "{secret} printed:\n{stdout}");
    }
    assert!(stdout.contains("auth inline key [redacted]"), "{stdout}");
    assert!(
        stdout.contains("History store: PostgreSQL [redacted], table prefix \"yetibot_\""),
        "{stdout}"
    );
}

#[test]
fn check_config_lists_every_problem_and_exits_2() {
    let dir = std::env::temp_dir().join(format!("yetibot-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("bad.edn");
    std::fs::write(
        &file,
        r#"{:yetibot {:ai {:providers [{:name "a b" :url "https://x.example/v1?q=1" :key "sk-do-not-print-me"}]
                          :mcp {:timeout-ms 5}}}}"#,
    )
    .expect("write");
    let out = run(
        &[
            ("CONFIG_PATH", file.to_str().expect("utf-8")),
            ("YETIBOT_AI_MCP_MAX_TOOL_CALLS", "99"),
        ],
        &["check-config"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "the configuration has 4 problems:\n\
         \x20 - yetibot.ai.providers[0].name: must not contain whitespace\n\
         \x20 - yetibot.ai.providers[0].url: must not contain a query string\n\
         \x20 - yetibot.ai.mcp.timeout-ms: must be an integer from 100 to 120000\n\
         \x20 - yetibot.ai.mcp.max-tool-calls: must be an integer from 1 to 20\n"
    );
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_named_config_file_must_exist_but_the_default_may_be_absent() {
    let out = run(
        &[("CONFIG_PATH", "/nonexistent/yetibot.edn")],
        &["check-config"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "the configuration has 1 problem:\n  - /nonexistent/yetibot.edn: does not exist (named by CONFIG_PATH)\n"
    );
    // The working directory (the temp dir) has no config/config.edn: defaults apply.
    let out = run(&[], &["check-config"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("AI providers: none configured"));
}

#[test]
fn the_bot_stops_cleanly_on_sigint_and_sigterm() {
    for signal in ["INT", "TERM"] {
        let dir = Workdir::new();
        let path = example_without_database(&dir);
        let database = dir.path.join("data").join("yetibot.db");
        let bot = Bot::start_in(dir, &[("CONFIG_PATH", path.to_str().expect("utf-8"))]);
        assert!(
            bot.wait_for("history store ready: SQLite data/yetibot.db"),
            "the bot never opened its history store"
        );
        assert!(database.is_file(), "the default SQLite file is created");
        assert!(
            bot.wait_for("Press Ctrl-C to stop"),
            "the bot never reported that it is running"
        );
        let (code, rest) = bot.stop(signal);
        assert_eq!(code, Some(0), "SIG{signal}: {rest:?}");
        assert!(
            rest.iter().any(|l| l.contains("shutting down")),
            "SIG{signal}: {rest:?}"
        );
        assert!(!rest.iter().any(|l| l.contains("YOUR_API_KEY")));
    }
}

#[test]
fn the_bot_starts_model_discovery_against_its_providers() {
    // The fixture serves from the runtime's worker thread while this thread drives the bot.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let fixture = runtime
        .block_on(provider_fixture::Fixture::start())
        .expect("fixture");
    fixture.route(
        "/v1/models",
        provider_fixture::Reply::json(
            r#"{"object":"list","data":[{"id":"llama3.2"},{"id":"qwen3"}]}"#,
        ),
    );
    let dir = std::env::temp_dir().join(format!("yetibot-discovery-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("config.edn");
    std::fs::write(
        &file,
        format!(
            r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :key "sk-discovery-secret-1"}}]}}}}}}"#,
            fixture.url("/v1")
        ),
    )
    .expect("write");
    let bot = Bot::start(&[("CONFIG_PATH", file.to_str().expect("utf-8"))]);
    let listed = bot.wait_for("model catalog of local: 2 models");
    let (code, rest) = bot.stop("INT");
    assert!(listed, "the bot never listed the provider's models");
    assert_eq!(code, Some(0));
    assert!(!rest.iter().any(|l| l.contains("sk-discovery-secret-1")));
    let requests = fixture.requests();
    assert!(
        requests.iter().all(|r| r.method == "GET"),
        "discovery never sends prompts"
    );
    assert_eq!(fixture.count("/v1/models"), requests.len());
    std::fs::remove_dir_all(&dir).ok();
}
