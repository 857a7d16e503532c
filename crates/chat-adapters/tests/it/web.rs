//! The web console over real loopback HTTP: every refusal rule with raw requests, the API,
//! the event stream and its resumption, and the console's outbox.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use yetibot_chat_adapters::web::{AccessToken, Console, ConsoleBounds, ConsoleOptions, Transcript};
use yetibot_chat_adapters::{
    Action, Author, Button, EventKind, Events, HistoryError, HistoryLimits, HistoryMessage,
    Incoming, Outbox, Outgoing, Role, intake,
};

const TOKEN: &str = "test-token-0123456789abcdef0123456789abcdef";

struct Running {
    addr: SocketAddr,
    events: Events,
    outbox: Arc<dyn Outbox>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<()>,
}

/// A transcript of fixed messages that counts how often it was read.
struct Fixed {
    messages: Vec<HistoryMessage>,
    reads: std::sync::atomic::AtomicUsize,
}

impl Transcript for Fixed {
    fn recent<'a>(
        &'a self,
        room: &'a str,
        limit: usize,
    ) -> futures_util::future::BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let found = if room == "general" {
            self.messages.iter().take(limit).cloned().collect()
        } else {
            Vec::new()
        };
        Box::pin(async move { Ok(found) })
    }
}

impl Running {
    async fn start(bounds: ConsoleBounds, queue: usize) -> Self {
        Self::start_with(bounds, queue, None).await
    }

    async fn start_with(
        bounds: ConsoleBounds,
        queue: usize,
        transcript: Option<Arc<dyn Transcript>>,
    ) -> Self {
        let (intake, events) = intake(queue);
        let console = Console::bind(
            ConsoleOptions {
                addr: "127.0.0.1:0".parse().expect("addr"),
                token: AccessToken::new(TOKEN).expect("token"),
                operator: Author {
                    id: "op-1".into(),
                    name: "operator".into(),
                    is_bot: false,
                },
                bot: Author {
                    id: "yetibot".into(),
                    name: "yetibot".into(),
                    is_bot: true,
                },
                connection: "local".into(),
                bounds,
                transcript,
            },
            intake,
        )
        .await
        .expect("console binds");
        let addr = console.local_addr();
        let outbox = console.outbox();
        assert_eq!(console.url(), format!("http://{addr}/?token={TOKEN}"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(console.serve(async move {
            let _ = stopped.await;
        }));
        Self {
            addr,
            events,
            outbox,
            stop: Some(stop),
            served,
        }
    }

    async fn default() -> Self {
        Self::start(ConsoleBounds::default(), 16).await
    }

    fn host(&self) -> String {
        self.addr.to_string()
    }

    fn cookie(&self) -> String {
        format!("yetibot_console_{}={TOKEN}", self.addr.port())
    }

    /// A request with the right host and cookie plus `extra` headers.
    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Response {
        let cookie = self.cookie();
        let mut headers = vec![("Host", self.host()), ("Cookie", cookie)];
        if body.is_some() {
            headers.push(("Content-Type", "application/json".into()));
        }
        let body = body.map(Value::to_string).unwrap_or_default();
        raw(self.addr, method, path, &headers, body.as_bytes()).await
    }

    async fn next_event(&mut self) -> Incoming {
        tokio::time::timeout(Duration::from_secs(5), self.events.next())
            .await
            .expect("an event in time")
            .expect("an event")
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(10), self.served)
            .await
            .expect("the console stops")
            .expect("no panic");
    }
}

use provider_fixture::client::{
    EventStream, RawResponse as Response, read_response, request as raw,
};

fn assert_no_cors(response: &Response) {
    assert!(!response.has_cors_headers(), "{:?}", response.headers);
}

#[tokio::test]
async fn requests_without_the_token_get_401_in_json() {
    let console = Running::default().await;
    let host = console.host();
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/assets/app.js"),
        ("GET", "/api/state"),
        ("GET", "/api/events"),
        ("POST", "/api/messages"),
        ("GET", "/?token=wrong-token-0123456789abcdef0123456789"),
    ] {
        let r = raw(console.addr, method, path, &[("Host", host.clone())], b"").await;
        assert_eq!(r.status, 401, "{method} {path}");
        assert!(r.json()["error"].as_str().is_some());
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_no_cors(&r);
    }
    let wrong = raw(
        console.addr,
        "GET",
        "/api/state",
        &[
            ("Host", host.clone()),
            (
                "Cookie",
                format!("yetibot_console_{}=nope", console.addr.port()),
            ),
            ("Authorization", "Bearer also-wrong".into()),
        ],
        b"",
    )
    .await;
    assert_eq!(wrong.status, 401);
    // A browser opening the page without the token (an old link) is told how to get in,
    // in HTML that carries nothing of the console.
    for path in ["/", "/?token=wrong-token-0123456789abcdef0123456789"] {
        let page = raw(
            console.addr,
            "GET",
            path,
            &[
                ("Host", host.clone()),
                ("Accept", "text/html,application/xhtml+xml".into()),
            ],
            b"",
        )
        .await;
        assert_eq!(page.status, 401, "{path}");
        assert_eq!(
            page.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        let text = String::from_utf8_lossy(&page.body).into_owned();
        assert!(text.contains("yetibot console-url"), "{text}");
        assert!(!text.contains("app.js") && !text.contains("general"));
        assert_no_cors(&page);
    }
    console.stop().await;
}

#[tokio::test]
async fn a_foreign_host_origin_or_fetch_site_gets_403_even_with_the_token() {
    let console = Running::default().await;
    let port = console.addr.port();
    let cookie = console.cookie();
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![
            ("Host", format!("evil.test:{port}")),
            ("Cookie", cookie.clone()),
        ],
        vec![
            ("Host", format!("127.0.0.1:{}", port.wrapping_add(1))),
            ("Cookie", cookie.clone()),
        ],
        vec![("Cookie", cookie.clone())],
        vec![
            ("Host", console.host()),
            ("Cookie", cookie.clone()),
            ("Origin", "null".into()),
        ],
        vec![
            ("Host", console.host()),
            ("Cookie", cookie.clone()),
            ("Origin", "http://evil.test".into()),
        ],
        vec![
            ("Host", console.host()),
            ("Cookie", cookie.clone()),
            ("Origin", format!("https://{}", console.host())),
        ],
        vec![
            ("Host", console.host()),
            ("Cookie", cookie.clone()),
            ("Sec-Fetch-Site", "cross-site".into()),
        ],
    ];
    for headers in cases {
        let r = raw(console.addr, "GET", "/api/state", &headers, b"").await;
        assert_eq!(r.status, 403, "{headers:?}");
        assert!(r.json()["error"].as_str().is_some());
        assert_no_cors(&r);
    }
    // A foreign host with no token at all is still 403: the host is checked first.
    let r = raw(
        console.addr,
        "GET",
        "/",
        &[("Host", format!("rebound.evil.test:{port}"))],
        b"",
    )
    .await;
    assert_eq!(r.status, 403);
    // The same origin, and every loopback name, pass.
    for host in [
        console.host(),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
    ] {
        let r = raw(
            console.addr,
            "GET",
            "/api/state",
            &[
                ("Host", host.clone()),
                ("Cookie", cookie.clone()),
                ("Origin", format!("http://{host}")),
                ("Sec-Fetch-Site", "same-origin".into()),
            ],
            b"",
        )
        .await;
        assert_eq!(r.status, 200, "{host}");
    }
    console.stop().await;
}

