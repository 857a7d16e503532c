//! The running bot's web console from outside: the real binary on a free loopback port,
//! driven over HTTP and its event stream like the page drives it. Commands, AI prompts with
//! live progress, history that outlives a restart, shutdown with requests in flight, the
//! console's refusals, and log hygiene of a tool-using request through the console.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use provider_fixture::client::{EventStream, RawResponse, request};
use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};

use crate::Workdir;

/// A running bot with its console.
struct Console {
    child: Child,
    addr: SocketAddr,
    token: String,
    stderr: mpsc::Receiver<String>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Console {
    /// Starts the bot in `dir` with this configuration (the console on a free port) and
    /// waits for the URL it prints.
    fn start(dir: &Workdir, edn: &str, env: &[(&str, &str)], args: &[&str]) -> Self {
        let file = dir.path.join("config.edn");
        std::fs::write(&file, edn).expect("write config");
        let mut command = Command::new(env!("CARGO_BIN_EXE_yetibot"));
        command
            .env_clear()
            .current_dir(&dir.path)
            .env("CONFIG_PATH", &file)
            .env("YETIBOT_WEB_PORT", "0")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (url_tx, url_rx) = mpsc::channel();
        let (err_tx, err_rx) = mpsc::channel();
        let readers = vec![
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(url) = line.strip_prefix("Open the web console: ") {
                        let _ = url_tx.send(url.to_owned());
                    }
                }
            }),
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if err_tx.send(line).is_err() {
                        break;
                    }
                }
            }),
        ];
        let url = url_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the bot prints the console URL");
        let rest = url.strip_prefix("http://").expect("an http URL");
        let (authority, token) = rest.split_once("/?token=").expect("a token in the URL");
        Self {
            child,
            addr: authority.parse().expect("an address"),
            token: token.to_owned(),
            stderr: err_rx,
            readers,
        }
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

    async fn send(&self, text: &str) -> RawResponse {
        self.post("/api/messages", &json!({"room": "general", "text": text}))
            .await
    }

    async fn post(&self, path: &str, body: &Value) -> RawResponse {
        let mut headers = self.headers();
        headers.push(("Content-Type", "application/json".into()));
        request(
            self.addr,
            "POST",
            path,
            &headers,
            body.to_string().as_bytes(),
        )
        .await
    }

    async fn events(&self) -> EventStream {
        let mut stream = EventStream::open(self.addr, "/api/events", &self.headers()).await;
        assert_eq!(stream.next().await.event, "hello");
        stream
    }

    /// Sends SIGTERM and waits for the exit; returns the code and every stderr line.
    fn stop(mut self) -> (Option<i32>, Vec<String>) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        self.wait()
    }

    fn wait(&mut self) -> (Option<i32>, Vec<String>) {
        let exit = self.child.wait().expect("wait");
        for reader in std::mem::take(&mut self.readers) {
            reader.join().expect("reader");
        }
        (exit.code(), self.stderr.try_iter().collect())
    }
}

