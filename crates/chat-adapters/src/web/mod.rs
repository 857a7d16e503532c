//! The local web console: the bot's default adapter, a small page and JSON API served on
//! the loopback interface only, to the operator who holds the access token.
//!
//! Every request passes the guard first: a `Host` that is not a loopback name is refused
//! (403, against DNS rebinding), so is a foreign or `null` `Origin` and a cross-site
//! `Sec-Fetch-Site` (403, against cross-site requests), and any request without the token
//! (401). The token reaches the browser once, in the URL printed at start; the first visit
//! moves it into an `HttpOnly`, `SameSite=Strict` cookie and drops it from the address bar.
//! API writes must be JSON (415) of at most 1 MiB (413). No CORS header is ever sent, and
//! errors are JSON.
//!
//! Browsers keep cookies per host name, not per port, so the cookie also goes to any other
//! server the operator's browser opens on the same host name (say `http://127.0.0.1:8080`).
//! Such a server learns the token; keep untrusted local servers off the console's host name
//! (the console prints `127.0.0.1`; open other local servers as `localhost`), and restart
//! the bot for a new token. The cookie is the issue's design: a bearer token held only in
//! page memory would need every request, the event stream included, to carry a header.
//!
//! The console's user is the local operator: every event carries the operator's configured
//! identity, never anything the page sends. Conversations live in memory, bounded
//! ([`ConsoleBounds`]), and pages follow them over server-sent events that resume by update
//! number after a reconnect.

mod api;
mod assets;
mod guard;
pub mod published;
mod sse;
mod state;
mod token;
mod uploads;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use futures_util::future::BoxFuture;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::event::{Author, Place};
use crate::fit::Limits;
use crate::outbox::{
    HistoryError, HistoryLimits, HistoryMessage, Intake, Outbox, Posted, SendError,
};
use crate::reply::Outgoing;

pub use state::DEFAULT_ROOM;
pub use token::{AccessToken, TokenError};

/// The longest reaction the console shows.
pub const MAX_EMOJI_CHARS: usize = 64;

/// The console's default port.
pub const DEFAULT_PORT: u16 = 3003;

/// How long a client may take to send a request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle event stream sends a comment by default, so proxies and browsers keep
/// it open and a closed page's stream is noticed (its slot is freed at the next write).
pub const PING_INTERVAL: Duration = Duration::from_secs(15);
/// How long the console waits after a failed accept (out of file descriptors) before
/// accepting again.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(200);
/// The largest image the operator may attach to a message.
pub const MAX_UPLOAD_BYTES: usize = 4 << 20;
/// The most bytes of attached images kept in memory; past it the oldest leave first.
pub const MAX_KEPT_UPLOAD_BYTES: usize = 32 << 20;
/// How long open connections may finish once the console stops.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// The console's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsoleBounds {
    /// The most rooms.
    pub max_rooms: usize,
    /// The most messages kept per room, threads included; older ones leave memory (the
    /// history store keeps them).
    pub max_room_messages: usize,
    /// The largest request body.
    pub max_body_bytes: usize,
    /// The longest message the operator may send.
    pub max_text_bytes: usize,
    /// The most open event streams.
    pub max_event_streams: usize,
    /// The most open connections.
    pub max_connections: usize,
    /// How many updates a reconnecting page can catch up on before it must reload.
    pub log_capacity: usize,
    /// How often an idle event stream sends a ping comment.
    pub ping_interval: Duration,
    /// The most bytes of message text and attachments kept in memory, across rooms; past
    /// it the oldest messages leave memory first.
    pub max_bytes: usize,
    /// The most bytes the update log keeps for catching up.
    pub max_log_bytes: usize,
}

impl Default for ConsoleBounds {
    fn default() -> Self {
        Self {
            max_rooms: 64,
            max_room_messages: 2_000,
            max_body_bytes: 1 << 20,
            max_text_bytes: 64 * 1024,
            max_event_streams: 16,
            max_connections: 256,
            log_capacity: 4_096,
            ping_interval: PING_INTERVAL,
            max_bytes: 64 << 20,
            max_log_bytes: 16 << 20,
        }
    }
}

