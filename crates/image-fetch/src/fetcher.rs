//! The fetcher: checks a whole batch, resolves and checks every host, then fetches each
//! image over one pinned TLS connection with HTTP/1.1, under the deadlines and bounds.

use std::fmt;
use std::future::{Future, poll_fn};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONNECTION, CONTENT_LENGTH, HOST, USER_AGENT};
use http::{HeaderMap, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use yetibot_redaction::Secret;

use crate::address::classify;
use crate::body::{BodyReader, BodyRefusal};
use crate::error::{BuildError, FetchError};
use crate::header::Refusal;
use crate::image::Image;
use crate::image_url::{Host, ImageUrl};
use crate::limits::{BODY_TIMEOUT, CONNECT_TIMEOUT, MAX_BATCH_BYTES, MAX_IMAGES, RESOLVE_TIMEOUT};
use crate::net::{Dial, Resolve, SystemResolver, TcpDialer};

/// The formats asked for; the answer is still judged by its bytes, not its headers.
const ACCEPTED_TYPES: &str = "image/png, image/jpeg, image/webp";
const USER_AGENT_VALUE: &str = concat!("yetibot-image-fetch/", env!("CARGO_PKG_VERSION"));
/// HTTPS is the only scheme and 443 the only port a URL may name.
const HTTPS_PORT: u16 = 443;

/// The deadlines of a fetch. The defaults are those of [`limits`](crate::limits).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FetchOptions {
    /// Resolving one host's name.
    pub resolve_timeout: Duration,
    /// Connecting to one image's host: TCP connection and TLS handshake together.
    pub connect_timeout: Duration,
    /// One image's response once connected: head and whole body together.
    pub response_timeout: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            resolve_timeout: RESOLVE_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
            response_timeout: BODY_TIMEOUT,
        }
    }
}

/// One image to fetch: a checked URL and, optionally, a bearer credential for one host.
#[derive(Debug, Clone)]
pub struct ImageRequest {
    url: ImageUrl,
    bearer: Option<Bearer>,
}

#[derive(Debug, Clone)]
struct Bearer {
    token: Secret,
    host: String,
}

impl ImageRequest {
    /// A request for `url` without credentials.
    pub fn new(url: ImageUrl) -> Self {
        Self { url, bearer: None }
    }

    /// Sends `Authorization: Bearer <token>` if, and only if, the URL's host is exactly
    /// `host` (ignoring ASCII case). A URL on any other host, a subdomain included, gets
    /// no credential.
    pub fn with_bearer(mut self, token: Secret, host: impl Into<String>) -> Self {
        self.bearer = Some(Bearer {
            token,
            host: host.into(),
        });
        self
    }

    /// Checks every URL of a batch, and the batch's size, before anything is fetched.
    ///
    /// # Errors
    ///
    /// [`FetchError::TooManyImages`] for more than [`MAX_IMAGES`] URLs, otherwise
    /// [`FetchError::Url`] for the first URL refused.
    ///
    /// ```
    /// use yetibot_image_fetch::{FetchError, ImageRequest, UrlError};
    ///
    /// let batch = ImageRequest::parse_batch(&["https://a.example/1.png", "https://b.example/2.jpg"])?;
    /// assert_eq!(batch.len(), 2);
    /// let refused = ImageRequest::parse_batch(&["https://a.example/1.png", "http://b.example/2.jpg"]);
    /// assert!(matches!(refused, Err(FetchError::Url { image: 2, reason: UrlError::NotHttps })));
    /// # Ok::<(), FetchError>(())
    /// ```
    pub fn parse_batch(urls: &[impl AsRef<str>]) -> Result<Vec<Self>, FetchError> {
        check_count(urls.len())?;
        urls.iter()
            .enumerate()
            .map(|(index, url)| {
                ImageUrl::parse(url.as_ref())
                    .map(Self::new)
                    .map_err(|reason| FetchError::Url {
                        image: index + 1,
                        reason,
                    })
            })
            .collect()
    }

    /// The URL.
    pub fn url(&self) -> &ImageUrl {
        &self.url
    }

    /// The `Authorization` value to send, if the credential's host is the URL's host.
    fn authorization(&self, image: usize) -> Result<Option<HeaderValue>, FetchError> {
        let Some(bearer) = &self.bearer else {
            return Ok(None);
        };
        let mut value = HeaderValue::try_from(format!("Bearer {}", bearer.token.expose()))
            .map_err(|_| FetchError::InvalidCredential { image })?;
        value.set_sensitive(true);
        Ok(bearer
            .host
            .eq_ignore_ascii_case(self.url.host())
            .then_some(value))
    }
}

