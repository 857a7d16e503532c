//! The two network seams of a fetch, name resolution and TCP connection, as traits so that
//! tests can answer names and route connections themselves.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

use tokio::net::TcpStream;

/// A boxed future, which keeps the traits usable as `dyn` objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Resolves a host name to addresses. The fetcher calls it once per URL and checks every
/// address it returns before connecting to any.
pub trait Resolve: Send + Sync + fmt::Debug {
    /// Every address `host` resolves to.
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>>;
}

/// Opens TCP connections. The fetcher only ever asks for addresses it has already checked.
pub trait Dial: Send + Sync + fmt::Debug {
    /// A TCP connection to `address`.
    fn connect(&self, address: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>>;
}

/// The operating system's resolver, through [`tokio::net::lookup_host`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addresses = tokio::net::lookup_host((host, 443)).await?;
            Ok(addresses.map(|address| address.ip()).collect())
        })
    }
}

/// Plain TCP connections through [`TcpStream::connect`], with Nagle's algorithm off.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpDialer;

impl Dial for TcpDialer {
    fn connect(&self, address: SocketAddr) -> BoxFuture<'_, io::Result<TcpStream>> {
        Box::pin(async move {
            let stream = TcpStream::connect(address).await?;
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    }
}
