//! Real peers for `yetibot-image-fetch` on loopback, for its own tests and for the tests of
//! the commands that load images: a test CA with rcgen, a TLS server that plays scripted raw
//! HTTP/1.1 answers and records what it was sent, a resolver with fixed answers, dialers that
//! route every checked address to the server, and small real PNG, JPEG, WebP and GIF files.
//! Not published.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use yetibot_image_fetch::{BoxFuture, Dial, FetchOptions, Fetcher, Resolve, RootCertStore};

/// A 2×3 PNG.
pub const PNG: &[u8] = include_bytes!("../fixtures/red-2x3.png");
/// A 2×3 baseline JPEG.
pub const JPEG: &[u8] = include_bytes!("../fixtures/red-2x3.jpg");
/// A 2×3 progressive JPEG.
pub const JPEG_PROGRESSIVE: &[u8] = include_bytes!("../fixtures/red-2x3-progressive.jpg");
/// A 2×3 lossy WebP (`VP8 `).
pub const WEBP: &[u8] = include_bytes!("../fixtures/red-2x3.webp");
/// A 2×3 lossless WebP (`VP8L`).
pub const WEBP_LOSSLESS: &[u8] = include_bytes!("../fixtures/red-2x3-lossless.webp");
/// A 2×3 extended WebP with alpha (`VP8X`).
pub const WEBP_EXTENDED: &[u8] = include_bytes!("../fixtures/red-2x3-alpha.webp");
/// A 2×3 GIF, a format the fetcher refuses.
pub const GIF: &[u8] = include_bytes!("../fixtures/red-2x3.gif");

/// A public address that tests pretend `images.test` resolves to. Nothing is ever sent
/// there: the dialers route every connection to the loopback server.
pub const PUBLIC: &str = "93.184.216.34";
/// A second public address, for names with several answers.
pub const PUBLIC_2: &str = "93.184.216.35";

/// `text` as an address.
pub fn ip(text: &str) -> IpAddr {
    text.parse().expect("a test address")
}

/// A test certificate authority.
pub struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pki")
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

impl Pki {
    /// A new authority with a fresh key.
    pub fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "image-fetch test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("a CA key");
        Self {
            ca: CertifiedIssuer::self_signed(params, key).expect("a CA certificate"),
        }
    }

    /// Roots that trust this CA only.
    pub fn roots(&self) -> RootCertStore {
        let mut roots = RootCertStore::empty();
        roots
            .add(self.ca.der().clone())
            .expect("the CA is a valid root");
        roots
    }

    /// A server configuration whose certificate, issued by this CA, names `names` (DNS
    /// names or IP addresses).
    pub fn server(&self, names: &[&str]) -> Arc<ServerConfig> {
        let key = KeyPair::generate().expect("a leaf key");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names).expect("leaf params");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &self.ca)
            .expect("a leaf certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("a server configuration");
        Arc::new(config)
    }
}

/// What the server does on one connection, chosen from the request head it read.
#[derive(Debug)]
pub enum Script {
    /// Write these bytes, then close the TLS session cleanly.
    Reply(Vec<u8>),
    /// Write these bytes, then keep the connection open and silent.
    ReplyThenStall(Vec<u8>),
    /// Write these bytes, then drop the TCP connection without closing TLS.
    ReplyThenDrop(Vec<u8>),
    /// Write these bytes, then wait for the client to close the connection.
    ReplyThenAwaitClose(Vec<u8>),
}

/// A request the server read: the TLS server name the client sent and the request head.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The TLS server name (SNI) the client sent.
    pub sni: Option<String>,
    /// The request line and headers.
    pub head: String,
}

impl Seen {
    /// The request line.
    pub fn line(&self) -> &str {
        self.head.lines().next().unwrap_or_default()
    }

    /// Every header, names lower-cased.
    pub fn headers(&self) -> HashMap<String, String> {
        self.head
            .lines()
            .skip(1)
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect()
    }
}

#[derive(Default)]
struct Record {
    connections: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    closed_by_client: Notify,
}

type Scripter = dyn Fn(&Seen) -> Script + Send + Sync;

