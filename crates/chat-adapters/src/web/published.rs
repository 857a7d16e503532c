//! Images the bot publishes at a public base URL the operator sets (`:yetibot :images
//! :public-url`): generated images are kept in a bounded store ([`Published`]) under names of
//! 128 random bits, and a small server ([`PublishedServer`]) answers `GET` and `HEAD` of
//! `/<name>` with exactly the stored bytes. The operator puts a reverse proxy (or a port
//! mapping) in front of its listening address. Nothing else is served: a name is accepted
//! only in the form the store makes (32 lowercase hexadecimal characters and the image's
//! extension), so no argument or path can choose a file, and the oldest images are dropped
//! first once the count or byte bound is reached.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use tokio::net::TcpListener;

use super::WebConfigError;
use super::api::{Body, body};

/// Default of `:max-count`.
pub const DEFAULT_MAX_COUNT: usize = 128;
/// Default of `:max-bytes` (128 MiB).
pub const DEFAULT_MAX_BYTES: usize = 128 * 1024 * 1024;
/// The largest `:max-count`.
pub const MAX_MAX_COUNT: usize = 100_000;
/// The largest `:max-bytes` (4 GiB; less where memory addresses are narrower).
pub const MAX_MAX_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// Default of `:listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:3100";
/// The most connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// How long one connection may stay open, requests and responses together: a client that
/// reads slowly or idles cannot hold a place for longer.
pub const CONNECTION_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// `:yetibot :images`, exactly as configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ImagesConfig {
    /// The public URL the served images are reached at (`https://bot.example/images`).
    pub public_url: Option<String>,
    /// The address the image server listens on (default `127.0.0.1:3100`).
    pub listen: Option<String>,
    /// The most images kept (default 128).
    pub max_count: Option<u64>,
    /// The most bytes kept (default 128 MiB).
    pub max_bytes: Option<u64>,
}

/// A validated `:images` configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishOptions {
    /// The public base URL, without a trailing `/`.
    pub public_url: String,
    /// Where the server listens.
    pub listen: SocketAddr,
    /// The most images kept.
    pub max_count: usize,
    /// The most bytes kept.
    pub max_bytes: usize,
}

/// The publishing options, or `None` without `:public-url` (nothing is published or
/// served).
///
/// # Errors
///
/// Every problem, by key relative to `:images`: a public URL that is not absolute `https`
/// (plain `http` only to a loopback host) or has credentials, a query or a fragment; a
/// listening address that is not `ip:port`; bounds out of range. Reasons never quote a
/// value.
pub fn publish_options(
    config: &ImagesConfig,
) -> Result<Option<PublishOptions>, Vec<WebConfigError>> {
    let mut problems = Vec::new();
    let problem = |key, reason| WebConfigError { key, reason };
    let listen = config.listen.as_deref().unwrap_or(DEFAULT_LISTEN).trim();
    let listen = listen.parse::<SocketAddr>().map_err(|_| {
        problems.push(problem(
            "listen",
            "must be an IP address and port, such as 127.0.0.1:3100",
        ));
    });
    let count = config.max_count.map_or(Ok(DEFAULT_MAX_COUNT), |n| {
        usize::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_MAX_COUNT).contains(n))
            .ok_or(())
    });
    if count.is_err() {
        problems.push(problem(
            "max-count",
            "must be a whole number from 1 to 100000",
        ));
    }
    let bytes = config.max_bytes.map_or(Ok(DEFAULT_MAX_BYTES), |n| {
        Some(n)
            .filter(|n| (1024 * 1024..=MAX_MAX_BYTES).contains(n))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(())
    });
    if bytes.is_err() {
        problems.push(problem(
            "max-bytes",
            "must be a whole number of bytes from 1 MiB to 4 GiB",
        ));
    }
    let public_url = config.public_url.as_deref().map(str::trim);
    if let Some(url) = public_url
        && let Err(reason) = check_public_url(url)
    {
        problems.push(problem("public-url", reason));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let (Some(url), Ok(listen), Ok(max_count), Ok(max_bytes)) = (public_url, listen, count, bytes)
    else {
        return Ok(None);
    };
    Ok(Some(PublishOptions {
        public_url: url.trim_end_matches('/').to_owned(),
        listen,
        max_count,
        max_bytes,
    }))
}

fn check_public_url(url: &str) -> Result<(), &'static str> {
    let parsed = url::Url::parse(url).map_err(|_| "must be an absolute https URL")?;
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => return Err("must be an absolute https URL"),
    };
    if !(parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback)) {
        return Err("must use https (plain http only to a loopback address)");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not contain credentials");
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err("must not contain a query or fragment");
    }
    Ok(())
}

/// The media types published, with the extension their names end in.
const TYPES: [(&str, &str); 3] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/webp", "webp"),
];

