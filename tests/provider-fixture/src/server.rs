//! The listening server: per-path reply queues, request recording and the accept loop.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpSocket;
use tokio::task::JoinHandle;

use crate::reply::{End, Reply};

/// How many connections may wait to be accepted.
const BACKLOG: u32 = 1024;

/// A request the fixture received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The path without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// All request headers.
    pub headers: HeaderMap,
    /// The whole request body.
    pub body: Bytes,
}

/// Builds a reply from the request it answers.
type Respond = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct State {
    routes: HashMap<String, VecDeque<Reply>>,
    responders: HashMap<String, Respond>,
    requests: Vec<Recorded>,
    connections: usize,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("routes", &self.routes)
            .field("responders", &self.responders.keys().collect::<Vec<_>>())
            .field("requests", &self.requests.len())
            .field("connections", &self.connections)
            .finish()
    }
}

/// A running fixture server on 127.0.0.1.
///
/// Each path has a queue of replies: a request takes the front reply, and the last reply
/// stays to answer any further requests. A path with a responder
/// ([`respond_with`](Self::respond_with)) is answered by it instead. Unscripted paths
/// answer `404`.
#[derive(Debug)]
pub struct Fixture {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    accept: JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Fixture {
    /// Binds 127.0.0.1 on a free port (with room for 1,024 connections waiting to be
    /// accepted) and starts serving on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// When the port cannot be bound.
    pub async fn start() -> io::Result<Self> {
        // A real provider takes a burst of connections; the default backlog of 128 (tokio's,
        // as the standard library's) would drop SYNs past it and stall those clients for the
        // one-second retransmission.
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let listener = socket.listen(BACKLOG)?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .connections += 1;
                let state = Arc::clone(&shared);
                connections.spawn(async move {
                    let service = service_fn(move |req| handle(Arc::clone(&state), req));
                    // Aborted bodies end the connection with an error, which is the point.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            addr,
            state,
            accept,
        })
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `reply` for requests to `path` (any method).
    pub fn route(&self, path: &str, reply: Reply) {
        self.lock()
            .routes
            .entry(path.to_owned())
            .or_default()
            .push_back(reply);
    }

    /// Answers every request to `path` with `respond(request)` instead of a queued reply:
    /// for replies that depend on what was sent, such as an answer that echoes a marker
    /// from the prompt so that a caller can pair each answer with its request.
    pub fn respond_with<F>(&self, path: &str, respond: F)
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        self.lock()
            .responders
            .insert(path.to_owned(), Arc::new(respond));
    }

    /// Every request received so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<Recorded> {
        self.lock().requests.clone()
    }

    /// How many TCP connections were accepted (pooled clients reuse them).
    #[must_use]
    pub fn connections(&self) -> usize {
        self.lock().connections
    }

    /// How many requests reached `path`.
    #[must_use]
    pub fn count(&self, path: &str) -> usize {
        self.lock()
            .requests
            .iter()
            .filter(|r| r.path == path)
            .count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

type Body = StreamBody<BoxStream<'static, Result<Frame<Bytes>, io::Error>>>;

async fn handle(
    state: Arc<Mutex<State>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: path.clone(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers.clone(),
        body,
    };
    let (queued, responder) = {
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        state.requests.push(recorded.clone());
        match state.responders.get(&path).cloned() {
            Some(responder) => (None, Some(responder)),
            None => {
                let queued = state.routes.get_mut(&path).and_then(|queue| {
                    if queue.len() > 1 {
                        queue.pop_front()
                    } else {
                        queue.front().cloned()
                    }
                });
                (queued, None)
            }
        }
    };
    // The responder runs outside the lock, so it may take its time.
    let reply = responder.map(|responder| responder(&recorded)).or(queued);
    let reply = reply.unwrap_or_else(|| Reply::status_json(404, "{\"error\":\"no route\"}"));
    Ok(respond(reply))
}

fn respond(reply: Reply) -> Response<Body> {
    let delay = reply.chunk_delay;
    let chunks = stream::iter(reply.chunks).then(move |chunk| async move {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        Ok(Frame::data(chunk))
    });
    let stream: BoxStream<'static, Result<Frame<Bytes>, io::Error>> = match reply.end {
        End::Close => chunks.boxed(),
        End::Stall => chunks.chain(stream::pending()).boxed(),
        End::Abort => chunks
            .chain(stream::once(async {
                Err(io::Error::new(
                    io::ErrorKind::ConnectionReset,
                    "scripted abort",
                ))
            }))
            .boxed(),
    };
    let mut response = Response::new(StreamBody::new(stream));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::try_from(name),
            http::HeaderValue::try_from(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