/// A TLS server on 127.0.0.1 that answers every request with a script.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    record: Arc<Record>,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with this TLS configuration answering with `script`.
    pub async fn start(
        config: Arc<ServerConfig>,
        script: impl Fn(&Seen) -> Script + Send + Sync + 'static,
    ) -> Self {
        Self::start_with(Some(config), Arc::new(script)).await
    }

    /// A server that accepts TCP connections and never answers the TLS handshake.
    pub async fn silent() -> Self {
        Self::start_with(None, Arc::new(|_: &Seen| Script::Reply(Vec::new()))).await
    }

    async fn start_with(config: Option<Arc<ServerConfig>>, script: Arc<Scripter>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let record = Arc::new(Record::default());
        let accept_record = Arc::clone(&record);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                accept_record.connections.fetch_add(1, Ordering::SeqCst);
                let record = Arc::clone(&accept_record);
                let script = Arc::clone(&script);
                let config = config.clone();
                tokio::spawn(async move {
                    match config {
                        Some(config) => serve(tcp, config, record, script).await,
                        // Hold the connection, silent, until the test ends.
                        None => {
                            let _tcp = tcp;
                            std::future::pending::<()>().await;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            record,
            accept,
        }
    }

    /// How many connections it accepted.
    pub fn connections(&self) -> usize {
        self.record.connections.load(Ordering::SeqCst)
    }

    /// Every request it read, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.record.seen.lock().expect("lock").clone()
    }

    /// Waits until a client closed a connection scripted with `ReplyThenAwaitClose`.
    pub async fn closed_by_client(&self) {
        self.record.closed_by_client.notified().await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn serve(
    tcp: TcpStream,
    config: Arc<ServerConfig>,
    record: Arc<Record>,
    script: Arc<Scripter>,
) {
    let Ok(mut tls) = TlsAcceptor::from(config).accept(tcp).await else {
        return;
    };
    let sni = tls.get_ref().1.server_name().map(str::to_owned);
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.ends_with(b"\r\n\r\n") {
        match tls.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let seen = Seen {
        sni,
        head: String::from_utf8_lossy(&head).into_owned(),
    };
    record.seen.lock().expect("lock").push(seen.clone());
    // Errors while writing mean the client stopped reading, which some tests expect.
    match script(&seen) {
        Script::Reply(bytes) => {
            let _ = tls.write_all(&bytes).await;
            let _ = tls.shutdown().await;
        }
        Script::ReplyThenStall(bytes) => {
            let _ = tls.write_all(&bytes).await;
            let _ = tls.flush().await;
            std::future::pending::<()>().await;
        }
        Script::ReplyThenDrop(bytes) => {
            let _ = tls.write_all(&bytes).await;
            let _ = tls.flush().await;
            drop(tls);
        }
        Script::ReplyThenAwaitClose(bytes) => {
            let _ = tls.write_all(&bytes).await;
            let _ = tls.flush().await;
            loop {
                match tls.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            record.closed_by_client.notify_one();
        }
    }
}

/// A response head and body with an honest `Content-Length`.
pub fn ok(content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A response head without framing (the body ends when the connection does), and body.
pub fn unframed(body: &[u8]) -> Vec<u8> {
    let mut bytes = b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n".to_vec();
    bytes.extend_from_slice(body);
    bytes
}

/// A chunked response of `body` in chunks of at most 64 KiB, after extra head lines.
pub fn chunked(extra_head: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n{extra_head}Transfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    for chunk in body.chunks(64 * 1024) {
        bytes.extend(format!("{:x}\r\n", chunk.len()).into_bytes());
        bytes.extend_from_slice(chunk);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"0\r\n\r\n");
    bytes
}

/// A PNG of `len` bytes: the real 2×3 PNG's header, then filler.
pub fn png_of_len(len: usize) -> Vec<u8> {
    let mut body = PNG.to_vec();
    body.resize(len, 0);
    body
}

/// The first 24 bytes of a PNG declaring `width`×`height`.
pub fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut body = PNG[..16].to_vec();
    body.extend(width.to_be_bytes());
    body.extend(height.to_be_bytes());
    body
}

/// A resolver with fixed answers per host. A host with several answers gives them in turn,
/// the last one again once they run out; every call is recorded.
#[derive(Debug, Default)]
pub struct FixedResolver {
    answers: Mutex<HashMap<String, VecDeque<io::Result<Vec<IpAddr>>>>>,
    calls: Mutex<Vec<String>>,
}

impl FixedResolver {
    /// A resolver that knows no host yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Queues the answer `addresses` for `host`.
    pub fn answer(self: &Arc<Self>, host: &str, addresses: &[&str]) -> Arc<Self> {
        let answer = Ok(addresses.iter().map(|a| ip(a)).collect());
        self.push(host, answer)
    }

    /// Queues a failed resolution for `host`.
    pub fn fail(self: &Arc<Self>, host: &str) -> Arc<Self> {
        let error = io::Error::new(io::ErrorKind::NotFound, "no such host");
        self.push(host, Err(error))
    }

    fn push(self: &Arc<Self>, host: &str, answer: io::Result<Vec<IpAddr>>) -> Arc<Self> {
        let mut answers = self.answers.lock().expect("lock");
        answers
            .entry(host.to_owned())
            .or_default()
            .push_back(answer);
        Arc::clone(self)
    }

    /// Every host it was asked for, in order.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("lock").clone()
    }
}

impl Resolve for FixedResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        self.calls.lock().expect("lock").push(host.to_owned());
        let mut answers = self.answers.lock().expect("lock");
        let answer = match answers.get_mut(host) {
            Some(queue) if queue.len() > 1 => queue.pop_front().expect("an answer"),
            Some(queue) => match queue.front().expect("an answer") {
                Ok(addresses) => Ok(addresses.clone()),
                Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
            },
            None => Err(io::Error::new(io::ErrorKind::NotFound, "unknown test host")),
        };
        Box::pin(async move { answer })
    }
}

/// Routes every connection to the loopback server and records the address it was asked
/// for. Addresses in `unreachable` fail with "connection refused" instead.
#[derive(Debug)]
pub struct LoopbackDialer {
    server: SocketAddr,
    unreachable: Vec<IpAddr>,
    dialed: Mutex<Vec<SocketAddr>>,
}

impl LoopbackDialer {
    /// A dialer to `server`.
    pub fn to(server: &Server) -> Arc<Self> {
        Self::with_unreachable(server, &[])
    }

    /// A dialer to `server` for which the `unreachable` addresses refuse connections.
    pub fn with_unreachable(server: &Server, unreachable: &[&str]) -> Arc<Self> {
        Arc::new(Self {
            server: server.addr,
            unreachable: unreachable.iter().map(|a| ip(a)).collect(),
            dialed: Mutex::new(Vec::new()),
        })
    }

    /// Every address it was asked to dial, in order.
    pub fn dialed(&self) -> Vec<SocketAddr> {
        self.dialed.lock().expect("lock").clone()
    }
}

impl Dial for LoopbackDialer {
    fn connect(&self, address: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        self.dialed.lock().expect("lock").push(address);
        let refused = self.unreachable.contains(&address.ip());
        Box::pin(async move {
            if refused {
                return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "refused"));
            }
            TcpStream::connect(self.server).await
        })
    }
}

/// A dialer whose connections never complete.
#[derive(Debug, Default)]
pub struct StallingDialer {
    /// How many connections were attempted.
    pub dialed: AtomicUsize,
}

impl Dial for StallingDialer {
    fn connect(&self, _: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        self.dialed.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::pending())
    }
}

/// A fetcher trusting `pki`, resolving with `resolver` and dialing with `dialer`.
pub fn fetcher(pki: &Pki, resolver: Arc<dyn Resolve>, dialer: Arc<dyn Dial>) -> Fetcher {
    Fetcher::new(FetchOptions::default())
        .expect("a fetcher")
        .with_roots(pki.roots())
        .expect("test roots")
        .with_resolver(resolver)
        .with_dialer(dialer)
}