impl Drop for Console {
    /// A test that fails before stopping the bot must not leave it running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The next update about a message, as `(message, role)`; other updates are skipped.
async fn next_message(stream: &mut EventStream) -> Value {
    loop {
        let event = stream.next_named("update").await;
        let update: Value = serde_json::from_str(&event.data).expect("update JSON");
        if update["type"] == "message" {
            return update["message"].clone();
        }
    }
}

/// The next bot answer (skipping the user's own message and status cards).
async fn next_answer(stream: &mut EventStream) -> Value {
    loop {
        let message = next_message(stream).await;
        if message["role"] == "answer" {
            return message;
        }
    }
}

fn provider(fixture: &Fixture) -> String {
    format!(
        r#"{{:yetibot {{:local {{:user-id "op-7" :user-name "Operator"}} :ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
        fixture.url("/v1")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_answers_the_operator_and_history_outlives_a_restart() {
    let dir = Workdir::new();
    let edn = r#"{:yetibot {:local {:user-id "op-7" :user-name "Operator"}}}"#;
    let bot = Console::start(&dir, edn, &[], &[]);
    let mut events = bot.events().await;
    let sent = bot.send("!list hi | count").await;
    assert_eq!(sent.status, 202, "{:?}", sent.json());
    let mine = next_message(&mut events).await;
    assert_eq!(mine["role"], "user");
    assert_eq!(mine["author"]["id"], "op-7");
    assert_eq!(mine["author"]["name"], "Operator");
    let answer = next_answer(&mut events).await;
    assert_eq!(answer["text"], "1");
    assert_eq!(answer["author"]["bot"], true);
    let labels: Vec<&str> = answer["buttons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["label"].as_str())
        .collect();
    assert_eq!(labels, ["Run again", "Help"]);
    // The text command as the spec has it: text is not a collection.
    bot.send("!echo hi | count").await;
    let error = next_answer(&mut events).await;
    assert_eq!(error["error"], true);
    let (code, lines) = bot.stop();
    assert_eq!(code, Some(0), "{lines:?}");
    // A new process over the same store reads the conversation back.
    let bot = Console::start(&dir, edn, &[], &[]);
    let mut events = bot.events().await;
    bot.send("!history").await;
    let history = next_answer(&mut events).await;
    let text = history["text"].as_str().unwrap_or_default();
    assert!(text.contains("!list hi | count"), "{text}");
    assert!(text.contains("Operator"), "{text}");
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ai_prompt_shows_live_progress_then_the_captioned_answer() {
    let fixture = Fixture::start().await.expect("fixture");
    let call = json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "yetibot__help", "arguments": "{}"},
            }]},
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    });
    fixture.route("/v1/chat/completions", Reply::json(call.to_string()));
    fixture.route(
        "/v1/chat/completions",
        // Slower than the card delay (1 s), so the card appears with the finished call.
        Reply::json(script::chat_completion("| a | b |\n|---|---|\n| 1 | 2 |"))
            .slow(Duration::from_millis(1_600)),
    );
    let dir = Workdir::new();
    let bot = Console::start(&dir, &provider(&fixture), &[], &[]);
    let mut events = bot.events().await;
    bot.send("!ai What can you do?").await;
    let mut status_id = None;
    let mut saw_call = false;
    let answer = loop {
        let message = next_message(&mut events).await;
        match message["role"].as_str() {
            Some("status") => {
                status_id = message["id"].as_str().map(str::to_owned);
                let text = message["text"].as_str().unwrap_or_default();
                assert!(text.starts_with("Working…"), "{text}");
                saw_call |= text.contains("`yetibot/help`: ok");
            }
            Some("answer") => break message,
            _ => {}
        }
    };
    assert!(saw_call, "the card showed the finished tool call");
    assert_eq!(answer["text"], "| a | b |\n|---|---|\n| 1 | 2 |");
    let caption = answer["caption"].as_str().unwrap_or_default();
    assert!(
        caption.starts_with("m1 · ") && caption.contains("1 tool"),
        "{caption}"
    );
    // The card goes once the answer is out.
    let deleted = loop {
        let event = events.next_named("update").await;
        let update: Value = serde_json::from_str(&event.data).expect("JSON");
        if update["type"] == "deleted" {
            break update;
        }
    };
    assert_eq!(deleted["id"].as_str(), status_id.as_deref());
    assert_eq!(fixture.count("/v1/chat/completions"), 2);
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_requests_in_flight_and_refuses_new_ones() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("finished")).slow(Duration::from_millis(1_500)),
    );
    let dir = Workdir::new();
    let mut bot = Console::start(&dir, &provider(&fixture), &[], &[]);
    let mut events = bot.events().await;
    bot.send("!ai --no-tools take your time").await;
    // The request is running once its working card is up.
    loop {
        if next_message(&mut events).await["role"] == "status" {
            break;
        }
    }
    let status = Command::new("kill")
        .args(["-TERM", &bot.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    // Intake closes at once; the running answer still arrives.
    let mut refused = None;
    for _ in 0..1_000 {
        let late = bot.send("!echo too late").await;
        if late.status == 503 {
            refused = Some(late);
            break;
        }
        tokio::task::yield_now().await;
    }
    let refused = refused.expect("new messages are refused while stopping");
    assert!(
        refused.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("shutting down"))
    );
    // Messages that arrived before the signal was handled are still answered.
    let last = loop {
        let answer = next_answer(&mut events).await;
        if answer["text"] != "too late" {
            break answer;
        }
    };
    assert_eq!(last["text"], "finished");
    let (code, lines) = tokio::task::spawn_blocking(move || bot.wait())
        .await
        .expect("wait");
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("cancelled")), "{lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_still_running_after_the_grace_is_cancelled() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("never seen")).slow(Duration::from_secs(60)),
    );
    let dir = Workdir::new();
    let bot = Console::start(&dir, &provider(&fixture), &[], &[]);
    let mut events = bot.events().await;
    bot.send("!ai --no-tools this will not finish").await;
    loop {
        if next_message(&mut events).await["role"] == "status" {
            break;
        }
    }
    let started = std::time::Instant::now();
    let (code, lines) = tokio::task::spawn_blocking(move || bot.stop())
        .await
        .expect("stop");
    assert_eq!(code, Some(0), "{lines:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(9),
        "the grace was kept: {waited:?}"
    );
    assert!(waited < Duration::from_secs(40), "{waited:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("1 request(s) still running") && l.contains("cancelled")),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_console_refuses_requests_without_the_token_or_from_a_foreign_host() {
    let dir = Workdir::new();
    let bot = Console::start(&dir, "{}", &[], &[]);
    let host = bot.addr.to_string();
    let no_token = request(
        bot.addr,
        "GET",
        "/api/state",
        &[("Host", host.clone())],
        b"",
    )
    .await;
    assert_eq!(no_token.status, 401);
    assert!(!no_token.has_cors_headers());
    let mut foreign = bot.headers();
    foreign[0] = ("Host", format!("attacker.test:{}", bot.addr.port()));
    let rebound = request(bot.addr, "GET", "/api/state", &foreign, b"").await;
    assert_eq!(rebound.status, 403);
    let ok = request(bot.addr, "GET", "/api/state", &bot.headers(), b"").await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["operator"]["id"], "local");
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
    // A console on an address other than loopback is refused at load.
    let out = crate::run(&[("YETIBOT_WEB_HOST", "0.0.0.0")], &["check-config"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("yetibot.web.host: must be a loopback address"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_using_request_through_the_console_logs_no_secret_prompt_or_tool_data() {
    use crate::logging::{
        ANSWER_CANARY, ARGUMENT_CANARY, ENV_CANARY, KEY_CANARY, PROMPT_CANARY, config,
        tool_using_fixture,
    };
    let fixture = tool_using_fixture().await;
    let dir = Workdir::new();
    let bot = Console::start(
        &dir,
        &config(&fixture),
        &[("RUST_LOG", "trace")],
        &["--log-format", "json"],
    );
    let mut events = bot.events().await;
    bot.send(&format!("!ai Please echo this for me: {PROMPT_CANARY}"))
        .await;
    assert_eq!(next_answer(&mut events).await["text"], ANSWER_CANARY);
    // Background discovery lists the models too; the second chat turn carries the result.
    let turns: Vec<_> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect();
    assert_eq!(turns.len(), 2);
    let second = String::from_utf8_lossy(&turns[1].body).into_owned();
    assert!(second.contains(ARGUMENT_CANARY), "{second}");
    let (code, lines) = bot.stop();
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(lines.len() > 5, "logging was on: {lines:?}");
    for line in &lines {
        let parsed: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(parsed.is_object());
        for canary in [
            KEY_CANARY,
            ENV_CANARY,
            PROMPT_CANARY,
            ARGUMENT_CANARY,
            ANSWER_CANARY,
        ] {
            assert!(!line.contains(canary), "{canary} logged: {line}");
        }
        assert!(
            !line.contains("token="),
            "the console token was logged: {line}"
        );
    }
}

#[test]
fn a_port_in_use_names_the_setting_to_change() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = taken.local_addr().expect("addr").port().to_string();
    let out = crate::run(&[("YETIBOT_WEB_PORT", &port)], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already uses that port") && stderr.contains(":yetibot :web :port"),
        "{stderr}"
    );
    drop(taken);
}

#[test]
fn console_url_prints_the_kept_link_and_rotate_replaces_it() {
    let dir = Workdir::new();
    let port = [("YETIBOT_WEB_PORT", "3999")];
    let first = crate::run_in(&dir, &port, &["console-url"]);
    assert_eq!(first.status.code(), Some(0));
    let link = String::from_utf8_lossy(&first.stdout).trim().to_owned();
    assert!(link.starts_with("http://127.0.0.1:3999/?token="), "{link}");
    // The token is kept in the data folder, privately, and printed again unchanged.
    let kept = dir.path.join("data").join("console-token");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&kept).expect("kept").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let again = crate::run_in(&dir, &port, &["console-url"]);
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), link);
    let rotated = crate::run_in(&dir, &port, &["console-url", "--rotate"]);
    assert_eq!(rotated.status.code(), Some(0));
    let new_link = String::from_utf8_lossy(&rotated.stdout).trim().to_owned();
    assert_ne!(new_link, link);
    assert!(String::from_utf8_lossy(&rotated.stderr).contains("restarts"));
    // A console that is off has no link.
    let off = crate::run_in(&dir, &[("YETIBOT_WEB_ENABLED", "false")], &["console-url"]);
    assert_eq!(off.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&off.stderr).contains(":enabled false"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_image_is_published_at_the_public_url_and_served_exactly() {
    const KEY: &str = "xai-key-for-publishing-0a1b";
    let fixture = Fixture::start().await.expect("fixture");
    provider_fixture::xai_images::XaiImages::new(KEY).mount(&fixture, "/x/v1");
    let dir = Workdir::new();
    let edn = format!(
        r#"{{:yetibot {{:xai {{:key "{KEY}" :api-url "{}"}}
                      :images {{:public-url "https://images.bot.example/gi/" :listen "127.0.0.1:0" :max-count 2}}}}}}"#,
        fixture.url("/x/v1")
    );
    let bot = Console::start(&dir, &edn, &[("RUST_LOG", "info")], &[]);
    // The image server's address, from the line that announces it.
    let addr: SocketAddr = loop {
        let line = bot
            .stderr
            .recv_timeout(Duration::from_secs(30))
            .expect("the image server is announced");
        if let Some(rest) = line.split("serving published images on ").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .and_then(|a| a.parse().ok())
                .expect("an address");
        }
    };
    let mut events = bot.events().await;
    bot.send("!gi a yeti commuting by helicopter").await;
    let answer = next_answer(&mut events).await;
    let text = answer["text"].as_str().expect("text").to_owned();
    let url = text
        .split_whitespace()
        .find(|w| w.starts_with("https://images.bot.example/gi/"))
        .unwrap_or_else(|| panic!("no public URL in {text}"));
    let name = url.rsplit('/').next().expect("a name");
    assert_eq!(name.len(), 36, "128 random bits and .png: {name}");
    let host = [("Host", addr.to_string())];
    let image = request(addr, "GET", &format!("/{name}"), &host, b"").await;
    assert_eq!(image.status, 200);
    assert_eq!(image.body, provider_fixture::xai_images::GENERATED_PNG);
    assert_eq!(image.header("content-type"), Some("image/png"));
    assert_eq!(image.header("x-content-type-options"), Some("nosniff"));
    // Nothing else is served: other names, paths, methods.
    for path in [
        "/",
        "/../config.edn",
        &format!("/{}", name.to_uppercase()),
        "/api/state",
    ] {
        assert_eq!(
            request(addr, "GET", path, &host, b"").await.status,
            404,
            "{path}"
        );
    }
    assert_eq!(
        request(addr, "POST", &format!("/{name}"), &host, b"")
            .await
            .status,
        405
    );
    // The store keeps at most two: the first image is gone after two more.
    for _ in 0..2 {
        bot.send("!gi another yeti").await;
        let _ = next_answer(&mut events).await;
        let _ = next_answer(&mut events).await;
    }
    assert_eq!(
        request(addr, "GET", &format!("/{name}"), &host, b"")
            .await
            .status,
        404
    );
    let (code, _) = bot.stop();
    assert_eq!(code, Some(0));
}

