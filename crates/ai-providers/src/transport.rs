//! The HTTP transport: one pooled hyper client, deadlines, status mapping and bounded bodies.
//!
//! Requests are sent exactly once: there is no retry and no redirect handling (a 3xx is an
//! error). hyper-util's pooled client runs each connection on a task it spawns on the
//! current tokio runtime; that is the pool's design and the only work this crate does not
//! own directly. The tasks end when their connections close or the client is dropped.

/// The `User-Agent` every request names: this library and its version.
const USER_AGENT: &str = concat!("yetibot-rs/", env!("CARGO_PKG_VERSION"));

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use yetibot_redaction::{Secret, Secrets};

use crate::config::Provider;
use crate::error::{Error, Result, TIMEOUT_CONNECT};

/// Who a request goes to, as the transport needs to know it: the name its errors carry and
/// the AI Gateway header, if any. A [`Provider`] converts into one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer<'a> {
    name: &'a str,
    gateway: Option<&'a str>,
}

impl<'a> From<&'a Provider> for Peer<'a> {
    fn from(provider: &'a Provider) -> Self {
        Self {
            name: provider.name(),
            gateway: provider.gateway_id(),
        }
    }
}

impl<'a> Peer<'a> {
    /// A peer that is not a configured provider, such as a published document's host,
    /// named `name` in errors.
    pub(crate) fn named(name: &'a str) -> Self {
        Self {
            name,
            gateway: None,
        }
    }

    /// A peer named `name` reached through the AI Gateway `gateway`, if any.
    pub(crate) fn gateway(name: &'a str, gateway: Option<&'a str>) -> Self {
        Self { name, gateway }
    }
}

/// A request body and its media type.
pub(crate) struct Payload {
    pub(crate) bytes: Vec<u8>,
    pub(crate) content_type: &'static str,
}

impl Payload {
    /// A JSON document.
    pub(crate) fn json(bytes: Vec<u8>) -> Self {
        Self {
            bytes,
            content_type: "application/json",
        }
    }
}

/// Deadlines and size bounds for every request the [`Client`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// How long establishing a connection (TCP and TLS) may take. Default 5 s.
    pub connect_timeout: Duration,
    /// How long to wait for the response head, and then for each piece of the body.
    /// Default 120 s, the spec's checked read deadline.
    pub read_timeout: Duration,
    /// The largest JSON reply (Chat Completions answers, error-free JSON Responses replies
    /// are bounded by `max_turn_bytes` instead). Default 4 MiB.
    pub max_json_bytes: usize,
    /// The largest model-listing page. Default 8 MiB: 8,192 IDs with metadata fit easily.
    pub max_listing_bytes: usize,
    /// The longest server-sent event, in characters. Default 4 MiB.
    pub max_event_chars: usize,
    /// The most wire bytes of one streamed model turn. Default 16 MiB.
    pub max_turn_bytes: usize,
    /// The ceiling on one whole operation (a model turn, a model listing with all its
    /// pages, a metadata lookup), however steadily the provider keeps sending: the read
    /// deadline bounds each wait, this bounds their sum. Default 10 minutes.
    pub total_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(120),
            max_json_bytes: 4 << 20,
            max_listing_bytes: 8 << 20,
            max_event_chars: 4 << 20,
            max_turn_bytes: 16 << 20,
            total_timeout: Duration::from_secs(600),
        }
    }
}

