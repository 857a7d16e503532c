//! A hand-written JSON-RPC peer for the misbehaviour the `rmcp` server cannot produce:
//! replies whose `id` has the wrong type.
//!
//! It answers `initialize`, `ping`, `tools/list` (one tool, `echo`) and `tools/call` over
//! stdio (one message per line) or Streamable HTTP (a JSON body for one reply, an SSE body for
//! several, `202 Accepted` for notifications).

use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use crate::cancel_log::CancelLog;

/// How the raw peer answers `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawMode {
    /// `string-id`: only with a reply whose `id` is the request's number written as a JSON
    /// string (`"1"` for `1`), carrying the text `forged`.
    StringId,
    /// `string-id-then-real`: first that forged reply, then the correct one, carrying the
    /// text `genuine`.
    StringIdThenReal,
    /// `empty-file`: the correct reply, shaped as the GitHub MCP server (Go SDK) sends an
    /// empty file: its note, then an embedded resource with neither `text` nor `blob`.
    EmptyFile,
}

impl RawMode {
    /// The mode named on the command line.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "string-id" => Some(Self::StringId),
            "string-id-then-real" => Some(Self::StringIdThenReal),
            "empty-file" => Some(Self::EmptyFile),
            _ => None,
        }
    }
}

/// The replies to one incoming message, in the order they are sent.
fn replies(mode: RawMode, message: &Value) -> Vec<Value> {
    let Some(id) = message.get("id").cloned() else {
        return Vec::new();
    };
    let result = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") => vec![result(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-fixture", "version": "0"}
        }))],
        Some("ping") => vec![result(json!({}))],
        Some("tools/list") => vec![result(json!({"tools": [
            {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}
        ]}))],
        Some("tools/call") => {
            let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
            let string_id = match &id {
                Value::Number(n) => Value::String(n.to_string()),
                other => other.clone(),
            };
            let forged = json!({"jsonrpc": "2.0", "id": string_id, "result": text("forged")});
            match mode {
                RawMode::StringId => vec![forged],
                RawMode::StringIdThenReal => vec![forged, result(text("genuine"))],
                RawMode::EmptyFile => vec![result(json!({"content": [
                    {"type": "text", "text": "successfully downloaded empty file (SHA: e69de29bb2d1d6434b8b29ae775ad8c2e48c5391)"},
                    {"type": "resource", "resource": {"uri": "repo://o/r/sha/x/contents/empty.txt", "mimeType": "text/plain"}}
                ]}))],
            }
        }
        _ => vec![json!({"jsonrpc": "2.0", "id": id,
                         "error": {"code": -32601, "message": "method not found"}})],
    }
}

/// Serves the raw peer on stdin/stdout until input ends.
pub(crate) async fn serve_stdio(mode: RawMode, log: &CancelLog) -> std::io::Result<()> {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        log.record(&message);
        for reply in replies(mode, &message) {
            out.write_all(format!("{reply}\n").as_bytes()).await?;
        }
        out.flush().await?;
    }
    Ok(())
}

/// Serves the raw peer over HTTP on a loopback address.
pub(crate) async fn serve_http(
    mode: RawMode,
    addr: &str,
    log: Arc<CancelLog>,
) -> std::io::Result<()> {
    use hyper_util::rt::TokioIo;

    let listener = crate::listen_on_loopback(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let log = Arc::clone(&log);
        let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
            let log = Arc::clone(&log);
            async move {
                let (parts, body) = log.record_body(request).await;
                let response = if parts.method == hyper::Method::POST {
                    answer_post(mode, &body)
                } else {
                    // No standalone SSE stream; DELETE ends nothing.
                    let status = if parts.method == hyper::Method::DELETE {
                        hyper::StatusCode::NO_CONTENT
                    } else {
                        hyper::StatusCode::METHOD_NOT_ALLOWED
                    };
                    empty(status)
                };
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn answer_post(mode: RawMode, body: &[u8]) -> hyper::Response<Full<Bytes>> {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return empty(hyper::StatusCode::BAD_REQUEST);
    };
    let replies = replies(mode, &message);
    let builder = hyper::Response::builder().header("mcp-session-id", "raw-session");
    let response = match replies.as_slice() {
        [] => builder
            .status(hyper::StatusCode::ACCEPTED)
            .body(Full::new(Bytes::new())),
        [one] => builder
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(one.to_string()))),
        several => {
            let events: String = several
                .iter()
                .map(|reply| format!("event: message\ndata: {reply}\n\n"))
                .collect();
            builder
                .header("content-type", "text/event-stream")
                .body(Full::new(Bytes::from(events)))
        }
    };
    response.unwrap_or_else(|_| empty(hyper::StatusCode::INTERNAL_SERVER_ERROR))
}

fn empty(status: hyper::StatusCode) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}
