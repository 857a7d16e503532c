//! The console page in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver), against the real binary and the provider fixture. `.ci/run` installs
//! `chromium` and `chromium-driver` when they are missing; elsewhere, install them with
//! `apt install chromium chromium-driver`.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use provider_fixture::client::request;
use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};

use crate::Workdir;

/// The WebDriver key code of Enter and of the up arrow.
const ENTER: &str = "\u{E007}";
const ARROW_UP: &str = "\u{E013}";
/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one headless Chromium session.
struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    _profile: Workdir,
}

impl Browser {
    async fn start() -> Self {
        let chromedriver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("chromedriver is missing: install chromium and chromium-driver (apt install chromium chromium-driver)");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        // chromedriver takes a moment to listen; its status endpoint says when it is ready.
        let mut ready = false;
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                let status = call(addr, "GET", "/status", None).await;
                if status["value"]["ready"] == true {
                    ready = true;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(ready, "chromedriver never became ready");
        let profile = Workdir::new();
        let session = call(
            addr,
            "POST",
            "/session",
            Some(json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": "/usr/bin/chromium",
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--no-first-run",
                        format!("--user-data-dir={}", profile.path.display()),
                    ],
                },
            }}})),
        )
        .await;
        let id = session["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {session}"))
            .to_owned();
        let browser = Self {
            driver,
            addr,
            session: id,
            _profile: profile,
        };
        browser
            .command("POST", "timeouts", json!({"script": 30_000, "implicit": 0}))
            .await;
        browser
    }

    async fn command(&self, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}/{path}", self.session);
        let reply = call(self.addr, method, &path, Some(body)).await;
        assert!(
            reply["value"].get("error").is_none(),
            "WebDriver {path}: {reply}"
        );
        reply["value"].clone()
    }

    async fn open(&self, url: &str) {
        self.command("POST", "url", json!({"url": url})).await;
    }

    async fn script(&self, source: &str) -> Value {
        self.command(
            "POST",
            "execute/sync",
            json!({"script": source, "args": []}),
        )
        .await
    }

    /// Waits until the JavaScript expression `probe` is truthy on the page (checked now and
    /// after every change to the document) and returns its value.
    async fn until(&self, probe: &str) -> Value {
        let source = format!(
            "const done = arguments[arguments.length - 1];
             const probe = () => {{ try {{ return ({probe}); }} catch (e) {{ return null; }} }};
             const first = probe();
             if (first) {{ done(first); return; }}
             const watcher = new MutationObserver(() => {{
               const value = probe();
               if (value) {{ watcher.disconnect(); done(value); }}
             }});
             watcher.observe(document, {{childList: true, subtree: true, characterData: true, attributes: true}});"
        );
        self.command(
            "POST",
            "execute/async",
            json!({"script": source, "args": []}),
        )
        .await
    }

    /// The element `selector` finds.
    async fn element(&self, selector: &str) -> String {
        let found = self
            .command(
                "POST",
                "element",
                json!({"using": "css selector", "value": selector}),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {selector}: {found}"))
            .to_owned()
    }

    async fn type_into(&self, selector: &str, text: &str) {
        let element = self.element(selector).await;
        self.command(
            "POST",
            &format!("element/{element}/value"),
            json!({"text": text}),
        )
        .await;
    }

    /// Clicks the element a script returns.
    async fn click(&self, finder: &str) {
        let found = self.script(finder).await;
        let element = found[ELEMENT].as_str().expect("an element to click");
        self.command("POST", &format!("element/{element}/click"), json!({}))
            .await;
    }

    /// Ends the session and stops chromedriver (off the async runtime, as `Drop` blocks).
    async fn close(self) {
        let _ = tokio::task::spawn_blocking(move || drop(self)).await;
    }
}