/// How to run a console.
#[derive(Debug, Clone)]
pub struct ConsoleOptions {
    /// Where to listen: a loopback address (`127.0.0.1:3003`, `[::1]:3003`).
    pub addr: SocketAddr,
    /// The access token.
    pub token: AccessToken,
    /// The local operator, as whom every message is sent.
    pub operator: Author,
    /// The bot, as the author of its own messages.
    pub bot: Author,
    /// The connection name in [`Place`]s; history stores it as the adapter key (`web` gives
    /// `:web`).
    pub connection: String,
    /// The bounds.
    pub bounds: ConsoleBounds,
    /// Where a room's earlier conversation comes from when a page first opens it in this
    /// process (the history store, so that a restart keeps the conversation in view);
    /// `None` starts every room empty.
    pub transcript: Option<Arc<dyn Transcript>>,
}

/// How many earlier messages a room shows when a page first opens it in a new process.
pub const RESTORED_MESSAGES: usize = 100;

/// How long a page's first load waits for the earlier conversation before it shows the
/// room without it.
pub const TRANSCRIPT_TIMEOUT: Duration = Duration::from_secs(5);

/// A room's earlier conversation, for a console that starts after a restart.
pub trait Transcript: Send + Sync {
    /// The latest messages of the console room `room`, at most `limit`, oldest first.
    fn recent<'a>(
        &'a self,
        room: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>>;
}

impl std::fmt::Debug for dyn Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transcript")
    }
}

/// Why the console could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The address is not a loopback address.
    #[error("the web console listens only on a loopback address (127.0.0.1 or [::1]), not {0}")]
    NotLoopback(std::net::IpAddr),
    /// The address could not be bound (in use, or not permitted).
    #[error("the web console cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No access token could be made.
    #[error(transparent)]
    Token(#[from] TokenError),
}

/// What the request handlers share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Arc<state::State>,
    pub(crate) token: AccessToken,
    pub(crate) operator: Author,
    pub(crate) intake: Intake,
    pub(crate) outbox: Arc<ConsoleOutbox>,
    pub(crate) port: u16,
    pub(crate) bounds: ConsoleBounds,
    pub(crate) streams: AtomicUsize,
    pub(crate) closing: watch::Receiver<bool>,
    pub(crate) transcript: Option<Arc<dyn Transcript>>,
    pub(crate) uploads: Arc<uploads::Uploads>,
}

/// A console bound to its address, ready to [`serve`](Console::serve).
#[derive(Debug)]
pub struct Console {
    listener: TcpListener,
    shared: Arc<Shared>,
    addr: SocketAddr,
    closing: watch::Sender<bool>,
}

impl Console {
    /// Binds the console's address. Messages the operator sends go to `intake`.
    ///
    /// # Errors
    ///
    /// [`ConsoleError::NotLoopback`] for any address other than a loopback one, before
    /// anything is bound; [`ConsoleError::Bind`] when it cannot be bound.
    pub async fn bind(options: ConsoleOptions, intake: Intake) -> Result<Self, ConsoleError> {
        if !options.addr.ip().is_loopback() {
            return Err(ConsoleError::NotLoopback(options.addr.ip()));
        }
        let listener = listen(options.addr).map_err(|source| ConsoleError::Bind {
            addr: options.addr,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| ConsoleError::Bind {
            addr: options.addr,
            source,
        })?;
        let state = Arc::new(state::State::new(
            options.bounds,
            AccessToken::nonce()?,
            options.connection,
            options.bot,
        ));
        let (closing, closing_rx) = watch::channel(false);
        let uploads = Arc::new(uploads::Uploads::new(MAX_KEPT_UPLOAD_BYTES));
        let shared = Arc::new(Shared {
            outbox: Arc::new(ConsoleOutbox {
                state: Arc::clone(&state),
                uploads: Arc::clone(&uploads),
            }),
            uploads,
            state,
            token: options.token,
            operator: options.operator,
            intake,
            port: addr.port(),
            bounds: options.bounds,
            streams: AtomicUsize::new(0),
            closing: closing_rx,
            transcript: options.transcript,
        });
        Ok(Self {
            listener,
            shared,
            addr,
            closing,
        })
    }

    /// The address it listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL that opens the console, token included: print it once for the operator.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.shared.token.expose())
    }

    /// Where the bot's answers to console messages go (the same outbox every console event
    /// carries).
    #[must_use]
    pub fn outbox(&self) -> Arc<dyn Outbox> {
        Arc::clone(&self.shared.outbox) as Arc<dyn Outbox>
    }