/// A pooled HTTP/1.1 and HTTP/2 client (rustls with the ring provider and the webpki
/// roots) that talks to providers.
///
/// Construction performs no I/O. Clone it freely: clones share the pool.
#[derive(Clone)]
pub struct Client {
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    options: ClientOptions,
    secrets: Secrets,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Builds a client with these options.
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] when the TLS configuration cannot be built.
    pub fn new(options: ClientOptions) -> Result<Self> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(options.connect_timeout));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| Error::Tls(Box::new(e)))?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let http = pooled_client_builder()
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(https);
        Ok(Self {
            http,
            options,
            secrets: Secrets::empty(),
        })
    }

    /// The same client (sharing its pool) that also redacts these credentials, normally
    /// every credential of the configuration, from the provider text it passes on as data:
    /// model catalog records. A request's own key is always redacted as well.
    #[must_use]
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// The credentials this client redacts (see [`Client::with_secrets`]).
    #[must_use]
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The options this client was built with.
    #[must_use]
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// The same client (sharing its pool) with another read deadline.
    pub(crate) fn with_read_timeout(&self, read_timeout: Duration) -> Self {
        let mut client = self.clone();
        client.options.read_timeout = read_timeout;
        client
    }

    /// Runs one whole operation under [`ClientOptions::total_timeout`].
    pub(crate) async fn within_ceiling<'p, T>(
        &self,
        peer: impl Into<Peer<'p>>,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let peer = peer.into();
        tokio::time::timeout(self.options.total_timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout {
                    provider: peer.name.to_owned(),
                    phase: "before the whole request finished",
                })
            })
    }

    /// Sends one request and returns the successful response head and body.
    pub(crate) async fn send<'p>(
        &self,
        peer: impl Into<Peer<'p>>,
        method: Method,
        url: &str,
        bearer: Option<&Secret>,
        body: Option<Payload>,
        accept: &'static str,
    ) -> Result<Response<Incoming>> {
        let peer = peer.into();
        let name = || peer.name.to_owned();
        let mut builder = Request::builder()
            .method(method)
            .uri(url)
            .header(http::header::ACCEPT, accept)
            // Some services (GitHub's REST API) refuse a request that does not name its
            // client.
            .header(http::header::USER_AGENT, USER_AGENT);
        if let Some(token) = bearer {
            let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose()))
                .map_err(|_| Error::CredentialUnavailable { provider: name() })?;
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        if let Some(gateway) = peer.gateway {
            builder = builder.header("cf-aig-gateway-id", gateway);
        }
        if let Some(payload) = &body {
            builder = builder.header(CONTENT_TYPE, payload.content_type);
        }
        let request = builder
            .body(Full::new(Bytes::from(
                body.map(|payload| payload.bytes).unwrap_or_default(),
            )))
            .map_err(|_| Error::Setup {
                provider: name(),
                reason: "the request URL or a header value is not valid",
            })?;
        let response =
            match tokio::time::timeout(self.options.read_timeout, self.http.request(request)).await
            {
                Err(_) => {
                    return Err(Error::Timeout {
                        provider: name(),
                        phase: "waiting for the response",
                    });
                }
                Ok(Err(e)) => return Err(classify(peer, &e)),
                Ok(Ok(response)) => response,
            };
        if let Err(error) = check_status(peer, &response) {
            return Err(self.with_detail(error, response, bearer).await);
        }
        Ok(response)
    }

    /// A status error with what the provider's JSON error body says went wrong, read
    /// within a small bound and the read deadline; the error as it was when the body says
    /// nothing usable.
    async fn with_detail(
        &self,
        error: Error,
        response: Response<Incoming>,
        bearer: Option<&Secret>,
    ) -> Error {
        let Error::HttpStatus {
            provider,
            status,
            reason,
            detail: None,
        } = error
        else {
            return error;
        };
        let body = self
            .read_bounded(
                Peer::named(provider.as_str()),
                response.into_body(),
                MAX_ERROR_BODY_BYTES,
                "error body",
            )
            .await
            .ok();
        let secrets = self.secrets.with_extra(bearer).ok();
        let detail =
            body.and_then(|body| error_detail(&body, secrets.as_ref().unwrap_or(&self.secrets)));
        Error::HttpStatus {
            provider,
            status,
            reason,
            detail,
        }
    }

    /// Reads a whole body of at most `limit` bytes, each piece within the read deadline.
    pub(crate) async fn read_bounded<'p>(
        &self,
        peer: impl Into<Peer<'p>>,
        mut body: Incoming,
        limit: usize,
        what: &'static str,
    ) -> Result<Bytes> {
        let peer = peer.into();
        let mut buffer = BytesMut::new();
        loop {
            let frame = match tokio::time::timeout(self.options.read_timeout, body.frame()).await {
                Err(_) => {
                    return Err(Error::Timeout {
                        provider: peer.name.to_owned(),
                        phase: "reading the response body",
                    });
                }
                Ok(None) => return Ok(buffer.freeze()),
                Ok(Some(Err(_))) => {
                    return Err(Error::ConnectionLost {
                        provider: peer.name.to_owned(),
                        phase: "while it sent its answer",
                    });
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                if buffer.len() + data.len() > limit {
                    return Err(Error::TooLarge {
                        provider: peer.name.to_owned(),
                        what,
                        limit,
                    });
                }
                buffer.extend_from_slice(&data);
            }
        }
    }
}