impl Drop for Browser {
    /// chromedriver and the browser it started must not outlive a failed test: the session
    /// is ended (which closes Chromium) with a plain blocking request, then chromedriver
    /// stops.
    fn drop(&mut self) {
        use std::io::{Read, Write};
        if let Ok(mut stream) = std::net::TcpStream::connect(self.addr) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.session, self.addr
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let mut reply = [0u8; 1024];
                let _ = stream.read(&mut reply);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The bot process, killed if a test fails before stopping it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

async fn call(addr: SocketAddr, method: &str, path: &str, body: Option<Value>) -> Value {
    let mut headers = vec![("Host", addr.to_string())];
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    if !text.is_empty() {
        headers.push(("Content-Type", "application/json".into()));
    }
    let reply = request(addr, method, path, &headers, text.as_bytes()).await;
    serde_json::from_slice(&reply.body).unwrap_or(Value::Null)
}

/// The bot with its console on a free port; the console URL it printed.
fn bot(dir: &std::path::Path, edn: &str) -> (Child, String) {
    bot_on(dir, edn, 0)
}

/// The bot with its console on `port` (0: any free one); the console URL it printed.
fn bot_on(dir: &std::path::Path, edn: &str, port: u16) -> (Child, String) {
    use std::io::{BufRead, BufReader};
    let file = dir.join("config.edn");
    std::fs::write(&file, edn).expect("write config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_yetibot"))
        .env_clear()
        .current_dir(dir)
        .env("CONFIG_PATH", &file)
        .env("YETIBOT_WEB_PORT", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.strip_prefix("Open the web console: ")
                .map(str::to_owned)
        })
        .expect("the console URL");
    (child, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_runs_commands_streams_ai_progress_and_keeps_history_across_a_reload() {
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
        Reply::json(script::chat_completion(
            "Two **facts**:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>window.injected = true</script>",
        ))
        .slow(Duration::from_millis(1_500)),
    );
    let dir = Workdir::new();
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
        fixture.url("/v1")
    );
    // The directory outlives the bot: its history store is in there.
    let path = dir.path.clone();
    let (child, url) = tokio::task::spawn_blocking(move || bot(&path, &edn))
        .await
        .expect("the bot starts");
    let mut yetibot = Running(child);
    let browser = Browser::start().await;

    // The token URL sets the cookie and leaves the address bar clean.
    browser.open(&url).await;
    browser
        .until("document.getElementById('connection').textContent === 'connected'")
        .await;
    let location = browser
        .script("return location.pathname + location.search")
        .await;
    assert_eq!(location, "/");

    // A plain command.
    browser
        .type_into("#composer-text", &format!("!list hi | count{ENTER}"))
        .await;
    browser
        .until("[...document.querySelectorAll('.message.answer .body')].some(b => b.textContent === '1')")
        .await;

    // An AI prompt: the working card with the tool call, then the captioned answer with its
    // table, and the card gone.
    browser
        .type_into("#composer-text", &format!("!ai What can you do?{ENTER}"))
        .await;
    let card = browser
        .until("(() => { const c = document.querySelector('.message.status'); return c && c.textContent.includes('yetibot/help') ? c.textContent : null; })()")
        .await;
    assert!(
        card.as_str().is_some_and(|c| c.contains("Working")),
        "{card}"
    );
    let cells = browser
        .until("(() => { const cells = [...document.querySelectorAll('.message.answer table td')].map(td => td.textContent); return cells.length ? cells.join(',') : null; })()")
        .await;
    assert_eq!(cells, "1,2");
    let caption = browser
        .until("(() => { const c = [...document.querySelectorAll('.message.answer .caption')].pop(); return c ? c.textContent : null; })()")
        .await;
    assert!(
        caption
            .as_str()
            .is_some_and(|c| c.starts_with("m1 · ") && c.contains("1 tool")),
        "{caption}"
    );
    browser
        .until("!document.querySelector('.message.status')")
        .await;
    // Markdown became elements; the answer's markup stayed text.
    let strong = browser
        .script("return [...document.querySelectorAll('.message.answer strong')].map(s => s.textContent).join(',')")
        .await;
    assert_eq!(strong, "facts");
    let injected = browser
        .script("return [window.injected === true, document.querySelectorAll('.message script').length]")
        .await;
    assert_eq!(injected, json!([false, 0]));