/// The bounded store of published images. Cheap to clone; clones share the store.
#[derive(Clone)]
pub struct Published {
    shelf: Arc<Mutex<Shelf>>,
    public_url: Arc<str>,
    max_count: usize,
    max_bytes: usize,
}

impl std::fmt::Debug for Published {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shelf = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Published")
            .field("images", &shelf.order.len())
            .field("bytes", &shelf.bytes)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Shelf {
    order: VecDeque<String>,
    images: HashMap<String, (&'static str, bytes::Bytes)>,
    bytes: usize,
}

impl Published {
    /// An empty store with these options.
    #[must_use]
    pub fn new(options: &PublishOptions) -> Self {
        Self {
            shelf: Arc::default(),
            public_url: Arc::from(options.public_url.as_str()),
            max_count: options.max_count,
            max_bytes: options.max_bytes,
        }
    }

    /// Keeps `bytes` of `media_type` (PNG, JPEG or WebP) under a new name, dropping the
    /// oldest images while the store is over its bounds, and returns its public URL. `None`
    /// for another media type, an image larger than the whole store, or when the system
    /// has no randomness for a name.
    #[must_use]
    pub fn publish(&self, media_type: &'static str, bytes: Arc<[u8]>) -> Option<String> {
        let (_, extension) = TYPES.iter().find(|(known, _)| *known == media_type)?;
        if bytes.is_empty() || bytes.len() > self.max_bytes {
            return None;
        }
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).ok()?;
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("{hex}.{extension}");
        let mut shelf = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        while !shelf.order.is_empty()
            && (shelf.order.len() >= self.max_count || shelf.bytes + bytes.len() > self.max_bytes)
        {
            if let Some(oldest) = shelf.order.pop_front()
                && let Some((_, gone)) = shelf.images.remove(&oldest)
            {
                shelf.bytes -= gone.len();
            }
        }
        shelf.bytes += bytes.len();
        shelf.order.push_back(name.clone());
        shelf
            .images
            .insert(name.clone(), (media_type, bytes::Bytes::from_owner(bytes)));
        Some(format!("{}/{name}", self.public_url))
    }

    /// The image stored under `name`, if any.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<(&'static str, bytes::Bytes)> {
        if !is_published_name(name) {
            return None;
        }
        let shelf = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        shelf
            .images
            .get(name)
            .map(|(media_type, bytes)| (*media_type, bytes.clone()))
    }

    /// How many images and bytes are kept.
    #[must_use]
    pub fn usage(&self) -> (usize, usize) {
        let shelf = self.shelf.lock().unwrap_or_else(PoisonError::into_inner);
        (shelf.order.len(), shelf.bytes)
    }
}

/// Whether `name` has the form the store gives: 32 lowercase hexadecimal characters, `.`,
/// and a published extension.
fn is_published_name(name: &str) -> bool {
    let Some((hex, extension)) = name.split_once('.') else {
        return false;
    };
    hex.len() == 32
        && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && TYPES.iter().any(|(_, known)| *known == extension)
}

/// The image server, bound and not yet serving.
pub struct PublishedServer {
    listener: TcpListener,
    store: Published,
}

impl std::fmt::Debug for PublishedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishedServer")
            .field("addr", &self.local_addr())
            .finish_non_exhaustive()
    }
}

impl PublishedServer {
    /// Binds `addr` to serve `store`.
    ///
    /// # Errors
    ///
    /// The listening socket could not be made.
    pub fn bind(addr: SocketAddr, store: Published) -> std::io::Result<Self> {
        Ok(Self {
            listener: super::listen(addr)?,
            store,
        })
    }

    /// Where it listens.
    #[must_use]
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves until `stop` completes, then gives open requests
    /// [`STOP_GRACE`](super::STOP_GRACE) to finish.
    pub async fn serve(self, stop: impl std::future::Future<Output = ()>) {
        let Self { listener, store } = self;
        super::serve_connections(
            listener,
            MAX_CONNECTIONS,
            stop,
            move |stream| {
                let store = store.clone();
                async move {
                    let service = hyper::service::service_fn(move |request| {
                        let response = answer(&store, &request);
                        async move { Ok::<_, std::convert::Infallible>(response) }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(super::HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service);
                    let _ = tokio::time::timeout(CONNECTION_DEADLINE, connection).await;
                }
            },
            || {},
        )
        .await;
    }
}

/// The answer to one request: the stored bytes for `GET`/`HEAD /<name>`, nothing else.
fn answer(store: &Published, request: &Request<Incoming>) -> Response<Body> {
    let plain = |status: StatusCode| {
        let mut response = Response::new(body(status.canonical_reason().unwrap_or("error")));
        *response.status_mut() = status;
        harden(response, "text/plain; charset=utf-8")
    };
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return plain(StatusCode::METHOD_NOT_ALLOWED);
    }
    let path = request.uri().path();
    let found = path.strip_prefix('/').and_then(|name| store.get(name));
    let Some((media_type, bytes)) = found else {
        return plain(StatusCode::NOT_FOUND);
    };
    let length = bytes.len();
    // The stored bytes are shared, never copied per request.
    let content = if request.method() == Method::HEAD {
        body(bytes::Bytes::new())
    } else {
        body(bytes)
    };
    let mut response = harden(Response::new(content), media_type);
    response
        .headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(length));
    // A name is never reused for other bytes.
    response.headers_mut().insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400, immutable"),
    );
    response
}