/// Fetches batches of images from public HTTPS hosts.
///
/// Cheap to share: build one and reuse it (clones share the TLS configuration, resolver and
/// dialer). It holds no connection between fetches.
#[derive(Clone)]
pub struct Fetcher {
    tls: TlsConnector,
    resolver: Arc<dyn Resolve>,
    dialer: Arc<dyn Dial>,
    options: FetchOptions,
}

impl Fetcher {
    /// A fetcher that resolves names with the system resolver, connects over plain TCP and
    /// trusts the Mozilla root certificates (`webpki-roots`).
    ///
    /// # Errors
    ///
    /// [`BuildError`] if the TLS configuration cannot be built.
    pub fn new(options: FetchOptions) -> Result<Self, BuildError> {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        Ok(Self {
            tls: connector(roots)?,
            resolver: Arc::new(SystemResolver),
            dialer: Arc::new(TcpDialer),
            options,
        })
    }

    /// Trusts `roots` instead of the Mozilla roots.
    ///
    /// # Errors
    ///
    /// [`BuildError`] if the TLS configuration cannot be built.
    pub fn with_roots(self, roots: RootCertStore) -> Result<Self, BuildError> {
        Ok(Self {
            tls: connector(roots)?,
            ..self
        })
    }

    /// Resolves names with `resolver`. Every address it returns is still checked.
    pub fn with_resolver(self, resolver: Arc<dyn Resolve>) -> Self {
        Self { resolver, ..self }
    }

    /// Opens TCP connections with `dialer`. It is only ever given checked addresses.
    pub fn with_dialer(self, dialer: Arc<dyn Dial>) -> Self {
        Self { dialer, ..self }
    }

    /// The deadlines in force.
    pub fn options(&self) -> &FetchOptions {
        &self.options
    }

    /// Fetches every image of the batch, in order, or none.
    ///
    /// Before the first connection, the batch's size and every credential are checked and
    /// every host's name is resolved once, with every address it resolves to checked; the
    /// connection then goes to one of those addresses, never to a second resolution. Each
    /// image is then fetched in turn under the connect and response deadlines, the byte
    /// bounds (per image and for the batch) and the header checks. Nothing is retried and
    /// no redirect is followed.
    ///
    /// # Errors
    ///
    /// The first refusal or failure, as a [`FetchError`]; images fetched before it are
    /// dropped.
    pub async fn fetch_all(&self, requests: &[ImageRequest]) -> Result<Vec<Image>, FetchError> {
        check_count(requests.len())?;
        let mut plans = Vec::with_capacity(requests.len());
        for (index, request) in requests.iter().enumerate() {
            let image = index + 1;
            plans.push(Plan {
                image,
                url: &request.url,
                authorization: request.authorization(image)?,
            });
        }
        let mut pinned = Vec::with_capacity(plans.len());
        for plan in &plans {
            pinned.push(self.addresses(plan).await?);
        }
        let mut images = Vec::with_capacity(plans.len());
        let mut used = 0;
        for (plan, addresses) in plans.iter().zip(&pinned) {
            let image = self
                .fetch_one(plan, addresses, MAX_BATCH_BYTES.saturating_sub(used))
                .await?;
            used += image.bytes().len();
            images.push(image);
        }
        Ok(images)
    }