    // The buttons under the answer, and Show details.
    let labels = browser
        .script("return [...[...document.querySelectorAll('.message.answer')].pop().querySelectorAll('.actions button')].map(b => b.textContent)")
        .await;
    assert_eq!(labels, json!(["Run again", "Help", "Show details"]));
    browser
        .click("return [...[...document.querySelectorAll('.message.answer')].pop().querySelectorAll('.actions button')].find(b => b.textContent === 'Show details')")
        .await;
    browser
        .until("[...document.querySelectorAll('.message.notice')].some(n => n.textContent.includes('yetibot/help') && n.textContent.includes('1 of 6'))")
        .await;

    // The up arrow brings back the last command.
    browser.type_into("#composer-text", ARROW_UP).await;
    let recalled = browser
        .script("return document.getElementById('composer-text').value")
        .await;
    assert_eq!(recalled, "!ai What can you do?");

    // After a reload the conversation is still there.
    browser.command("POST", "refresh", json!({})).await;
    browser
        .until("document.getElementById('connection').textContent === 'connected'")
        .await;
    let kept = browser
        .until("(() => { const texts = [...document.querySelectorAll('.message .body')].map(b => b.textContent); return texts.length >= 4 ? texts : null; })()")
        .await;
    let kept: Vec<&str> = kept
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(kept.contains(&"!list hi | count"), "{kept:?}");
    assert!(kept.contains(&"1"), "{kept:?}");
    assert!(kept.iter().any(|t| t.contains("Two facts")), "{kept:?}");

    // Editing the command re-runs it, and its answer is replaced in place.
    browser
        .click("return [...document.querySelectorAll('.message.user')].find(m => m.textContent.includes('!list hi | count')).querySelector('.links button:last-child')")
        .await;
    let editor = browser.element(".edit-box").await;
    browser
        .command("POST", &format!("element/{editor}/clear"), json!({}))
        .await;
    browser
        .command(
            "POST",
            &format!("element/{editor}/value"),
            json!({"text": format!("!list a b | count{ENTER}")}),
        )
        .await;
    browser
        .until("[...document.querySelectorAll('.message.answer .body')].some(b => b.textContent === '2')")
        .await;
    let counts = browser
        .script("return [...document.querySelectorAll('.message.answer .body')].filter(b => b.textContent === '1' || b.textContent === '2').map(b => b.textContent)")
        .await;
    assert_eq!(
        counts,
        json!(["2"]),
        "the old answer was replaced, not kept"
    );
    let edited = browser
        .script("return [...document.querySelectorAll('.message.user')].some(m => m.textContent.includes('!list a b | count') && m.textContent.includes('(edited)'))")
        .await;
    assert_eq!(edited, true);
    browser.close().await;
    let _ = Command::new("kill")
        .args(["-TERM", &yetibot.0.id().to_string()])
        .status();
    let exit = tokio::task::spawn_blocking(move || yetibot.0.wait())
        .await
        .expect("wait")
        .expect("exit");
    assert_eq!(exit.code(), Some(0));
}

