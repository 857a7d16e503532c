//! A fake Slack for tests, on 127.0.0.1 only: the Web API methods the adapter calls (with a
//! record of every call, the messages they leave in each conversation, and one-off scripted
//! answers such as a `429` with `Retry-After`, or a `500` or a dropped connection after the
//! call took effect) and a Socket Mode WebSocket that sends envelopes and collects their
//! acknowledgements.
//!
//! The fake runs on the caller's tokio runtime; dropping the [`FakeSlack`] stops it.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

/// The bot user the fake's `auth.test` reports.
pub const BOT_USER: &str = "UBOT";
/// The bot ID the fake's `auth.test` reports.
pub const BOT_ID: &str = "BBOT";

/// One Web API call the fake received.
#[derive(Debug, Clone)]
pub struct Call {
    /// The method, e.g. `chat.postMessage`, or `upload` for a file's bytes.
    pub method: String,
    /// The `Authorization` header.
    pub auth: Option<String>,
    /// The JSON body, or the query parameters as an object.
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

/// A one-off answer to the next call of a method.
#[derive(Debug, Clone, Default)]
pub struct Scripted {
    /// The HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Value,
    /// The call takes effect (a message is posted) before the scripted answer is given.
    pub applied: bool,
    /// No answer at all: the connection is closed instead.
    pub dropped: bool,
}

/// A message as the fake keeps it, after every `chat.update` and `chat.delete` of it.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The conversation.
    pub channel: String,
    /// Its timestamp (the message's ID).
    pub ts: String,
    /// The thread it was posted in, if any.
    pub thread_ts: Option<String>,
    /// The body of its latest version (`text`, `blocks`, ...).
    pub body: Value,
    /// How often it was updated.
    pub edits: u32,
    /// Whether it was deleted.
    pub deleted: bool,
}

/// A thread `conversations.replies` serves, page by page.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    /// The pages of messages.
    pub pages: Vec<Vec<Value>>,
    /// A page answered with `500` instead.
    pub failing_page: Option<usize>,
    /// Answer every page with `missing_scope` naming this scope.
    pub missing_scope: Option<String>,
}

#[derive(Default)]
struct State {
    calls: Mutex<Vec<Call>>,
    /// Woken after every call, once it took effect.
    called: Notify,
    messages: Mutex<Vec<Stored>>,
    scripted: Mutex<HashMap<String, VecDeque<Scripted>>>,
    channels: Mutex<HashMap<String, Value>>,
    users: Mutex<HashMap<String, Value>>,
    threads: Mutex<HashMap<String, Thread>>,
    next: AtomicU64,
    socket: Mutex<Option<mpsc::UnboundedSender<Option<Message>>>>,
    connections: AtomicU64,
    connected: Notify,
    acks: Mutex<VecDeque<String>>,
    /// Every acknowledgement's whole frame, by envelope ID (a slash command's answer).
    ack_frames: Mutex<HashMap<String, Value>>,
    acked: Notify,
    ws_port: AtomicU64,
    http_port: AtomicU64,
}

/// The running fake.
pub struct FakeSlack {
    state: Arc<State>,
    http: SocketAddr,
    _tasks: JoinSet<()>,
}