fn harden(mut response: Response<Body>, media_type: &'static str) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(media_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(max_count: usize, max_bytes: usize) -> PublishOptions {
        PublishOptions {
            public_url: "https://bot.example/images".into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            max_count,
            max_bytes,
        }
    }

    fn name(url: &str) -> &str {
        url.rsplit('/').next().unwrap()
    }

    #[test]
    fn names_are_random_and_only_the_store_s_form_is_looked_up() {
        let store = Published::new(&options(8, 1 << 20));
        let a = store
            .publish("image/png", Arc::from(&[1u8, 2][..]))
            .unwrap();
        let b = store
            .publish("image/png", Arc::from(&[1u8, 2][..]))
            .unwrap();
        assert_ne!(a, b, "the same bytes get a new name");
        assert!(a.starts_with("https://bot.example/images/") && a.ends_with(".png"));
        assert_eq!(name(&a).len(), 36);
        assert_eq!(store.get(name(&a)).map(|(t, _)| t), Some("image/png"));
        for bad in [
            "",
            "../etc/passwd",
            &name(&a).to_uppercase(),
            &name(&a).replace(".png", ".jpg"),
            &format!("{}/x", name(&a)),
        ] {
            assert!(store.get(bad).is_none(), "{bad}");
        }
        assert!(store.publish("image/gif", Arc::from(&[1u8][..])).is_none());
        assert!(store.publish("text/html", Arc::from(&[1u8][..])).is_none());
    }

    #[test]
    fn the_oldest_go_first_when_a_bound_is_reached() {
        let store = Published::new(&options(2, 10));
        let first = store
            .publish("image/png", Arc::from(&[1u8; 4][..]))
            .unwrap();
        let second = store
            .publish("image/png", Arc::from(&[2u8; 4][..]))
            .unwrap();
        let third = store
            .publish("image/jpeg", Arc::from(&[3u8; 4][..]))
            .unwrap();
        assert!(store.get(name(&first)).is_none(), "over the count");
        assert!(store.get(name(&second)).is_some() && store.get(name(&third)).is_some());
        let big = store
            .publish("image/webp", Arc::from(&[4u8; 9][..]))
            .unwrap();
        assert_eq!(store.usage(), (1, 9), "over the bytes: both older ones go");
        assert!(store.get(name(&big)).is_some());
        assert!(
            store
                .publish("image/png", Arc::from(&[5u8; 11][..]))
                .is_none()
        );
        assert_eq!(store.usage(), (1, 9), "a refused image drops nothing");
    }

    #[test]
    fn options_are_checked_and_default() {
        let config = |url: Option<&str>| ImagesConfig {
            public_url: url.map(str::to_owned),
            ..ImagesConfig::default()
        };
        assert_eq!(publish_options(&config(None)), Ok(None));
        let options = publish_options(&config(Some("https://bot.example/img/")))
            .unwrap()
            .unwrap();
        assert_eq!(options.public_url, "https://bot.example/img");
        assert_eq!(options.listen, DEFAULT_LISTEN.parse().unwrap());
        assert_eq!(
            (options.max_count, options.max_bytes),
            (DEFAULT_MAX_COUNT, DEFAULT_MAX_BYTES)
        );
        assert!(publish_options(&config(Some("http://127.0.0.1:9/img"))).is_ok());
        for (url, reason) in [
            (
                "http://bot.example/img",
                "must use https (plain http only to a loopback address)",
            ),
            (
                "https://u:p@bot.example/img",
                "must not contain credentials",
            ),
            (
                "https://bot.example/img?x=1",
                "must not contain a query or fragment",
            ),
            ("bot.example/img", "must be an absolute https URL"),
        ] {
            let problems = publish_options(&config(Some(url))).unwrap_err();
            assert_eq!(problems[0].reason, reason, "{url}");
        }
        let bad = ImagesConfig {
            public_url: Some("https://bot.example".into()),
            listen: Some("localhost".into()),
            max_count: Some(0),
            max_bytes: Some(10),
        };
        let keys: Vec<&str> = publish_options(&bad)
            .unwrap_err()
            .iter()
            .map(|p| p.key)
            .collect();
        assert_eq!(keys, ["listen", "max-count", "max-bytes"]);
    }
}