    /// The checked addresses of a URL's host: its own address, or every address its name
    /// resolves to, from exactly one resolution.
    async fn addresses(&self, plan: &Plan<'_>) -> Result<Vec<IpAddr>, FetchError> {
        let (image, host) = (plan.image, plan.url.host());
        let addresses = match plan.url.host_kind() {
            Host::Ip(address) => vec![*address],
            Host::Domain(name) => {
                let resolved = timeout(self.options.resolve_timeout, self.resolver.resolve(name))
                    .await
                    .unwrap_or_else(|_| {
                        Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "name resolution took too long",
                        ))
                    });
                resolved.map_err(|source| FetchError::Resolve {
                    image,
                    host: host.to_owned(),
                    source,
                })?
            }
        };
        if addresses.is_empty() {
            return Err(FetchError::NoAddresses {
                image,
                host: host.to_owned(),
            });
        }
        for address in &addresses {
            classify(*address).map_err(|class| FetchError::ForbiddenAddress {
                image,
                host: host.to_owned(),
                class,
            })?;
        }
        Ok(addresses)
    }

    async fn fetch_one(
        &self,
        plan: &Plan<'_>,
        addresses: &[IpAddr],
        batch_left: usize,
    ) -> Result<Image, FetchError> {
        let failed = |failure: Failure| failure.into_error(plan.image, plan.url.host());
        let connect = timeout(self.options.connect_timeout, self.connect(plan, addresses));
        let stream = connect.await.map_err(|_| FetchError::ConnectTimeout {
            image: plan.image,
            host: plan.url.host().to_owned(),
            timeout: self.options.connect_timeout,
        })??;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| failed(Failure::from(error)))?;
        let exchange = exchange(sender, plan.request(), batch_left);
        match timeout(
            self.options.response_timeout,
            alongside(connection, exchange),
        )
        .await
        {
            Ok(result) => result.map_err(failed),
            Err(_) => Err(FetchError::ResponseTimeout {
                image: plan.image,
                host: plan.url.host().to_owned(),
                timeout: self.options.response_timeout,
            }),
        }
    }

    /// A TCP connection to the first checked address that answers, then TLS with the
    /// URL's host name (not the address) for SNI and certificate verification.
    async fn connect(
        &self,
        plan: &Plan<'_>,
        addresses: &[IpAddr],
    ) -> Result<TlsStream<TcpStream>, FetchError> {
        let host = plan.url.host();
        let mut last_error = None;
        let mut stream = None;
        for address in addresses {
            match self
                .dialer
                .connect(SocketAddr::new(*address, HTTPS_PORT))
                .await
            {
                Ok(tcp) => {
                    stream = Some(tcp);
                    break;
                }
                Err(error) => last_error = Some(error),
            }
        }
        let Some(tcp) = stream else {
            return Err(FetchError::Connect {
                image: plan.image,
                host: host.to_owned(),
                source: last_error
                    .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")),
            });
        };
        self.tls
            .connect(plan.url.server_name().clone(), tcp)
            .await
            .map_err(|source| FetchError::Tls {
                image: plan.image,
                host: host.to_owned(),
                source,
            })
    }
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher")
            .field("resolver", &self.resolver)
            .field("dialer", &self.dialer)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn check_count(count: usize) -> Result<(), FetchError> {
    if count > MAX_IMAGES {
        return Err(FetchError::TooManyImages { count });
    }
    Ok(())
}

fn connector(roots: RootCertStore) -> Result<TlsConnector, BuildError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(BuildError::new)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsConnector::from(Arc::new(config)))
}

/// One image of a checked batch.
struct Plan<'a> {
    image: usize,
    url: &'a ImageUrl,
    authorization: Option<HeaderValue>,
}

impl Plan<'_> {
    fn request(&self) -> Request<Empty<Bytes>> {
        let mut request = Request::new(Empty::new());
        *request.uri_mut() = Uri::from(self.url.target().clone());
        let headers = request.headers_mut();
        headers.insert(HOST, self.url.host_header().clone());
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPTED_TYPES));
        headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
        if let Some(authorization) = &self.authorization {
            headers.insert(AUTHORIZATION, authorization.clone());
        }
        request
    }
}

/// What went wrong once connected, before it is named after the image and host.
enum Failure {
    Redirect(u16),
    Status(u16),
    Protocol(hyper::Error),
    Lost(hyper::Error),
    Body(BodyRefusal),
}

impl From<hyper::Error> for Failure {
    fn from(error: hyper::Error) -> Self {
        if error.is_parse() {
            Self::Protocol(error)
        } else {
            Self::Lost(error)
        }
    }
}

impl From<BodyRefusal> for Failure {
    fn from(refusal: BodyRefusal) -> Self {
        Self::Body(refusal)
    }
}