#[tokio::test]
async fn api_writes_must_be_json_and_at_most_one_mebibyte() {
    let mut console = Running::default().await;
    let base = vec![("Host", console.host()), ("Cookie", console.cookie())];
    let body = json!({"room": "general", "text": "hi"}).to_string();
    let plain = raw(
        console.addr,
        "POST",
        "/api/messages",
        &base,
        body.as_bytes(),
    )
    .await;
    assert_eq!(plain.status, 415);
    let mut text = base.clone();
    text.push(("Content-Type", "text/plain".into()));
    let r = raw(
        console.addr,
        "POST",
        "/api/messages",
        &text,
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.status, 415);
    let mut json_headers = base.clone();
    json_headers.push(("Content-Type", "application/json".into()));
    let big = format!(
        r#"{{"room":"general","text":"{}"}}"#,
        "x".repeat((1 << 20) + 10)
    );
    let r = raw(
        console.addr,
        "POST",
        "/api/messages",
        &json_headers,
        big.as_bytes(),
    )
    .await;
    assert_eq!(r.status, 413);
    assert_no_cors(&r);
    // A chunked body that grows past the bound without declaring a length.
    let mut stream = TcpStream::connect(console.addr).await.expect("connect");
    let head = format!(
        "POST /api/messages HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        console.host(),
        console.cookie()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    let chunk = vec![b' '; 64 * 1024];
    let mut refused = false;
    for _ in 0..20 {
        let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
        if stream.write_all(&frame).await.is_err() {
            refused = true;
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let r = read_response(&mut stream).await;
    assert_eq!(r.status, 413, "refused early: {refused}");
    // Malformed JSON and unknown fields (such as an author) are refused with 400.
    for bad in [
        "{not json".to_owned(),
        json!({"room": "general", "text": "hi", "author": "admin"}).to_string(),
        json!({"room": "general"}).to_string(),
    ] {
        let r = raw(
            console.addr,
            "POST",
            "/api/messages",
            &json_headers,
            bad.as_bytes(),
        )
        .await;
        assert_eq!(r.status, 400, "{bad}");
    }
    // Nothing above reached the bot.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), console.events.next())
            .await
            .is_err()
    );
    console.stop().await;
}

#[tokio::test]
async fn the_first_visit_moves_the_token_into_a_strict_cookie() {
    let console = Running::default().await;
    let r = raw(
        console.addr,
        "GET",
        &format!("/?token={TOKEN}"),
        &[("Host", console.host())],
        b"",
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/"));
    let cookie = r.header("set-cookie").expect("a cookie");
    assert_eq!(
        cookie,
        format!(
            "yetibot_console_{}={TOKEN}; HttpOnly; SameSite=Strict; Path=/",
            console.addr.port()
        )
    );
    let page = console.call("GET", "/", None).await;
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("<title>Yetibot console</title>"));
    assert!(
        page.header("content-security-policy")
            .is_some_and(|csp| csp.contains("script-src 'self'"))
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    for asset in ["/assets/app.js", "/assets/style.css"] {
        assert_eq!(console.call("GET", asset, None).await.status, 200);
    }
    let missing = console.call("GET", "/nope", None).await;
    assert_eq!(missing.status, 404);
    assert!(missing.json()["error"].is_string());
    let options = console.call("OPTIONS", "/api/messages", None).await;
    assert_eq!(options.status, 405);
    assert_no_cors(&options);
    console.stop().await;
}

#[tokio::test]
async fn only_loopback_addresses_are_served() {
    for addr in ["0.0.0.0:0", "192.0.2.1:0", "[::]:0"] {
        let (intake, _events) = intake(1);
        let error = Console::bind(
            ConsoleOptions {
                addr: addr.parse().expect("addr"),
                token: AccessToken::generate().expect("token"),
                operator: Author {
                    id: "op".into(),
                    name: "op".into(),
                    is_bot: false,
                },
                bot: Author {
                    id: "bot".into(),
                    name: "bot".into(),
                    is_bot: true,
                },
                connection: "local".into(),
                bounds: ConsoleBounds::default(),
                transcript: None,
            },
            intake,
        )
        .await
        .expect_err("refused");
        assert!(error.to_string().contains("loopback"), "{error}");
    }
    // [::1] works where the machine has IPv6 loopback.
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        let (intake, _events) = intake(1);
        let console = Console::bind(
            ConsoleOptions {
                addr: "[::1]:0".parse().expect("addr"),
                token: AccessToken::generate().expect("token"),
                operator: Author {
                    id: "op".into(),
                    name: "op".into(),
                    is_bot: false,
                },
                bot: Author {
                    id: "bot".into(),
                    name: "bot".into(),
                    is_bot: true,
                },
                connection: "local".into(),
                bounds: ConsoleBounds::default(),
                transcript: None,
            },
            intake,
        )
        .await
        .expect("[::1] binds");
        assert!(console.url().starts_with("http://[::1]:"));
    }
}

#[tokio::test]
async fn a_message_reaches_the_bot_as_the_operator_and_answers_appear() {
    let mut console = Running::default().await;
    let sent = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "text": "!echo hi | count"})),
        )
        .await;
    assert_eq!(sent.status, 202);
    let id = sent.json()["id"].as_str().expect("id").to_owned();
    let incoming = console.next_event().await;
    assert_eq!(incoming.event.message_id, id);
    assert_eq!(incoming.event.author.id, "op-1");
    assert!(!incoming.event.author.is_bot);
    assert_eq!(incoming.event.place.room, "general");
    assert_eq!(incoming.event.place.thread, None);
    assert_eq!(
        incoming.event.kind,
        EventKind::Message {
            text: "!echo hi | count".into()
        }
    );
    let mut answer = Outgoing::text(Role::Answer, "1");
    answer.caption = Some("m · 0.1 s · cost n/a".into());
    answer.buttons = vec![Button {
        action: Action::RunAgain,
        token: "rerun-1".into(),
    }];
    let posted = incoming
        .outbox
        .post(&incoming.event.place, vec![answer])
        .await
        .expect("posted");
    let state = console
        .call("GET", "/api/state?room=general", None)
        .await
        .json();
    let messages = state["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["author"]["id"], "op-1");
    assert_eq!(messages[1]["role"], "answer");
    assert_eq!(messages[1]["text"], "1");
    assert_eq!(messages[1]["caption"], "m · 0.1 s · cost n/a");
    assert_eq!(messages[1]["buttons"][0]["label"], "Run again");
    // The button the page shows can be pressed; an invented one cannot.
    let pressed = console
        .call(
            "POST",
            "/api/press",
            Some(&json!({"message": posted.ids[0], "action": "run-again", "token": "rerun-1"})),
        )
        .await;
    assert_eq!(pressed.status, 202);
    let press = console.next_event().await;
    assert_eq!(press.event.message_id, posted.ids[0]);
    assert_eq!(
        press.event.kind,
        EventKind::Pressed {
            action: Action::RunAgain,
            token: "rerun-1".into()
        }
    );
    for forged in [
        json!({"message": posted.ids[0], "action": "run-again", "token": "forged"}),
        json!({"message": id, "action": "run-again", "token": "rerun-1"}),
    ] {
        assert_eq!(
            console
                .call("POST", "/api/press", Some(&forged))
                .await
                .status,
            404
        );
    }
    let unknown = json!({"message": posted.ids[0], "action": "launch", "token": "rerun-1"});
    assert_eq!(
        console
            .call("POST", "/api/press", Some(&unknown))
            .await
            .status,
        400
    );
    // Edits carry the next revision.
    let edited = console
        .call(
            "POST",
            &format!("/api/messages/{id}/edit"),
            Some(&json!({"text": "!echo ho"})),
        )
        .await;
    assert_eq!(edited.status, 202);
    let edit = console.next_event().await;
    assert_eq!(edit.event.revision, 1);
    assert_eq!(
        edit.event.kind,
        EventKind::Edited {
            text: "!echo ho".into()
        }
    );
    let not_mine = console
        .call(
            "POST",
            &format!("/api/messages/{}/edit", posted.ids[0]),
            Some(&json!({"text": "x"})),
        )
        .await;
    assert_eq!(not_mine.status, 400);
    console.stop().await;
}

