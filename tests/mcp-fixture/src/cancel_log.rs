//! Records every `notifications/cancelled` the fixture receives, as soon as it arrives, and
//! the request ID of every `hang` call it starts.
//!
//! The record is written where the message enters the server (the stdio transport, or the
//! HTTP request before it is answered), not in a notification handler that runs later, so a
//! test that waits for its client to finish sending can read a complete record.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};

/// Appends one JSON line per cancellation to a file, when one was given.
#[derive(Debug)]
pub(crate) struct CancelLog {
    path: Option<PathBuf>,
    lock: Mutex<()>,
}

impl CancelLog {
    pub(crate) fn new(path: Option<String>) -> Self {
        Self {
            path: path.map(PathBuf::from),
            lock: Mutex::new(()),
        }
    }

    /// Notes that a `hang` call with this request ID started, so a test can match the
    /// cancellation to it.
    pub(crate) fn note_hang(&self, request_id: Value) {
        self.append(&json!({"hang": request_id}));
    }

    /// Records `message` (or each message of a batch) that is a cancellation.
    pub(crate) fn record(&self, message: &Value) {
        let messages = match message {
            Value::Array(batch) => batch.iter().collect(),
            single => vec![single],
        };
        for message in messages {
            if message.get("method").and_then(Value::as_str) != Some("notifications/cancelled") {
                continue;
            }
            let params = message.get("params");
            let field = |name: &str| {
                params
                    .and_then(|p| p.get(name))
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            self.append(&json!({"requestId": field("requestId"), "reason": field("reason")}));
        }
    }

    fn append(&self, line: &Value) {
        let Some(path) = &self.path else {
            return;
        };
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }

    /// Reads a whole HTTP request body, records any cancellation in it and gives the request
    /// back with the same body.
    pub(crate) async fn record_request<B>(
        &self,
        request: hyper::Request<B>,
    ) -> hyper::Request<Full<Bytes>>
    where
        B: hyper::body::Body,
    {
        let (parts, bytes) = self.record_body(request).await;
        hyper::Request::from_parts(parts, Full::new(bytes))
    }

    /// Reads a whole HTTP request body and records any cancellation in it.
    pub(crate) async fn record_body<B>(
        &self,
        request: hyper::Request<B>,
    ) -> (hyper::http::request::Parts, Bytes)
    where
        B: hyper::body::Body,
    {
        let (parts, body) = request.into_parts();
        let bytes = body
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
            .unwrap_or_default();
        if let Ok(message) = serde_json::from_slice::<Value>(&bytes) {
            self.record(&message);
        }
        (parts, bytes)
    }
}

/// A server transport that records cancellations as it receives them.
pub(crate) struct Recording<T> {
    pub(crate) inner: T,
    pub(crate) log: std::sync::Arc<CancelLog>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Recording<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await?;
        if let Ok(value) = serde_json::to_value(&message) {
            self.log.record(&value);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