impl Image {
    /// An image whose bytes are already at hand (a file uploaded to a local console), held
    /// to the rules a fetched one is: PNG, JPEG or WebP by its magic bytes, its dimensions
    /// read from the header (at most 16 megapixels), at most 4 MiB. Errors name it as image
    /// `position` from `source` (where a fetch names the host). Nothing is decoded.
    ///
    /// # Errors
    ///
    /// [`FetchError::ImageTooLarge`], [`FetchError::UnsupportedFormat`],
    /// [`FetchError::TooManyPixels`], [`FetchError::BadDimensions`] or
    /// [`FetchError::TruncatedHeader`].
    pub fn from_bytes(position: usize, source: &str, bytes: &[u8]) -> Result<Self, FetchError> {
        let mut reader = BodyReader::new(crate::limits::MAX_IMAGE_BYTES);
        reader
            .push(bytes)
            .and_then(|()| reader.finish())
            .map_err(|refusal| Failure::from(refusal).into_error(position, source))
    }
}

impl Image {
    /// An image sent inline as base64 text (an image API's `b64_json`), optionally as a
    /// `data:<type>;base64,` URL, held to the rules of [`Image::from_bytes`]. The text is
    /// refused before decoding when it would decode to more than 4 MiB.
    ///
    /// # Errors
    ///
    /// [`FetchError::BadEncoding`] for text that is not standard, padded base64 (or is too
    /// long to be an accepted image), else the errors of [`Image::from_bytes`].
    pub fn from_base64(position: usize, source: &str, text: &str) -> Result<Self, FetchError> {
        let bad = || FetchError::BadEncoding {
            image: position,
            host: source.to_owned(),
        };
        let text = match text.strip_prefix("data:") {
            Some(url) => url
                .split_once(";base64,")
                .map(|(_, data)| data)
                .ok_or_else(bad)?,
            None => text,
        };
        let bytes =
            crate::image::decode_base64(text, crate::limits::MAX_IMAGE_BYTES).ok_or_else(bad)?;
        Self::from_bytes(position, source, &bytes)
    }
}

impl Failure {
    fn into_error(self, image: usize, host: &str) -> FetchError {
        let host = host.to_owned();
        match self {
            Self::Redirect(status) => FetchError::Redirect {
                image,
                host,
                status,
            },
            Self::Status(status) => FetchError::Status {
                image,
                host,
                status,
            },
            Self::Protocol(error) => FetchError::Protocol {
                image,
                host,
                source: error.into(),
            },
            Self::Lost(error) => FetchError::ConnectionLost {
                image,
                host,
                source: error.into(),
            },
            Self::Body(BodyRefusal::ImageTooLarge) => FetchError::ImageTooLarge { image, host },
            Self::Body(BodyRefusal::BatchTooLarge) => FetchError::BatchTooLarge { image, host },
            Self::Body(BodyRefusal::TruncatedHeader) => FetchError::TruncatedHeader { image, host },
            Self::Body(BodyRefusal::Header(Refusal::Unsupported)) => {
                FetchError::UnsupportedFormat { image, host }
            }
            Self::Body(BodyRefusal::Header(Refusal::BadDimensions)) => {
                FetchError::BadDimensions { image, host }
            }
            Self::Body(BodyRefusal::Header(Refusal::TooManyPixels(width, height))) => {
                FetchError::TooManyPixels {
                    image,
                    host,
                    width,
                    height,
                }
            }
        }
    }
}

/// Sends the one request of the connection and collects the answer under the bounds.
async fn exchange(
    mut sender: http1::SendRequest<Empty<Bytes>>,
    request: Request<Empty<Bytes>>,
    batch_left: usize,
) -> Result<Image, Failure> {
    let response = sender.send_request(request).await?;
    let status = response.status();
    if status.is_redirection() {
        return Err(Failure::Redirect(status.as_u16()));
    }
    if !status.is_success() {
        return Err(Failure::Status(status.as_u16()));
    }
    let mut reader = BodyReader::new(batch_left);
    if let Some(length) = content_length(response.headers()) {
        reader.declared(length)?;
    }
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            reader.push(&data)?;
        }
    }
    Ok(reader.finish()?)
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Runs `work` while also driving `connection`, the future that moves the connection's
/// bytes, and drops both when `work` is done. Nothing is spawned, so no connection can
/// outlive its fetch.
async fn alongside<C: Future, W: Future>(connection: C, work: W) -> W::Output {
    let mut connection = pin!(connection);
    let mut work = pin!(work);
    let mut connection_done = false;
    poll_fn(move |cx| {
        // The connection's own outcome reaches `work` through the response and body it is
        // waiting on, so it is not needed here.
        if !connection_done && connection.as_mut().poll(cx).is_ready() {
            connection_done = true;
        }
        work.as_mut().poll(cx)
    })
    .await
}