#[tokio::test]
async fn a_full_queue_refuses_the_message_without_showing_it() {
    let mut console = Running::start(ConsoleBounds::default(), 1).await;
    let body = json!({"room": "general", "text": "first"});
    assert_eq!(
        console
            .call("POST", "/api/messages", Some(&body))
            .await
            .status,
        202
    );
    let busy = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "text": "second"})),
        )
        .await;
    assert_eq!(busy.status, 503);
    assert!(
        busy.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("busy"))
    );
    let state = console.call("GET", "/api/state", None).await.json();
    assert_eq!(state["messages"].as_array().map(Vec::len), Some(1));
    let _ = console.next_event().await;
    assert_eq!(
        console
            .call("POST", "/api/messages", Some(&body))
            .await
            .status,
        202
    );
    console.stop().await;
}

#[tokio::test]
async fn replace_delete_threads_and_attachments_through_the_outbox() {
    let mut console = Running::default().await;
    let root = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "text": "root"})),
        )
        .await
        .json()["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let _ = console.next_event().await;
    let reply = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "thread": root, "text": "!ai in thread"})),
        )
        .await;
    assert_eq!(reply.status, 202);
    let incoming = console.next_event().await;
    let place = incoming.event.place.clone();
    assert_eq!(place.thread.as_deref(), Some(root.as_str()));
    let status = incoming
        .outbox
        .post(&place, vec![Outgoing::text(Role::Status, "Working…")])
        .await
        .expect("status");
    let mut long = Outgoing::text(Role::Answer, "excerpt");
    long.attachment = Some(yetibot_chat_adapters::Attachment::text(
        "answer.md",
        "text/markdown; charset=utf-8",
        "# The whole answer".into(),
    ));
    let answer = console
        .outbox
        .post(&place, vec![long])
        .await
        .expect("answer");
    console.outbox.delete(&status).await.expect("deleted");
    let history = console
        .outbox
        .thread_history(
            &place,
            "not-yet-sent",
            HistoryLimits {
                max_messages: 10,
                max_bytes: 10_000,
            },
        )
        .await
        .expect("history");
    let texts: Vec<&str> = history.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["root", "!ai in thread", "excerpt"]);
    let file = console
        .call(
            "GET",
            &format!("/api/messages/{}/answer.md", answer.ids[0]),
            None,
        )
        .await;
    assert_eq!(file.status, 200);
    assert_eq!(file.body, b"# The whole answer");
    assert_eq!(
        file.header("content-disposition"),
        Some("attachment; filename=\"answer.md\"")
    );
    assert_eq!(
        console
            .call("GET", &format!("/api/messages/{root}/answer.md"), None)
            .await
            .status,
        404
    );
    // A generated image is served inline under its own name, and only that name.
    let png: &[u8] = &[0x89, b'P', b'N', b'G', 13, 10, 26, 10, 1, 2, 3];
    let mut image = Outgoing::text(Role::Answer, "");
    image.attachment = Some(yetibot_chat_adapters::Attachment {
        name: "gi-00ff.png".into(),
        media_type: "image/png",
        content: png.to_vec().into(),
    });
    let shown = console
        .outbox
        .post(&place, vec![image])
        .await
        .expect("image");
    let file = console
        .call(
            "GET",
            &format!("/api/messages/{}/gi-00ff.png", shown.ids[0]),
            None,
        )
        .await;
    assert_eq!(file.status, 200);
    assert_eq!(file.body, png);
    assert_eq!(file.header("content-type"), Some("image/png"));
    assert_eq!(
        file.header("content-disposition"),
        Some("inline; filename=\"gi-00ff.png\"")
    );
    for other in ["answer.md", "gi-00ff.jpg", "..%2Fgi-00ff.png"] {
        let path = format!("/api/messages/{}/{other}", shown.ids[0]);
        assert_eq!(
            console.call("GET", &path, None).await.status,
            404,
            "{other}"
        );
    }
    let state = console.call("GET", "/api/state", None).await.json();
    let listed = state["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|m| m["id"] == shown.ids[0].as_str()))
        .expect("the image message");
    assert_eq!(listed["attachment"]["media_type"], "image/png");
    assert_eq!(listed["attachment"]["bytes"], png.len());
    console.outbox.delete(&shown).await.expect("deleted");
    let replaced = console
        .outbox
        .replace(
            &answer,
            vec![
                Outgoing::text(Role::Answer, "new one"),
                Outgoing::text(Role::Answer, "and two"),
            ],
        )
        .await
        .expect("replaced");
    assert_eq!(replaced.ids[0], answer.ids[0]);
    assert_eq!(replaced.ids.len(), 2);
    let state = console.call("GET", "/api/state", None).await.json();
    let texts: Vec<&str> = state["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(texts, ["root", "!ai in thread", "new one", "and two"]);
    assert_eq!(state["messages"][0]["replies"], 3);
    console.stop().await;
}

async fn open_stream(
    console: &Running,
    last_event_id: Option<u64>,
    after: Option<u64>,
) -> EventStream {
    let path = after.map_or("/api/events".to_owned(), |a| {
        format!("/api/events?after={a}")
    });
    let mut headers = vec![("Host", console.host()), ("Cookie", console.cookie())];
    if let Some(id) = last_event_id {
        headers.push(("Last-Event-ID", id.to_string()));
    }
    EventStream::open(console.addr, &path, &headers).await
}

#[tokio::test]
async fn live_updates_start_with_hello_and_resume_by_sequence() {
    let mut console = Running::start(
        ConsoleBounds {
            log_capacity: 3,
            ..ConsoleBounds::default()
        },
        16,
    )
    .await;
    let send = |text: &'static str| json!({"room": "general", "text": text});
    let mut live = open_stream(&console, None, None).await;
    assert_eq!(live.status().await, 200);
    let hello = live.next().await;
    assert_eq!(hello.event, "hello");
    let hello: Value = serde_json::from_str(&hello.data).expect("hello JSON");
    assert_eq!(hello["seq"], 0);
    assert_eq!(hello["operator"]["id"], "op-1");
    console
        .call("POST", "/api/messages", Some(&send("one")))
        .await;
    let _ = console.next_event().await;
    let update = live.next().await;
    assert_eq!((update.id.as_str(), update.event.as_str()), ("1", "update"));
    let update: Value = serde_json::from_str(&update.data).expect("update JSON");
    assert_eq!(update["type"], "message");
    assert_eq!(update["message"]["text"], "one");
    drop(live);
    // Two more updates while the page was away; it comes back with Last-Event-ID 1.
    for text in ["two", "three"] {
        console
            .call("POST", "/api/messages", Some(&send(text)))
            .await;
        let _ = console.next_event().await;
    }
    let mut resumed = open_stream(&console, Some(1), Some(0)).await;
    assert_eq!(resumed.next().await.event, "hello");
    let ids = [resumed.next().await.id, resumed.next().await.id];
    assert_eq!(ids, ["2", "3"], "Last-Event-ID wins over ?after");
    drop(resumed);
    // The log keeps three updates: a page that saw only update 0 must reload.
    console
        .call("POST", "/api/messages", Some(&send("four")))
        .await;
    let _ = console.next_event().await;
    let mut stale = open_stream(&console, None, Some(0)).await;
    assert_eq!(stale.next().await.event, "hello");
    let reset = stale.next().await;
    assert_eq!((reset.id.as_str(), reset.event.as_str()), ("4", "reset"));
    // The console stops promptly with a stream still open, and closes it.
    console.stop().await;
    assert!(stale.closed().await);
}

#[tokio::test]
async fn a_new_process_shows_the_rooms_earlier_conversation_once() {
    let transcript = Arc::new(Fixed {
        messages: vec![
            HistoryMessage {
                author: "operator".into(),
                text: "!echo from the last run".into(),
                from_bot: false,
            },
            HistoryMessage {
                author: "yetibot".into(),
                text: "from the last run".into(),
                from_bot: true,
            },
        ],
        reads: std::sync::atomic::AtomicUsize::new(0),
    });
    let console = Running::start_with(
        ConsoleBounds::default(),
        16,
        Some(Arc::clone(&transcript) as Arc<dyn Transcript>),
    )
    .await;
    for _ in 0..2 {
        let state = console
            .call("GET", "/api/state?room=general", None)
            .await
            .json();
        let messages = state["messages"].as_array().cloned().unwrap_or_default();
        let texts: Vec<&str> = messages.iter().filter_map(|m| m["text"].as_str()).collect();
        assert_eq!(texts, ["!echo from the last run", "from the last run"]);
        assert!(messages.iter().all(|m| m["restored"] == true));
        assert!(state["epoch"].as_str().is_some_and(|e| !e.is_empty()));
    }
    assert_eq!(
        transcript.reads.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "looked up once"
    );
    console.stop().await;
}

#[tokio::test]
async fn a_page_that_finds_every_stream_taken_is_told_why_and_when_to_retry() {
    let console = Running::start(
        ConsoleBounds {
            max_event_streams: 1,
            ..ConsoleBounds::default()
        },
        16,
    )
    .await;
    let mut first = open_stream(&console, None, None).await;
    let hello = first.next().await;
    assert_eq!(hello.event, "hello");
    let hello: Value = serde_json::from_str(&hello.data).expect("hello JSON");
    assert!(hello["epoch"].as_str().is_some_and(|e| !e.is_empty()));
    let headers = vec![
        ("Host", console.host()),
        ("Cookie", console.cookie()),
        ("Accept", "text/event-stream".to_owned()),
    ];
    let page = raw(console.addr, "GET", "/api/events", &headers, b"").await;
    assert_eq!(page.status, 200);
    let text = String::from_utf8_lossy(&page.body).into_owned();
    assert!(
        text.starts_with("retry: 10000\nevent: full\ndata: "),
        "{text}"
    );
    assert!(text.contains("close one"), "{text}");
    drop(first);
    console.stop().await;
}

#[tokio::test]
async fn event_streams_are_bounded() {
    let console = Running::start(
        ConsoleBounds {
            max_event_streams: 1,
            ping_interval: Duration::from_millis(20),
            ..ConsoleBounds::default()
        },
        16,
    )
    .await;
    let mut first = open_stream(&console, None, None).await;
    assert_eq!(first.next().await.event, "hello");
    let second = console.call("GET", "/api/events", None).await;
    assert_eq!(second.status, 503);
    assert!(second.json()["error"].is_string());
    drop(first);
    // The slot frees once the first stream's connection is gone (the server notices the
    // closed socket on its next write, a ping at the latest).
    let mut reopened = false;
    for _ in 0..200 {
        let mut stream = open_stream(&console, None, None).await;
        if stream.status().await == 200 {
            reopened = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(reopened);
    console.stop().await;
}

#[tokio::test]
async fn reactions_reach_the_bot_with_whose_message_it_was() {
    let mut console = Running::default().await;
    let sent = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "text": "!echo x"})),
        )
        .await
        .json();
    let user_id = sent["id"].as_str().expect("id").to_owned();
    let incoming = console.next_event().await;
    let posted = incoming
        .outbox
        .post(
            &incoming.event.place,
            vec![Outgoing::text(Role::Answer, "x")],
        )
        .await
        .expect("posted");
    for (id, on_bot) in [(posted.ids[0].clone(), true), (user_id, false)] {
        let r = console
            .call(
                "POST",
                &format!("/api/messages/{id}/react"),
                Some(&json!({"emoji": "❌"})),
            )
            .await;
        assert_eq!(r.status, 202);
        let reacted = console.next_event().await;
        assert_eq!(reacted.event.message_id, id);
        assert_eq!(
            reacted.event.kind,
            EventKind::Reacted {
                emoji: "❌".into(),
                on_bot_message: on_bot
            }
        );
    }
    for bad in [
        json!({"emoji": ""}),
        json!({"emoji": "x".repeat(65)}),
        json!({"emoji": "a\u{0007}"}),
    ] {
        let r = console
            .call(
                "POST",
                &format!("/api/messages/{}/react", posted.ids[0]),
                Some(&bad),
            )
            .await;
        assert_eq!(r.status, 400, "{bad}");
    }
    let missing = console
        .call(
            "POST",
            "/api/messages/nope/react",
            Some(&json!({"emoji": "👍"})),
        )
        .await;
    assert_eq!(missing.status, 404);
    // The bot's own reactions show on the message, each once.
    for _ in 0..2 {
        console
            .outbox
            .react(&incoming.event.place, &posted.ids[0], "👍")
            .await
            .expect("reacted");
    }
    let state = console.call("GET", "/api/state", None).await.json();
    assert_eq!(state["messages"][1]["reactions"], json!(["👍"]));
    assert!(
        console
            .outbox
            .react(&incoming.event.place, "gone", "👍")
            .await
            .is_err()
    );
    console.stop().await;
}

