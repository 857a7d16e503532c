//! A raw HTTP/1.1 client for tests that must send exactly the bytes they mean (wrong `Host`
//! headers, missing content types, oversized or chunked bodies) and read server-sent events
//! as they arrive. One request per connection; the response is read until the server closes
//! it.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for a response or an event before failing.
pub const WAIT: Duration = Duration::from_secs(30);

/// A response as it came off the wire (chunked bodies decoded).
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// The headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The first header of this name, case-insensitively.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    ///
    /// # Panics
    ///
    /// When the body is not JSON (a test failure).
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            panic!("a JSON body, got {:?}", String::from_utf8_lossy(&self.body))
        })
    }

    /// Whether any CORS header was sent.
    #[must_use]
    pub fn has_cors_headers(&self) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.to_ascii_lowercase().starts_with("access-control-"))
    }
}

/// Sends one request with exactly these headers (plus `Connection: close` and, for a body or
/// a POST, `Content-Length`) and reads the whole response.
///
/// # Panics
///
/// When the server cannot be reached or does not answer within [`WAIT`].
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> RawResponse {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream.write_all(body).await.expect("write body");
    read_response(&mut stream).await
}

/// Reads one whole response from `stream`: up to its `Content-Length`, to the last chunk of
/// a chunked body, or else until the server closes the connection (some servers keep it
/// open despite `Connection: close`).
///
/// # Panics
///
/// When nothing complete arrives within [`WAIT`].
pub async fn read_response(stream: &mut TcpStream) -> RawResponse {
    let mut bytes = Vec::new();
    let read = async {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if is_complete(&bytes) {
                return;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(WAIT, read)
        .await
        .expect("the response in time");
    parse_response(&bytes)
}

/// Whether `bytes` hold a whole response by its own framing.
fn is_complete(bytes: &[u8]) -> bool {
    let Some(split) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&bytes[..split]).to_ascii_lowercase();
    let body = &bytes[split + 4..];
    for line in head.split("\r\n") {
        if let Some(length) = line.strip_prefix("content-length:") {
            return length
                .trim()
                .parse::<usize>()
                .is_ok_and(|length| body.len() >= length);
        }
        if line.starts_with("transfer-encoding:") && line.contains("chunked") {
            return body.ends_with(b"0\r\n\r\n");
        }
    }
    false
}

/// Parses a complete response.
///
/// # Panics
///
/// When there is no response head.
#[must_use]
pub fn parse_response(bytes: &[u8]) -> RawResponse {
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = bytes[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    RawResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = bytes.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&bytes[..end]).trim(), 16).unwrap_or(0);
        if size == 0 || bytes.len() < end + 4 + size {
            break;
        }
        out.extend_from_slice(&bytes[end + 2..end + 2 + size]);
        bytes = &bytes[end + 4 + size..];
    }
    out
}

/// One server-sent event: its `id`, `event` name and `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id` field (empty when absent).
    pub id: String,
    /// The `event` field.
    pub event: String,
    /// The `data` field.
    pub data: String,
}

/// An open event stream, read incrementally.
#[derive(Debug)]
pub struct EventStream {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Events parsed but not yet returned.
    ready: std::collections::VecDeque<SseEvent>,
}

impl EventStream {
    /// Opens `GET path` with these headers and reads the response head.
    ///
    /// # Panics
    ///
    /// When the server cannot be reached.
    pub async fn open(addr: SocketAddr, path: &str, headers: &[(&str, String)]) -> Self {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let mut head = format!("GET {path} HTTP/1.1\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        Self {
            stream,
            buffer: Vec::new(),
            ready: std::collections::VecDeque::new(),
        }
    }

    /// Reads until the response head is complete and returns its status; the events after
    /// it stay buffered.
    ///
    /// # Panics
    ///
    /// When no head arrives within [`WAIT`].
    pub async fn status(&mut self) -> u16 {
        loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                return head
                    .split(' ')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .expect("a status");
            }
            let mut chunk = [0u8; 8192];
            let read = tokio::time::timeout(WAIT, self.stream.read(&mut chunk)).await;
            let Ok(Ok(n)) = read else {
                panic!("no response head in time");
            };
            assert!(n > 0, "the connection closed before a response head");
            self.buffer.extend_from_slice(&chunk[..n]);
        }
    }

    /// Waits until the server closes the stream (or [`WAIT`] passes).
    pub async fn closed(&mut self) -> bool {
        let mut rest = Vec::new();
        tokio::time::timeout(WAIT, self.stream.read_to_end(&mut rest))
            .await
            .is_ok()
    }

    /// The next event (comments skipped).
    ///
    /// # Panics
    ///
    /// When none arrives within [`WAIT`] or the stream ends.
    pub async fn next(&mut self) -> SseEvent {
        // Bytes read with the head may already hold events.
        self.parse();
        loop {
            if let Some(event) = self.ready.pop_front() {
                return event;
            }
            let mut chunk = [0u8; 8192];
            let read = tokio::time::timeout(WAIT, self.stream.read(&mut chunk)).await;
            let Ok(Ok(n)) = read else {
                panic!(
                    "no event in time; so far: {:?}",
                    String::from_utf8_lossy(&self.buffer)
                );
            };
            assert!(n > 0, "the event stream ended");
            self.buffer.extend_from_slice(&chunk[..n]);
            self.parse();
        }
    }

    /// The next event named `name`, skipping others.
    pub async fn next_named(&mut self, name: &str) -> SseEvent {
        loop {
            let event = self.next().await;
            if event.event == name {
                return event;
            }
        }
    }

    fn parse(&mut self) {
        // Chunk-size lines of the transfer encoding are not SSE fields, so they fall out.
        let text = String::from_utf8_lossy(&self.buffer).into_owned();
        let Some(last) = text.rfind("\n\n") else {
            return;
        };
        for block in text[..last].split("\n\n") {
            let mut event = SseEvent {
                id: String::new(),
                event: String::new(),
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    v.clone_into(&mut event.id);
                } else if let Some(v) = line.strip_prefix("event: ") {
                    v.clone_into(&mut event.event);
                } else if let Some(v) = line.strip_prefix("data: ") {
                    v.clone_into(&mut event.data);
                }
            }
            if !event.event.is_empty() {
                self.ready.push_back(event);
            }
        }
        let consumed = text[..last + 2].len();
        self.buffer.drain(..consumed.min(self.buffer.len()));
    }
}