impl std::fmt::Debug for FakeSlack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSlack")
            .field("http", &self.http)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl FakeSlack {
    /// Starts the fake on two loopback ports (the Web API and the WebSocket).
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start() -> Self {
        let state = Arc::new(State::default());
        state.next.store(1, Ordering::SeqCst);
        let http = TcpListener::bind("127.0.0.1:0").await.expect("bind http");
        let ws = TcpListener::bind("127.0.0.1:0").await.expect("bind ws");
        let http_addr = http.local_addr().expect("addr");
        let ws_addr = ws.local_addr().expect("addr");
        state
            .ws_port
            .store(u64::from(ws_addr.port()), Ordering::SeqCst);
        state
            .http_port
            .store(u64::from(http_addr.port()), Ordering::SeqCst);
        let mut tasks = JoinSet::new();
        let s = Arc::clone(&state);
        tasks.spawn(async move {
            let mut conns = JoinSet::new();
            while let Ok((stream, _)) = http.accept().await {
                let s = Arc::clone(&s);
                conns.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let s = Arc::clone(&s);
                        async move {
                            let answer = web_api(&s, req).await;
                            s.called.notify_waiters();
                            // No answer: hyper closes the connection.
                            answer.ok_or_else(|| std::io::Error::other("dropped by the script"))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let s = Arc::clone(&state);
        tasks.spawn(async move {
            let mut conns = JoinSet::new();
            while let Ok((stream, _)) = ws.accept().await {
                let s = Arc::clone(&s);
                conns.spawn(socket(s, stream));
            }
        });
        Self {
            state,
            http: http_addr,
            _tasks: tasks,
        }
    }

    /// The Web API base URL, for the adapter's `api-url`.
    #[must_use]
    pub fn api_url(&self) -> String {
        format!("http://{}/api", self.http)
    }

    /// Makes `conversations.info` know a conversation (`{"id", "name"}` or
    /// `{"id", "is_im": true, "user"}`).
    pub fn set_channel(&self, id: &str, channel: Value) {
        lock(&self.state.channels).insert(id.to_owned(), channel);
    }

    /// Makes `users.info` know a user.
    pub fn set_user(&self, id: &str, user: Value) {
        lock(&self.state.users).insert(id.to_owned(), user);
    }

    /// Serves a thread's pages from `conversations.replies`.
    pub fn set_thread(&self, ts: &str, thread: Thread) {
        lock(&self.state.threads).insert(ts.to_owned(), thread);
    }

    /// Answers the next call of `method` with `answer` instead of the default.
    pub fn script(&self, method: &str, answer: Scripted) {
        lock(&self.state.scripted)
            .entry(method.to_owned())
            .or_default()
            .push_back(answer);
    }

    /// Every call of `method` so far.
    #[must_use]
    pub fn calls(&self, method: &str) -> Vec<Call> {
        lock(&self.state.calls)
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// Every call so far.
    #[must_use]
    pub fn all_calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }

    /// Every message posted in `channel` (in any thread), deleted ones included, oldest first.
    #[must_use]
    pub fn messages(&self, channel: &str) -> Vec<Stored> {
        lock(&self.state.messages)
            .iter()
            .filter(|m| m.channel == channel)
            .cloned()
            .collect()
    }

    /// The messages of `channel` still visible.
    #[must_use]
    pub fn visible(&self, channel: &str) -> Vec<Stored> {
        self.messages(channel)
            .into_iter()
            .filter(|m| !m.deleted)
            .collect()
    }

    /// Waits until `check` holds, re-checking after every call; panics after 10 seconds
    /// with `what`.
    ///
    /// # Panics
    ///
    /// When `check` does not hold in time.
    pub async fn until(&self, what: &str, check: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let called = self.state.called.notified();
            if check(self) {
                return;
            }
            if tokio::time::timeout_at(deadline, called).await.is_err() {
                assert!(check(self), "timed out waiting for: {what}");
                return;
            }
        }
    }

    /// Waits until `method` was called at least `n` times, and returns those calls.
    pub async fn wait_calls(&self, method: &str, n: usize) -> Vec<Call> {
        loop {
            let notified = self.state.called.notified();
            let calls = self.calls(method);
            if calls.len() >= n {
                return calls;
            }
            notified.await;
        }
    }

    /// Waits until at least `n` Socket Mode connections were opened in all.
    pub async fn wait_connections(&self, n: u64) {
        loop {
            let notified = self.state.connected.notified();
            if self.state.connections.load(Ordering::SeqCst) >= n {
                return;
            }
            notified.await;
        }
    }

    /// Socket Mode connections opened so far.
    #[must_use]
    pub fn connections(&self) -> u64 {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Sends a raw frame on the newest connection.
    pub fn send_raw(&self, text: &str) {
        if let Some(socket) = lock(&self.state.socket).as_ref() {
            let _ = socket.send(Some(Message::text(text.to_owned())));
        }
    }

    /// Sends an Events API envelope with `event` as event `event_id`; returns the envelope ID.
    pub fn send_event(&self, event_id: &str, event: Value) -> String {
        let envelope_id = format!("env-{}", self.state.next.fetch_add(1, Ordering::SeqCst));
        let frame = json!({
            "type": "events_api",
            "envelope_id": envelope_id,
            "accepts_response_payload": false,
            "retry_attempt": 0,
            "payload": {
                "type": "event_callback",
                "team_id": "T1",
                "api_app_id": "A1",
                "event_id": event_id,
                "event_time": 1_700_000_000,
                "event": event,
            }
        });
        self.send_raw(&frame.to_string());
        envelope_id
    }

    /// Sends an interactive envelope (a button press); returns the envelope ID.
    pub fn send_interaction(&self, payload: Value) -> String {
        let envelope_id = format!("env-{}", self.state.next.fetch_add(1, Ordering::SeqCst));
        let frame = json!({
            "type": "interactive",
            "envelope_id": envelope_id,
            "accepts_response_payload": false,
            "payload": payload,
        });
        self.send_raw(&frame.to_string());
        envelope_id
    }

    /// Asks the client to reconnect, as Slack does before it retires a connection.
    pub fn request_reconnect(&self) {
        self.send_raw(
            r#"{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"fake"}}"#,
        );
    }

    /// Drops the newest connection without a close frame.
    pub fn drop_socket(&self) {
        if let Some(socket) = lock(&self.state.socket).take() {
            let _ = socket.send(None);
        }
    }

    /// Waits for the next acknowledged envelope ID.
    pub async fn next_ack(&self) -> String {
        loop {
            let notified = self.state.acked.notified();
            if let Some(id) = lock(&self.state.acks).pop_front() {
                return id;
            }
            notified.await;
        }
    }

    /// The whole acknowledgement frame of envelope `id`, once it came.
    #[must_use]
    pub fn ack_frame(&self, id: &str) -> Option<Value> {
        lock(&self.state.ack_frames).get(id).cloned()
    }

    /// Sends a slash-command envelope; returns the envelope ID.
    pub fn send_slash_command(&self, command: &str, text: &str, response_url: &str) -> String {
        let envelope_id = format!("env-{}", self.state.next.fetch_add(1, Ordering::SeqCst));
        let frame = json!({
            "type": "slash_commands",
            "envelope_id": envelope_id,
            "accepts_response_payload": true,
            "payload": {
                "team_id": "T1", "team_domain": "fake", "channel_id": "C1",
                "channel_name": "general", "user_id": "U1", "user_name": "ada",
                "command": command, "text": text, "api_app_id": "A1",
                "response_url": response_url, "trigger_id": "1.2.3",
            }
        });
        self.send_raw(&frame.to_string());
        envelope_id
    }

    /// Envelope IDs acknowledged and not yet taken by [`FakeSlack::next_ack`].
    #[must_use]
    pub fn pending_acks(&self) -> Vec<String> {
        lock(&self.state.acks).iter().cloned().collect()
    }
}

async fn socket(state: Arc<State>, stream: tokio::net::TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut write, mut read) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Option<Message>>();
    let hello = json!({"type": "hello", "num_connections": 1,
        "connection_info": {"app_id": "A1"},
        "debug_info": {"host": "fake", "approximate_connection_time": 3600}});
    let _ = write.send(Message::text(hello.to_string())).await;
    *lock(&state.socket) = Some(tx);
    state.connections.fetch_add(1, Ordering::SeqCst);
    state.connected.notify_waiters();
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Some(message)) => { if write.send(message).await.is_err() { return; } }
                // Dropped: end the TCP connection without a close frame.
                Some(None) | None => return,
            },
            frame = read.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    let frame = serde_json::from_str::<Value>(&text).ok();
                    if let Some((id, frame)) = frame.and_then(|v| {
                        let id = v.get("envelope_id").and_then(Value::as_str)?.to_owned();
                        Some((id, v))
                    }) {
                        lock(&state.ack_frames).insert(id.clone(), frame);
                        lock(&state.acks).push_back(id);
                        state.acked.notify_waiters();
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}

fn respond(status: u16, headers: &[(String, String)], body: &Value) -> Response<Full<Bytes>> {
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8");
    for (k, v) in headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn ok(mut body: Value) -> Response<Full<Bytes>> {
    body["ok"] = json!(true);
    respond(200, &[], &body)
}

fn fail(error: &str) -> Response<Full<Bytes>> {
    respond(200, &[], &json!({"ok": false, "error": error}))
}

/// The answer to one call, or `None` to close the connection without one.
async fn web_api(
    state: &State,
    request: Request<hyper::body::Incoming>,
) -> Option<Response<Full<Bytes>>> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let auth = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let (method, body) = if let Some(upload) = path.strip_prefix("/upload/") {
        (
            "upload".to_owned(),
            json!({"file": upload, "length": bytes.len(),
            "content": String::from_utf8_lossy(&bytes), "bytes": bytes.to_vec()}),
        )
    } else {
        let method = path.strip_prefix("/api/").unwrap_or(&path).to_owned();
        let body = if bytes.is_empty() {
            let params: serde_json::Map<String, Value> = query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), json!(decode(v))))
                .collect();
            Value::Object(params)
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        (method, body)
    };
    lock(&state.calls).push(Call {
        method: method.clone(),
        auth: auth.clone(),
        body: body.clone(),
        at: Instant::now(),
    });
    let scripted = lock(&state.scripted)
        .get_mut(&method)
        .and_then(VecDeque::pop_front);
    let Some(scripted) = scripted else {
        return Some(default_answer(
            state,
            &method,
            auth.as_deref(),
            &body,
            &bytes,
        ));
    };
    if scripted.applied {
        default_answer(state, &method, auth.as_deref(), &body, &bytes);
    }
    if scripted.dropped {
        return None;
    }
    Some(respond(scripted.status, &scripted.headers, &scripted.body))
}