#[tokio::test]
async fn a_connection_over_the_bound_gets_503_and_finished_ones_free_their_slots() {
    let console = Running::start(
        ConsoleBounds {
            max_connections: 2,
            ..ConsoleBounds::default()
        },
        16,
    )
    .await;
    // Finished requests do not count: many in a row all succeed.
    for _ in 0..10 {
        assert_eq!(console.call("GET", "/api/state", None).await.status, 200);
    }
    // Two idle connections fill the bound; the next one is told why it is refused.
    let idle = [
        tokio::net::TcpStream::connect(console.addr)
            .await
            .expect("idle"),
        tokio::net::TcpStream::connect(console.addr)
            .await
            .expect("idle"),
    ];
    // The server has accepted both once a request on a third connection is answered.
    let mut refused = None;
    for _ in 0..100 {
        let r = console.call("GET", "/api/state", None).await;
        if r.status == 503 {
            refused = Some(r);
            break;
        }
        tokio::task::yield_now().await;
    }
    let refused = refused.expect("a 503 once the bound is full");
    assert!(
        refused.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("too many"))
    );
    drop(idle);
    let mut served = false;
    for _ in 0..100 {
        if console.call("GET", "/api/state", None).await.status == 200 {
            served = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(served, "the slots free once the idle connections close");
    console.stop().await;
}

/// An upload: the raw bytes under `media_type`, with the right host and cookie.
async fn upload(console: &Running, name: &str, media_type: &str, bytes: &[u8]) -> Response {
    let headers = vec![
        ("Host", console.host()),
        ("Cookie", console.cookie()),
        ("Content-Type", media_type.to_owned()),
    ];
    raw(
        console.addr,
        "POST",
        &format!("/api/uploads?name={name}"),
        &headers,
        bytes,
    )
    .await
}

#[tokio::test]
async fn images_the_operator_attaches_reach_the_bot_with_the_message_and_only_through_its_outbox() {
    let mut console = Running::default().await;
    let png = b"\x89PNG\r\n\x1a\n-not-checked-here";
    let uploaded = upload(&console, "r%C3%A9sum%C3%A9.png", "image/png", png).await;
    assert_eq!(uploaded.status, 201);
    let id = uploaded.json()["id"].as_str().expect("id").to_owned();
    let sent = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "text": "!clairic count cats", "attachments": [id]})),
        )
        .await;
    assert_eq!(sent.status, 202);
    let incoming = console.next_event().await;
    let attachments = &incoming.event.attachments;
    assert_eq!(attachments.len(), 1);
    assert_eq!(attachments[0].name, "résumé.png");
    assert_eq!(attachments[0].media_type.as_deref(), Some("image/png"));
    assert_eq!(attachments[0].url, format!("console-upload:{id}"));
    // The bytes come only from the console's own outbox, never through a URL.
    assert_eq!(
        incoming
            .outbox
            .attachment_bytes(&attachments[0].url)
            .as_deref(),
        Some(&png[..])
    );
    assert_eq!(
        incoming
            .outbox
            .attachment_bytes("https://example.test/a.png"),
        None
    );
    let state = console
        .call("GET", "/api/state?room=general", None)
        .await
        .json();
    assert_eq!(state["messages"][0]["files"], json!(["résumé.png"]));
    // An edit of the message still carries its images.
    let message_id = incoming.event.message_id.clone();
    let edited = console
        .call(
            "POST",
            &format!("/api/messages/{message_id}/edit"),
            Some(&json!({"text": "!clairic count dogs"})),
        )
        .await;
    assert_eq!(edited.status, 202);
    assert_eq!(console.next_event().await.event.attachments.len(), 1);

    // Refusals: not an image type, too large (declared or not), an unknown upload, and an
    // upload without the token. Nothing is sent to the bot for any of them.
    assert_eq!(
        upload(&console, "a.gif", "image/gif", b"GIF89a")
            .await
            .status,
        415
    );
    assert_eq!(
        upload(&console, "a.txt", "text/plain", b"hi").await.status,
        415
    );
    // Declared too large: refused from the head, whatever of the body the client manages
    // to write before the console closes the connection.
    for framing in ["Content-Length: 4194305", "Transfer-Encoding: chunked"] {
        let mut stream = TcpStream::connect(console.addr).await.expect("connect");
        let head = format!(
            "POST /api/uploads?name=big.png HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nContent-Type: image/png\r\n{framing}\r\nConnection: close\r\n\r\n",
            console.host(),
            console.cookie()
        );
        stream.write_all(head.as_bytes()).await.expect("head");
        let chunk = vec![0u8; 64 * 1024];
        for _ in 0..80 {
            let frame = if framing.starts_with("Transfer") {
                [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat()
            } else {
                chunk.clone()
            };
            if stream.write_all(&frame).await.is_err() {
                break;
            }
        }
        let r = read_response(&mut stream).await;
        assert_eq!(r.status, 413, "{framing}");
    }
    assert_eq!(
        upload(&console, "empty.png", "image/png", b"").await.status,
        400
    );
    let unknown = console
        .call(
            "POST",
            "/api/messages",
            Some(&json!({"room": "general", "text": "!x", "attachments": ["0123456789abcdef0123456789abcdef"]})),
        )
        .await;
    assert_eq!(unknown.status, 400);
    assert!(
        unknown.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("upload it again"))
    );
    let headers = vec![
        ("Host", console.host()),
        ("Content-Type", "image/png".to_owned()),
    ];
    let anonymous = raw(
        console.addr,
        "POST",
        "/api/uploads?name=a.png",
        &headers,
        png,
    )
    .await;
    assert_eq!(anonymous.status, 401);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), console.events.next())
            .await
            .is_err(),
        "no refused request reached the bot"
    );
    console.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_images_are_served_by_name_with_head_and_stop_cleanly() {
    use yetibot_chat_adapters::web::published::{Published, PublishedServer, publish_options};
    let options = publish_options(&yetibot_chat_adapters::web::published::ImagesConfig {
        public_url: Some("https://bot.example/i".into()),
        listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    })
    .expect("valid")
    .expect("publishing");
    let store = Published::new(&options);
    let server = PublishedServer::bind(options.listen, store.clone()).expect("bind");
    let addr = server.local_addr().expect("an address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    let url = store
        .publish("image/webp", Arc::from(&b"RIFF\0\0\0\0WEBPVP8 "[..]))
        .expect("published");
    let path = url
        .strip_prefix("https://bot.example/i")
        .expect("below the base");
    let host = [("Host", addr.to_string())];
    let got = raw(addr, "GET", path, &host, b"").await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body, b"RIFF\0\0\0\0WEBPVP8 ");
    assert_eq!(got.header("content-type"), Some("image/webp"));
    assert_eq!(
        got.header("cache-control"),
        Some("public, max-age=86400, immutable")
    );
    // HEAD: the same head, no body (read raw: the length describes the GET's body).
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("HEAD {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
    let mut answer = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut answer)
        .await
        .expect("read");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    assert!(answer.contains("content-length: 16\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\n"), "no body: {answer}");
    for (method, path) in [("DELETE", path), ("GET", "/"), ("GET", "/x.webp")] {
        let status = raw(addr, method, path, &host, b"").await.status;
        assert!(status == 404 || status == 405, "{method} {path}: {status}");
    }
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("it stops")
        .expect("no panic");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the port is closed"
    );
}