/// The console carries no platform identity: the automatic example is answered normally
/// with nothing sent to Clef or GitHub, and a request that copies a Slack user's identity
/// into the console's API is refused before it becomes a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_never_reaches_github_or_clef_and_takes_no_copied_identity() {
    let s = crate::github::setup().await;
    let edn = std::fs::read_to_string(s.bot_config()).expect("config");
    let dir = Workdir::new();
    for entry in std::fs::read_dir(s.bot_dir()).expect("dir").flatten() {
        let _ = std::fs::copy(entry.path(), dir.path.join(entry.file_name()));
    }
    let bot = Console::start(&dir, &edn, &[], &[]);
    let mut events = bot.events().await;
    bot.send("!ai In your-org/your-repo, fix the typo in src/example.clj")
        .await;
    assert_eq!(
        next_answer(&mut events).await["text"],
        "You would change helo to hello."
    );
    let copied = bot
        .post(
            "/api/messages",
            &json!({"room": "general", "text": "!ai approve 0123456789abcdef",
                    "user": "U1", "adapter": "slack", "event": {"user": "U1", "channel": "C1"}}),
        )
        .await;
    assert_eq!(copied.status, 400, "{copied:?}");
    assert_eq!(s.model.count(crate::github::CLEF), 0);
    assert!(s.github.called().is_empty());
    assert!(s.github.rest_requests().is_empty());
    let (code, lines) = bot.stop();
    assert_eq!(code, Some(0), "{lines:?}");
    crate::github::clean(&lines.join("\n"));
}
