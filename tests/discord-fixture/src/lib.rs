#![doc = include_str!("../README.md")]
//!
//! Both servers run on the caller's tokio runtime and stop with the runtime.

mod gateway;
mod multipart;
pub mod payload;
mod rest;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

pub use gateway::{Gateway, Start};

/// The fake bot's user ID.
pub const BOT_ID: u64 = 900;
/// The token the fake accepts.
pub const TOKEN: &str = "fake.bot.token";

/// One request the REST side received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path after `/api/v10/`, with its query.
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The JSON fields sent (the `payload_json` part of a multipart body).
    pub fields: Option<Value>,
    /// An uploaded file: its name and bytes.
    pub file: Option<(String, Vec<u8>)>,
    /// When it arrived.
    pub at: Instant,
}

/// A message as the fake keeps it.
#[derive(Debug, Clone)]
pub struct Stored {
    /// Its ID.
    pub id: u64,
    /// Its channel.
    pub channel: u64,
    /// The fields of its latest version.
    pub fields: Value,
    /// Its file, if one was uploaded.
    pub file: Option<(String, Vec<u8>)>,
    /// How often it was edited.
    pub edits: u32,
    /// Whether it was deleted.
    pub deleted: bool,
}

impl Stored {
    /// The text of its text displays, joined by newlines.
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        collect_text(&self.fields["components"], &mut out);
        out.join("\n")
    }
}

fn collect_text(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| collect_text(v, out)),
        Value::Object(map) => {
            if map.get("type") == Some(&Value::from(10))
                && let Some(text) = map.get("content").and_then(Value::as_str)
            {
                out.push(text.to_owned());
            }
            if let Some(inner) = map.get("components") {
                collect_text(inner, out);
            }
        }
        _ => {}
    }
}

/// A scripted answer for the next request that matches.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The method it matches.
    pub method: &'static str,
    /// Text the path must contain.
    pub path: String,
    /// The status to answer.
    pub status: u16,
    /// Headers to send.
    pub headers: Vec<(String, String)>,
    /// The body to send.
    pub body: String,
    /// Whether the request still takes effect (a 5xx after the message was made).
    pub apply: bool,
    /// No answer at all: the connection is closed instead of answering `status`.
    pub drop: bool,
    /// How long to wait before answering.
    pub delay: Duration,
}

impl Fault {
    /// A fault on `method` requests whose path contains `path`.
    #[must_use]
    pub fn new(method: &'static str, path: impl Into<String>, status: u16) -> Self {
        Self {
            method,
            path: path.into(),
            status,
            headers: Vec::new(),
            body: String::new(),
            apply: false,
            drop: false,
            delay: Duration::ZERO,
        }
    }

    /// With a header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// With a body.
    #[must_use]
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }

    /// Answered only after `delay`.
    #[must_use]
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The connection is closed instead of answering.
    #[must_use]
    pub fn dropped(mut self) -> Self {
        self.drop = true;
        self
    }

    /// The request takes effect before the fault is answered.
    #[must_use]
    pub fn applied(mut self) -> Self {
        self.apply = true;
        self
    }
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    requests: Vec<Recorded>,
    messages: Vec<Stored>,
    /// Channel → earlier messages as Discord returns them (any order).
    history: HashMap<u64, Vec<Value>>,
    faults: VecDeque<Fault>,
    /// (channel, nonce) → message.
    nonces: HashMap<(u64, String), u64>,
    /// Channels whose history answers 403.
    forbidden: Vec<u64>,
    shards: u32,
}

/// The fake Discord.
#[derive(Debug, Clone)]
pub struct FakeDiscord {
    rest: SocketAddr,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    /// The gateway.
    pub gateway: Gateway,
}

impl FakeDiscord {
    /// Starts both servers on 127.0.0.1, recommending one shard.
    ///
    /// # Panics
    ///
    /// When a loopback port cannot be bound.
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            next_id: 5_000,
            shards: 1,
            ..State::default()
        }));
        let changed = Arc::new(Notify::new());
        let gateway = Gateway::start(Arc::clone(&changed)).await;
        let rest = rest::start(Arc::clone(&state), Arc::clone(&changed), gateway.url()).await;
        Self {
            rest,
            state,
            changed,
            gateway,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The address for the HTTP proxy setting (`127.0.0.1:PORT`).
    #[must_use]
    pub fn http_proxy(&self) -> String {
        self.rest.to_string()
    }

    /// How many shards `GET /gateway/bot` recommends.
    pub fn recommend_shards(&self, shards: u32) {
        self.state().shards = shards;
    }

    /// Queues a fault.
    pub fn fault(&self, fault: Fault) {
        self.state().faults.push_back(fault);
    }

    /// Makes history reads of `channel` answer 403.
    pub fn forbid_history(&self, channel: u64) {
        self.state().forbidden.push(channel);
    }

    /// Adds earlier messages (JSON as Discord returns them) to `channel`'s history.
    pub fn add_history(&self, channel: u64, messages: Vec<Value>) {
        self.state()
            .history
            .entry(channel)
            .or_default()
            .extend(messages);
    }

    /// A new snowflake-like ID, larger than every earlier one.
    pub fn next_id(&self) -> u64 {
        let mut state = self.state();
        state.next_id += 1;
        state.next_id
    }

    /// Every request so far.
    #[must_use]
    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    /// Requests whose method is `method` and whose path contains `path`.
    #[must_use]
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.contains(path))
            .collect()
    }

    /// Every message posted in `channel`, deleted ones included.
    #[must_use]
    pub fn messages(&self, channel: u64) -> Vec<Stored> {
        self.state()
            .messages
            .iter()
            .filter(|m| m.channel == channel)
            .cloned()
            .collect()
    }

    /// The messages of `channel` still visible.
    #[must_use]
    pub fn visible(&self, channel: u64) -> Vec<Stored> {
        self.messages(channel)
            .into_iter()
            .filter(|m| !m.deleted)
            .collect()
    }

    /// Waits until `check` holds, re-checking after every request and gateway event; panics
    /// after 10 seconds with `what`.
    ///
    /// # Panics
    ///
    /// When `check` does not hold in time.
    pub async fn until(&self, what: &str, check: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let changed = self.changed.notified();
            if check(self) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                assert!(check(self), "timed out waiting for: {what}");
                return;
            }
        }
    }
}