    /// Serves requests until `stop` completes, then stops accepting, ends the event streams
    /// and gives open requests [`STOP_GRACE`] to finish before dropping them. Every
    /// connection runs on a task this future owns: none outlives it.
    pub async fn serve(self, stop: impl std::future::Future<Output = ()>) {
        let Self {
            listener,
            shared,
            closing,
            ..
        } = self;
        let max = shared.bounds.max_connections;
        serve_connections(
            listener,
            max,
            stop,
            move |stream| {
                let shared = Arc::clone(&shared);
                let mut closing = shared.closing.clone();
                async move {
                    let service = hyper::service::service_fn(move |request| {
                        let shared = Arc::clone(&shared);
                        async move {
                            Ok::<_, std::convert::Infallible>(api::handle(&shared, request).await)
                        }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(connection);
                    tokio::select! {
                        _ = connection.as_mut() => return,
                        _ = closing.wait_for(|closing| *closing) => {}
                    }
                    // Stopping: finish the request in flight, then close (an idle
                    // keep-alive connection closes at once).
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            },
            move || {
                closing.send_replace(true);
            },
        )
        .await;
    }
}

/// Accepts connections on `listener` until `stop` completes, at most `max` open at once
/// (one over it is answered 503 and closed), each served by `connection` on a task this
/// future owns. Then it stops accepting, calls `stopping` (to tell open connections), and
/// gives them [`STOP_GRACE`] to finish before dropping them: none outlives it.
pub(super) async fn serve_connections<C, F>(
    listener: TcpListener,
    max: usize,
    stop: impl std::future::Future<Output = ()>,
    connection: C,
    stopping: impl FnOnce(),
) where
    C: Fn(tokio::net::TcpStream) -> F,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                // Count only connections that are still open.
                while connections.try_join_next().is_some() {}
                if connections.len() >= max {
                    refuse_busy(&stream);
                    continue;
                }
                connections.spawn(connection(stream));
            }
        }
    }
    drop(listener);
    stopping();
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(STOP_GRACE, drain).await.is_err() {
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
}

/// How many connections may wait to be accepted: more than the operating system's usual
/// default (128), so that a burst of requests from the page and scripts is queued rather
/// than dropped.
const LISTEN_BACKLOG: u32 = 1024;

/// A listening socket on `addr` with [`LISTEN_BACKLOG`].
pub(super) fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // On Unix this only lets a restarted console reuse a port in TIME_WAIT; elsewhere (on
    // Windows) it would let another process bind the same port, so it stays off there.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Answers a connection over the bound with 503 and closes it, without waiting: the short
/// response fits the socket's send buffer, and a client that is not reading loses nothing
/// it asked for.
pub(super) fn refuse_busy(stream: &tokio::net::TcpStream) {
    const BODY: &str =
        r#"{"error":"the console has too many open connections; try again in a moment"}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

/// The console's [`Outbox`]: the bot's messages go into the console's state, which the pages
/// follow.
#[derive(Debug)]
pub(crate) struct ConsoleOutbox {
    state: Arc<state::State>,
    uploads: Arc<uploads::Uploads>,
}

impl Outbox for ConsoleOutbox {
    fn limits(&self) -> Limits {
        Limits::WEB
    }

    fn attachment_bytes(&self, url: &str) -> Option<Arc<[u8]>> {
        self.uploads.bytes(url)
    }

    fn post<'a>(
        &'a self,
        place: &'a Place,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let ids = self.state.post(place, messages).ok_or(SendError::Gone)?;
            Ok(Posted {
                place: place.clone(),
                ids,
            })
        })
    }

    fn replace<'a>(
        &'a self,
        posted: &'a Posted,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let mut ids = Vec::with_capacity(messages.len());
            let mut old = posted.ids.iter();
            let mut extra = Vec::new();
            for message in messages {
                match old.next() {
                    Some(id) if self.state.replace(id, message.clone()) => ids.push(id.clone()),
                    _ => extra.push(message),
                }
            }
            for id in old {
                self.state.delete(id);
            }
            if !extra.is_empty() {
                ids.extend(
                    self.state
                        .post(&posted.place, extra)
                        .ok_or(SendError::Gone)?,
                );
            }
            Ok(Posted {
                place: posted.place.clone(),
                ids,
            })
        })
    }

    fn delete<'a>(&'a self, posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            for id in &posted.ids {
                self.state.delete(id);
            }
            Ok(())
        })
    }

    fn react<'a>(
        &'a self,
        _place: &'a Place,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            if emoji.trim().is_empty()
                || emoji.chars().count() > MAX_EMOJI_CHARS
                || emoji.chars().any(char::is_control)
            {
                return Err(SendError::Refused(
                    "an emoji is 1 to 64 characters without control characters",
                ));
            }
            if self.state.react(message_id, emoji) {
                Ok(())
            } else {
                Err(SendError::Gone)
            }
        })
    }

    fn thread_history<'a>(
        &'a self,
        place: &'a Place,
        before: &'a str,
        limits: HistoryLimits,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
        Box::pin(async move { self.state.thread_history(place, before, limits) })
    }
}