/// What the real Web API would answer, with the call's effect on the fake's messages.
fn default_answer(
    state: &State,
    method: &str,
    auth: Option<&str>,
    body: &Value,
    bytes: &Bytes,
) -> Response<Full<Bytes>> {
    let field = |name: &str| {
        body.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let next = || state.next.fetch_add(1, Ordering::SeqCst);
    match method {
        "auth.test" => {
            ok(json!({"user_id": BOT_USER, "bot_id": BOT_ID, "user": "yetibot", "team_id": "T1"}))
        }
        "apps.connections.open" => {
            if !auth.is_some_and(|a| a.starts_with("Bearer xapp-")) {
                return fail("invalid_auth");
            }
            let port = state.ws_port.load(Ordering::SeqCst);
            ok(json!({"url": format!("ws://127.0.0.1:{port}/link?ticket={}", next())}))
        }
        "chat.postMessage" => {
            let ts = format!("1700001000.{:06}", next());
            lock(&state.messages).push(Stored {
                channel: field("channel"),
                ts: ts.clone(),
                thread_ts: body
                    .get("thread_ts")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                body: body.clone(),
                edits: 0,
                deleted: false,
            });
            ok(json!({"channel": field("channel"), "ts": ts}))
        }
        "chat.update" | "chat.delete" => {
            let (channel, ts) = (field("channel"), field("ts"));
            let mut messages = lock(&state.messages);
            let Some(stored) = messages
                .iter_mut()
                .find(|m| m.channel == channel && m.ts == ts && !m.deleted)
            else {
                return fail("message_not_found");
            };
            if method == "chat.delete" {
                stored.deleted = true;
            } else {
                stored.body = body.clone();
                stored.edits += 1;
            }
            ok(json!({"channel": channel, "ts": ts}))
        }
        "reactions.add" | "files.delete" => ok(json!({})),
        "conversations.info" => match lock(&state.channels).get(&field("channel")) {
            Some(channel) => ok(json!({"channel": channel})),
            None => fail("channel_not_found"),
        },
        "users.info" => match lock(&state.users).get(&field("user")) {
            Some(user) => ok(json!({"user": user})),
            None => fail("user_not_found"),
        },
        "conversations.replies" => {
            let thread = lock(&state.threads).get(&field("ts")).cloned();
            let Some(thread) = thread else {
                return fail("thread_not_found");
            };
            if let Some(scope) = thread.missing_scope {
                return respond(
                    200,
                    &[],
                    &json!({"ok": false, "error": "missing_scope", "needed": scope}),
                );
            }
            let page: usize = field("cursor")
                .strip_prefix("page-")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            if thread.failing_page == Some(page) {
                return respond(500, &[], &json!({"ok": false, "error": "internal_error"}));
            }
            let messages = thread.pages.get(page).cloned().unwrap_or_default();
            let more = page + 1 < thread.pages.len();
            ok(json!({"messages": messages, "has_more": more,
                "response_metadata": {"next_cursor": if more { format!("page-{}", page + 1) } else { String::new() }}}))
        }
        "files.getUploadURLExternal" => {
            let id = format!("F{}", next());
            let port = state.http_port.load(Ordering::SeqCst);
            ok(json!({"upload_url": format!("http://127.0.0.1:{port}/upload/{id}"), "file_id": id}))
        }
        "upload" => Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(format!("OK - {}", bytes.len()))))
            .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()))),
        "files.completeUploadExternal" => {
            ok(json!({"files": body.get("files").cloned().unwrap_or(Value::Null)}))
        }
        _ => fail("unknown_method"),
    }
}

/// Percent-decoding of a query value (`+` as space).
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