/// The pool's settings, apart from the connector. hyper-util retries a request on a fresh
/// connection when a pooled one closed before the request went out; no request is ever
/// retried here, so that is turned off, and the caller sees the failure.
fn pooled_client_builder() -> hyper_util::client::legacy::Builder {
    let mut builder = HyperClient::builder(TokioExecutor::new());
    builder
        .retry_canceled_requests(false)
        .timer(TokioTimer::new());
    builder
}

/// Whether the response declares a server-sent-event stream.
pub(crate) fn is_event_stream(response: &Response<Incoming>) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// The longest `Retry-After` kept, in seconds (one day); larger or non-numeric values are
/// dropped rather than trusted.
pub const MAX_RETRY_AFTER_SECS: u64 = 86_400;

/// The most characters of a provider's own error text an error shows.
pub const MAX_ERROR_DETAIL_CHARS: usize = 300;

fn check_status(peer: Peer<'_>, response: &Response<Incoming>) -> Result<()> {
    let status = response.status();
    let name = peer.name.to_owned();
    if status.is_success() {
        return Ok(());
    }
    Err(match status {
        s if s.is_redirection() => Error::Redirect {
            provider: name,
            status: s.as_u16(),
        },
        StatusCode::TOO_MANY_REQUESTS => Error::RateLimited {
            provider: name,
            retry_after_secs: response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|s| *s <= MAX_RETRY_AFTER_SECS),
        },
        StatusCode::FORBIDDEN => Error::AccessDenied { provider: name },
        s => Error::HttpStatus {
            provider: name,
            status: s.as_u16(),
            reason: s.canonical_reason().unwrap_or("unexpected status"),
            detail: None,
        },
    })
}

/// The most of an error body read for its detail.
const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;

/// What a JSON error body says went wrong (`error.message`, else `error.code`, else a
/// top-level `message` or `detail`), as one line: control characters and runs of
/// whitespace become single spaces, every credential in `secrets` is redacted, and the text
/// is cut to [`MAX_ERROR_DETAIL_CHARS`] characters. `None` for anything else.
pub(crate) fn error_detail(body: &[u8], secrets: &Secrets) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    fn text(v: Option<&serde_json::Value>) -> Option<&str> {
        v.and_then(serde_json::Value::as_str)
    }
    let error = value.get("error");
    let said = text(error.and_then(|e| e.get("message")))
        .or_else(|| text(error.and_then(|e| e.get("code"))))
        .or_else(|| text(error))
        .or_else(|| text(value.get("message")))
        .or_else(|| text(value.get("detail")))?;
    // Redacted whole first, so that a secret is never cut into a piece that escapes it.
    let redacted = secrets.redact_text(said);
    let mut line = String::new();
    let mut space = false;
    for c in redacted.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !line.is_empty();
            continue;
        }
        if space {
            line.push(' ');
            space = false;
        }
        line.push(c);
    }
    if line.is_empty() {
        return None;
    }
    let cut = line
        .char_indices()
        .nth(MAX_ERROR_DETAIL_CHARS)
        .map(|(at, _)| at);
    if let Some(at) = cut {
        line.truncate(at);
        line.push('…');
    }
    Some(line)
}

fn classify(peer: Peer<'_>, error: &hyper_util::client::legacy::Error) -> Error {
    let name = peer.name.to_owned();
    if error.is_connect() {
        // The connector reports its own timeout as a connect error whose chain mentions it.
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::TimedOut
            {
                return Error::Timeout {
                    provider: name,
                    phase: TIMEOUT_CONNECT,
                };
            }
            source = e.source();
        }
        return Error::Unreachable { provider: name };
    }
    Error::ConnectionLost {
        provider: name,
        phase: "before its answer began",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hyper-util retries, on a new connection, a request whose pooled connection closed
    /// before it went out; its builder turns that on by default, so the invariant "no
    /// request is retried" failed inside the library we build on.
    #[test]
    fn hyper_util_canceled_request_retry_is_off() {
        let builder = format!("{:?}", pooled_client_builder());
        assert!(
            builder.contains("retry_canceled_requests: false"),
            "{builder}"
        );
    }
}