/// Stops the bot with SIGTERM and checks it exits cleanly.
async fn stop(yetibot: Running) {
    let _ = Command::new("kill")
        .args(["-TERM", &yetibot.0.id().to_string()])
        .status();
    let mut yetibot = yetibot;
    let exit = tokio::task::spawn_blocking(move || yetibot.0.wait())
        .await
        .expect("wait")
        .expect("exit");
    assert_eq!(exit.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_survives_a_restart_threads_carry_their_command_and_new_replies_are_marked() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Four.")),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Six.")),
    );
    let dir = Workdir::new();
    let edn = format!(
        r#"{{:yetibot {{:ai {{:providers [{{:name "local" :url "{}" :model "m1"}}]}}}}}}"#,
        fixture.url("/v1")
    );
    // One port for both runs, as a restarted bot keeps its configured port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let (path, config) = (dir.path.clone(), edn.clone());
    let (child, url) = tokio::task::spawn_blocking(move || bot_on(&path, &config, port))
        .await
        .expect("the bot starts");
    let yetibot = Running(child);
    let browser = Browser::start().await;
    browser.open(&url).await;
    browser
        .until("document.getElementById('connection').textContent === 'connected'")
        .await;

    // A thread on an answer gives the model the question and the answer, then the thread.
    browser
        .type_into(
            "#composer-text",
            &format!("!ai --no-tools What is 2+2?{ENTER}"),
        )
        .await;
    browser
        .until("[...document.querySelectorAll('.message.answer .body')].some(b => b.textContent.startsWith('Four.'))")
        .await;
    browser
        .click("return [...document.querySelectorAll('.message.answer')].find(m => m.textContent.includes('Four.')).querySelector('.links button')")
        .await;
    browser
        .type_into("#thread-text", &format!("!ai --no-tools And 3+3?{ENTER}"))
        .await;
    browser
        .until("[...document.querySelectorAll('#thread-messages .message.answer .body')].some(b => b.textContent.startsWith('Six.'))")
        .await;
    let requests: Vec<_> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(requests.len(), 2);
    let body: Value = serde_json::from_slice(&requests[1].body).expect("json");
    let sent: Vec<String> = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["content"].to_string())
        .collect();
    let at = |needle: &str| {
        sent.iter()
            .position(|c| c.contains(needle))
            .unwrap_or_else(|| panic!("{needle} was not sent: {sent:#?}"))
    };
    assert!(at("What is 2+2?") < at("Four.") && at("Four.") < at("And 3+3?"));
    // In a narrow window the open thread covers the page, with its close button.
    browser
        .command("POST", "window/rect", json!({"width": 700, "height": 900}))
        .await;
    let overlay = browser
        .until("(() => { const t = document.getElementById('thread'); const s = getComputedStyle(t); return s.position === 'fixed' && t.getBoundingClientRect().width >= window.innerWidth - 1 ? s.position : null; })()")
        .await;
    assert_eq!(overlay, "fixed");
    browser
        .click("return document.getElementById('thread-close')")
        .await;
    browser
        .command("POST", "window/rect", json!({"width": 1280, "height": 900}))
        .await;

    // A reply that arrives while the reader is scrolled up is marked; the marker scrolls down.
    browser
        .type_into("#composer-text", &format!("!range 60{ENTER}"))
        .await;
    browser
        .until("[...document.querySelectorAll('.message.answer .body')].some(b => b.textContent.includes('59'))")
        .await;
    browser
        .script("const m = document.getElementById('messages'); m.scrollTop = 0; return m.scrollHeight > m.clientHeight")
        .await;
    browser
        .script("fetch('/api/messages', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({room: 'general', text: '!echo while you were away'})}); return true")
        .await;
    browser
        .until("!document.getElementById('new-messages').hidden")
        .await;
    browser
        .click("return document.getElementById('new-messages')")
        .await;
    let at_bottom = browser
        .until("(() => { const m = document.getElementById('messages'); return document.getElementById('new-messages').hidden && m.scrollHeight - m.scrollTop - m.clientHeight < 40; })()")
        .await;
    assert_eq!(at_bottom, true);
    browser
        .until("[...document.querySelectorAll('.message.answer .body')].some(b => b.textContent === 'while you were away')")
        .await;

    // A restart on the same port: the open tab reconnects by itself and shows the stored
    // conversation, and so does a reload; the same link still opens the console.
    stop(yetibot).await;
    browser
        .until("document.getElementById('connection').textContent === 'reconnecting…'")
        .await;
    let (path, config) = (dir.path.clone(), edn.clone());
    let (child, again) = tokio::task::spawn_blocking(move || bot_on(&path, &config, port))
        .await
        .expect("the bot starts again");
    let yetibot = Running(child);
    assert_eq!(again, url, "the token is kept across restarts");
    browser
        .until("document.getElementById('connection').textContent === 'connected' && [...document.querySelectorAll('.message.restored .body')].some(b => b.textContent === 'while you were away')")
        .await;
    browser.command("POST", "refresh", json!({})).await;
    let restored = browser
        .until("(() => { const texts = [...document.querySelectorAll('.message.restored .body')].map(b => b.textContent); return texts.includes('!ai --no-tools What is 2+2?') && texts.some(t => t.startsWith('Four.')) ? texts.length : null; })()")
        .await;
    assert!(restored.as_u64().is_some_and(|n| n >= 6), "{restored}");
    // ↑ recalls the room's commands after the reload, one per press, newest first.
    browser.type_into("#composer-text", ARROW_UP).await;
    let recalled = browser
        .script("return document.getElementById('composer-text').value")
        .await;
    assert_eq!(recalled, "!range 60");
    browser.type_into("#composer-text", ARROW_UP).await;
    let recalled = browser
        .script("return document.getElementById('composer-text').value")
        .await;
    assert_eq!(recalled, "!ai --no-tools And 3+3?");
    browser
        .script("document.getElementById('composer-text').value = ''; return true")
        .await;
    // The reconnected page works: a new command is answered.
    browser
        .type_into("#composer-text", &format!("!echo after the restart{ENTER}"))
        .await;
    browser
        .until("[...document.querySelectorAll('.message.answer:not(.restored) .body')].some(b => b.textContent === 'after the restart')")
        .await;
    browser.close().await;
    stop(yetibot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_attached_on_the_page_reaches_clairic_with_the_command() {
    use std::os::unix::fs::PermissionsExt;
    const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";
    let fixture = Fixture::start().await.expect("fixture");
    let run = format!("/client/v4/accounts/{ACCOUNT}/ai/run/@cf/cloudflare/clairic");
    fixture.respond_with(&run, provider_fixture::workers::answer);
    let dir = Workdir::new();
    let key = dir.path.join("clef-token");
    std::fs::write(&key, "cf-token-for-the-page-test").expect("key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let image = dir.path.join("red-2x3.png");
    std::fs::write(&image, image_fixture::PNG).expect("image");
    let edn = format!(
        r#"{{:yetibot {{:ai {{:intent-router {{:account-id "{ACCOUNT}" :key-file "{}" :api-url "{}"}}}}}}}}"#,
        key.display(),
        fixture.url("/client/v4")
    );
    let path = dir.path.clone();
    let (child, url) = tokio::task::spawn_blocking(move || bot(&path, &edn))
        .await
        .expect("the bot starts");
    let yetibot = Running(child);
    let browser = Browser::start().await;
    browser.open(&url).await;
    browser
        .until("document.getElementById('connection').textContent === 'connected'")
        .await;
    // Choosing a file uploads it and shows it beside the command box until it is sent.
    browser
        .type_into(
            "#composer input[type=file]",
            image.to_str().expect("utf-8 path"),
        )
        .await;
    browser
        .until("document.querySelector('#composer .files li span')?.textContent === 'red-2x3.png'")
        .await;
    browser
        .type_into("#composer-text", &format!("!clairic count cats{ENTER}"))
        .await;
    browser
        .until("[...document.querySelectorAll('.message.answer .body')].some(b => b.textContent.startsWith('count:'))")
        .await;
    let sent = browser
        .script("return [...document.querySelectorAll('.message.user')].some(m => m.textContent.includes('!clairic count cats') && m.textContent.includes('📎 red-2x3.png'))")
        .await;
    assert_eq!(sent, true, "the sent message shows its image");
    let chips = browser
        .script("return document.querySelectorAll('#composer .files li').length")
        .await;
    assert_eq!(chips, json!(0), "the attachment went with the message");
    // An image pasted into the command box is attached as well.
    let base64 = yetibot_image_fetch::Image::from_bytes(1, "fixture", image_fixture::PNG)
        .expect("a PNG")
        .to_base64();
    browser
        .script(&format!(
            "const bytes = Uint8Array.from(atob('{base64}'), (c) => c.charCodeAt(0));
             const data = new DataTransfer();
             data.items.add(new File([bytes], 'pasted.png', {{ type: 'image/png' }}));
             document.getElementById('composer-text').dispatchEvent(
               new ClipboardEvent('paste', {{ clipboardData: data, bubbles: true, cancelable: true }}));
             return true;"
        ))
        .await;
    browser
        .until("document.querySelector('#composer .files li span')?.textContent === 'pasted.png'")
        .await;
    let request = fixture
        .requests()
        .into_iter()
        .find(|r| r.path == run)
        .expect("Clairic was asked");
    let body: Value = serde_json::from_slice(&request.body).expect("JSON");
    assert_eq!(body["images"][0]["content_type"], "image/png");
    assert_eq!(body["fields"]["count"]["type"], "number");
    browser.close().await;
    stop(yetibot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_image_is_shown_on_the_page_and_an_attached_one_is_edited() {
    const KEY: &str = "xai-key-for-the-page-test";
    let fixture = Fixture::start().await.expect("fixture");
    provider_fixture::xai_images::XaiImages::new(KEY).mount(&fixture, "/x/v1");
    let dir = Workdir::new();
    let image = dir.path.join("red-2x3.png");
    std::fs::write(&image, image_fixture::PNG).expect("image");
    let edn = format!(
        r#"{{:yetibot {{:xai {{:key "{KEY}" :api-url "{}"}}}}}}"#,
        fixture.url("/x/v1")
    );
    let path = dir.path.clone();
    let (child, url) = tokio::task::spawn_blocking(move || bot(&path, &edn))
        .await
        .expect("the bot starts");
    let yetibot = Running(child);
    let browser = Browser::start().await;
    browser.open(&url).await;
    browser
        .until("document.getElementById('connection').textContent === 'connected'")
        .await;
    browser
        .type_into(
            "#composer-text",
            &format!("!gi a yeti commuting by helicopter{ENTER}"),
        )
        .await;
    // The page loads the image from the console and the browser decodes it: 4×3 pixels.
    assert_eq!(decoded_answer_image(&browser, 1).await, json!([4, 3]));
    let text = browser
        .script("return [...document.querySelectorAll('.message.answer .body')].map(b => b.textContent).join('|')")
        .await;
    assert!(
        text.as_str()
            .is_some_and(|t| t.contains("Generated image gi-")),
        "{text}"
    );
    // An image attached to the message is edited: the answer shows xAI's 3×4 result.
    browser
        .type_into(
            "#composer input[type=file]",
            image.to_str().expect("utf-8 path"),
        )
        .await;
    browser
        .until("document.querySelector('#composer .files li span')?.textContent === 'red-2x3.png'")
        .await;
    browser
        .type_into("#composer-text", &format!("!gi make it blue{ENTER}"))
        .await;
    assert_eq!(decoded_answer_image(&browser, 2).await, json!([3, 4]));
    assert_eq!(fixture.count("/x/v1/images/edits"), 1);
    browser.close().await;
    stop(yetibot).await;
}

/// Waits for the page to show `count` answer images, then for the browser to decode the
/// last one; its width and height in pixels (`null` when it cannot be decoded). Loading an
/// image changes no DOM node, so the wait for the pixels is the image's own `decode()`.
async fn decoded_answer_image(browser: &Browser, count: usize) -> Value {
    browser
        .until(&format!(
            "document.querySelectorAll('.message.answer img').length >= {count}"
        ))
        .await;
    browser
        .command(
            "POST",
            "execute/async",
            json!({"script": "const done = arguments[arguments.length - 1];
                const image = [...document.querySelectorAll('.message.answer img')].pop();
                image.decode().then(() => done([image.naturalWidth, image.naturalHeight]), () => done(null));",
                "args": []}),
        )
        .await
}
