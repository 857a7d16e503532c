//! The fake's gateway: a WebSocket server on 127.0.0.1 that says hello, answers identify
//! with `READY` (its `resume_gateway_url` is the fake itself), acknowledges heartbeats,
//! resumes sessions by replaying dispatches, and sends, closes or drops on the test's word.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc};
use tokio_websockets::{CloseCode, Message};

use crate::BOT_ID;

/// What the test asks of the open connection.
#[derive(Debug)]
enum Control {
    Text(String),
    Close(u16),
    Drop,
}

/// A session start the gateway saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// `IDENTIFY` for shard `[number, total]`.
    Identify(u32, u32),
    /// `RESUME` of a session from sequence number `seq`.
    Resume(String, u64),
}

#[derive(Debug, Default)]
struct Inner {
    /// The open connections' control channels, newest last.
    connections: Vec<mpsc::UnboundedSender<Control>>,
    starts: Vec<Start>,
    /// Every dispatch sent, with its sequence number.
    sent: Vec<(u64, String)>,
    seq: u64,
    sessions: u64,
    /// On resume, how many already-delivered dispatches to send again.
    replay_extra: u64,
    /// Resumes that arrived on the resume listener (the `resume_gateway_url`).
    resumed_there: u64,
}

/// The fake gateway.
#[derive(Debug, Clone)]
pub struct Gateway {
    url: String,
    resume_url: String,
    inner: Arc<Mutex<Inner>>,
    changed: Arc<Notify>,
}

impl Gateway {
    pub(crate) async fn start(changed: Arc<Notify>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("ws://{}", listener.local_addr().expect("addr"));
        // READY names a second listener as the resume URL, so tests see resumes go there.
        let resume = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let resume_url = format!("ws://{}", resume.local_addr().expect("addr"));
        let gateway = Self {
            url,
            resume_url,
            inner: Arc::new(Mutex::new(Inner {
                replay_extra: 1,
                ..Inner::default()
            })),
            changed,
        };
        for (listener, there) in [(listener, false), (resume, true)] {
            let serving = gateway.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let gateway = serving.clone();
                    tokio::spawn(async move { gateway.serve(stream, there).await });
                }
            });
        }
        gateway
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The gateway's URL (`ws://127.0.0.1:PORT`).
    #[must_use]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// How many resumes arrived on the `resume_gateway_url` that `READY` named.
    #[must_use]
    pub fn resumes_at_resume_url(&self) -> u64 {
        self.inner().resumed_there
    }

    /// The session starts seen so far.
    #[must_use]
    pub fn starts(&self) -> Vec<Start> {
        self.inner().starts.clone()
    }

    /// How many already-delivered dispatches a resume sends again (default 1).
    pub fn replay_on_resume(&self, extra: u64) {
        self.inner().replay_extra = extra;
    }

    /// Sends a dispatch on the newest connection; returns its sequence number.
    pub fn dispatch(&self, kind: &str, data: &Value) -> u64 {
        let mut inner = self.inner();
        inner.seq += 1;
        let seq = inner.seq;
        let frame = crate::payload::dispatch(kind, seq, data);
        inner.sent.push((seq, frame.clone()));
        if let Some(connection) = inner.connections.last() {
            let _ = connection.send(Control::Text(frame));
        }
        seq
    }

    /// Sends raw text (malformed or unknown payloads) on the newest connection.
    pub fn send_raw(&self, text: impl Into<String>) {
        if let Some(connection) = self.inner().connections.last() {
            let _ = connection.send(Control::Text(text.into()));
        }
    }

    /// Closes the newest connection with `code`.
    pub fn close(&self, code: u16) {
        if let Some(connection) = self.inner().connections.last() {
            let _ = connection.send(Control::Close(code));
        }
    }

    /// Drops the newest connection without a close frame.
    pub fn drop_connection(&self) {
        if let Some(connection) = self.inner().connections.last() {
            let _ = connection.send(Control::Drop);
        }
    }

    async fn serve(&self, stream: tokio::net::TcpStream, there: bool) {
        let Ok((_, mut socket)) = tokio_websockets::ServerBuilder::new().accept(stream).await
        else {
            return;
        };
        let hello = json!({"op": 10, "d": {"heartbeat_interval": 45_000}}).to_string();
        if socket.send(Message::text(hello)).await.is_err() {
            return;
        }
        let (control, mut controls) = mpsc::unbounded_channel();
        loop {
            tokio::select! {
                incoming = socket.next() => {
                    let Some(Ok(message)) = incoming else { return };
                    let Some(text) = message.as_text() else { continue };
                    let Ok(frame) = serde_json::from_str::<Value>(text) else { continue };
                    let replies = self.answer(&frame, &control, there);
                    for reply in replies {
                        if socket.send(Message::text(reply)).await.is_err() {
                            return;
                        }
                    }
                    self.changed.notify_waiters();
                }
                Some(control) = controls.recv() => match control {
                    Control::Text(text) => {
                        if socket.send(Message::text(text)).await.is_err() {
                            return;
                        }
                    }
                    Control::Close(code) => {
                        let code = CloseCode::try_from(code).ok();
                        let _ = socket.send(Message::close(code, "fake")).await;
                        let _ = socket.close().await;
                        return;
                    }
                    Control::Drop => return,
                },
            }
        }
    }

    /// The frames that answer `frame` from the client.
    fn answer(
        &self,
        frame: &Value,
        control: &mpsc::UnboundedSender<Control>,
        there: bool,
    ) -> Vec<String> {
        let mut inner = self.inner();
        match frame["op"].as_u64() {
            Some(1) => vec![json!({"op": 11}).to_string()],
            Some(2) => {
                let shard = &frame["d"]["shard"];
                let number = shard[0].as_u64().unwrap_or(0) as u32;
                let total = shard[1].as_u64().unwrap_or(1) as u32;
                inner.starts.push(Start::Identify(number, total));
                inner.connections.push(control.clone());
                inner.sessions += 1;
                inner.seq += 1;
                let ready = json!({
                    "v": 10, "session_id": format!("session-{}", inner.sessions),
                    "resume_gateway_url": self.resume_url, "guilds": [], "shard": [number, total],
                    "application": {"id": "77", "flags": 0},
                    "user": {"id": BOT_ID.to_string(), "username": "yetibot", "discriminator": "0",
                             "avatar": null, "bot": true, "mfa_enabled": false},
                });
                let seq = inner.seq;
                vec![crate::payload::dispatch("READY", seq, &ready)]
            }
            Some(6) => {
                let session = frame["d"]["session_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let from = frame["d"]["seq"].as_u64().unwrap_or(0);
                inner.starts.push(Start::Resume(session, from));
                if there {
                    inner.resumed_there += 1;
                }
                inner.connections.push(control.clone());
                let replay_from = from.saturating_sub(inner.replay_extra);
                let mut replies: Vec<String> = inner
                    .sent
                    .iter()
                    .filter(|(seq, _)| *seq > replay_from)
                    .map(|(_, frame)| frame.clone())
                    .collect();
                inner.seq += 1;
                let seq = inner.seq;
                replies.push(crate::payload::dispatch("RESUMED", seq, &json!({})));
                replies
            }
            _ => Vec::new(),
        }
    }
}