/// `:yetibot :web`: where the console listens, and whether it runs.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WebConfig {
    /// Whether the console runs (default true).
    pub enabled: Option<bool>,
    /// The loopback address to listen on: `127.0.0.1` (the default), `::1` or `localhost`.
    pub host: Option<String>,
    /// The port (default [`DEFAULT_PORT`]; 0 picks a free one).
    pub port: Option<i64>,
    /// The file that keeps the access token across restarts (read by the binary, which owns
    /// files; this crate only takes the token).
    pub token_file: Option<String>,
}

/// A configuration problem of the `:web` section: the key and a reason that never quotes
/// the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct WebConfigError {
    /// The key, relative to the `:web` map.
    pub key: &'static str,
    /// What is wrong.
    pub reason: &'static str,
}

/// The console's address from its configuration, or `None` when it is turned off.
///
/// # Errors
///
/// A host that is not a loopback address (the console never listens elsewhere) or a port
/// outside 0–65535.
pub fn web_address(config: &WebConfig) -> Result<Option<SocketAddr>, Vec<WebConfigError>> {
    let mut problems = Vec::new();
    let host = config.host.as_deref().map(str::trim).unwrap_or("127.0.0.1");
    let ip: Option<std::net::IpAddr> = if host.eq_ignore_ascii_case("localhost") {
        Some(std::net::Ipv4Addr::LOCALHOST.into())
    } else {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()
    };
    match ip {
        Some(ip) if ip.is_loopback() => {}
        Some(_) => problems.push(WebConfigError {
            key: "host",
            reason: "must be a loopback address (127.0.0.1, ::1 or localhost): the console is for this machine only",
        }),
        None => problems.push(WebConfigError {
            key: "host",
            reason: "must be an IP address or localhost",
        }),
    }
    let port = match config.port {
        None => Some(DEFAULT_PORT),
        Some(port) => u16::try_from(port).ok(),
    };
    if port.is_none() {
        problems.push(WebConfigError {
            key: "port",
            reason: "must be a whole number from 0 to 65535",
        });
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if config.enabled == Some(false) {
        return Ok(None);
    }
    Ok(ip.zip(port).map(|(ip, port)| SocketAddr::new(ip, port)))
}

#[cfg(test)]
mod config_tests {
    use super::*;

    fn check(
        host: Option<&str>,
        port: Option<i64>,
    ) -> Result<Option<SocketAddr>, Vec<&'static str>> {
        web_address(&WebConfig {
            enabled: None,
            host: host.map(str::to_owned),
            port,
            token_file: None,
        })
        .map_err(|problems| problems.into_iter().map(|p| p.key).collect())
    }

    #[test]
    fn the_console_address_is_loopback_only() {
        assert_eq!(
            check(None, None),
            Ok(Some("127.0.0.1:3003".parse().expect("addr")))
        );
        assert_eq!(
            check(Some("::1"), Some(8080)),
            Ok(Some("[::1]:8080".parse().expect("addr")))
        );
        assert_eq!(
            check(Some("[::1]"), Some(0)),
            Ok(Some("[::1]:0".parse().expect("addr")))
        );
        assert_eq!(
            check(Some("localhost"), None),
            Ok(Some("127.0.0.1:3003".parse().expect("addr")))
        );
        assert_eq!(check(Some("0.0.0.0"), None), Err(vec!["host"]));
        assert_eq!(
            check(Some("192.168.1.2"), Some(70_000)),
            Err(vec!["host", "port"])
        );
        assert_eq!(
            check(Some("example.org"), Some(-1)),
            Err(vec!["host", "port"])
        );
        let off = WebConfig {
            enabled: Some(false),
            ..WebConfig::default()
        };
        assert_eq!(web_address(&off), Ok(None));
    }
}
