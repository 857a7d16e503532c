//! Every refusal and failure, each its own variant with a message fit for a chat reply: it
//! names the image by its position in the batch and the host, never the URL's path or
//! query, a credential, or what the host sent.

use std::error::Error as StdError;
use std::io;
use std::time::Duration;

use crate::address::AddressClass;
use crate::limits::MAX_IMAGES;

/// A foreign error kept opaque, so that upgrading a dependency cannot change this API.
type Source = Box<dyn StdError + Send + Sync + 'static>;

/// Why the text of an image URL is refused. Found without any network I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The URL is longer than [`MAX_URL_CHARS`](crate::limits::MAX_URL_CHARS).
    #[error("the URL has {chars} characters, more than the 4096 allowed")]
    TooLong {
        /// How many characters it has.
        chars: usize,
    },
    /// The text is not a URL.
    #[error("the URL cannot be read ({reason})")]
    Malformed {
        /// What the URL parser objected to, in its words (which never quote the URL).
        reason: String,
    },
    /// The scheme is not `https`.
    #[error("the URL does not use https")]
    NotHttps,
    /// The URL names no host.
    #[error("the URL has no host")]
    NoHost,
    /// The URL carries a user name or a password.
    #[error("the URL carries a user name or password")]
    Credentials,
    /// The URL has a fragment (`#…`).
    #[error("the URL has a fragment (a part after #)")]
    Fragment,
    /// The URL names a port other than 443.
    #[error("the URL names port {port}; only the standard https port is allowed")]
    Port {
        /// The port named.
        port: u16,
    },
    /// The host is an IP address that is not a public internet address.
    #[error("the URL's host is {class}, not a public internet address")]
    ForbiddenAddress {
        /// What kind of address it is.
        class: AddressClass,
    },
}

/// Why a batch of images was not fetched.
///
/// `image` is the image's position in the batch, counting from 1, and `host` the host its
/// URL names.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The batch names more than [`MAX_IMAGES`] images; nothing was fetched.
    #[error("{count} images were given; at most {MAX_IMAGES} are fetched at once")]
    TooManyImages {
        /// How many were given.
        count: usize,
    },
    /// An image URL is refused; nothing was fetched.
    #[error("image {image}: {reason}")]
    Url {
        /// Position in the batch.
        image: usize,
        /// What is wrong with the URL.
        reason: UrlError,
    },
    /// A bearer credential holds characters that an HTTP header cannot carry.
    #[error("image {image}: its credential cannot be sent in an HTTP header")]
    InvalidCredential {
        /// Position in the batch.
        image: usize,
    },
    /// The host's name could not be resolved.
    #[error("image {image}: could not resolve {host}")]
    Resolve {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// The host's name resolved to no address at all.
    #[error("image {image}: {host} resolves to no address")]
    NoAddresses {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
    /// The host's name resolved to at least one address that is not public.
    #[error("image {image}: {host} resolves to {class}, which is never fetched from")]
    ForbiddenAddress {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// What kind of address it resolved to.
        class: AddressClass,
    },
    /// No TCP connection could be made to any of the host's addresses.
    #[error("image {image}: could not connect to {host}")]
    Connect {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The last connection error.
        source: io::Error,
    },
    /// Connecting (TCP and TLS) took longer than the connect deadline.
    #[error("image {image}: connecting to {host} took longer than {timeout:?}")]
    ConnectTimeout {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The deadline.
        timeout: Duration,
    },
    /// The TLS handshake failed, for example because the certificate is not valid for the
    /// host's name.
    #[error("image {image}: no trusted TLS connection to {host}")]
    Tls {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The TLS error.
        source: io::Error,
    },
    /// The host answered with a redirect, which is never followed.
    #[error(
        "image {image}: {host} answered with a redirect (HTTP {status}), which is not followed"
    )]
    Redirect {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The 3xx status.
        status: u16,
    },
    /// The host answered with a status other than 2xx or 3xx.
    #[error("image {image}: {host} answered with HTTP status {status}")]
    Status {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The status.
        status: u16,
    },
    /// The host's answer is not well-formed HTTP/1.1.
    #[error("image {image}: {host} sent a malformed HTTP response")]
    Protocol {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The HTTP library's error.
        source: Source,
    },
    /// The response (head and body) took longer than the response deadline.
    #[error("image {image}: {host} did not send the whole image within {timeout:?}")]
    ResponseTimeout {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The deadline.
        timeout: Duration,
    },
    /// The connection broke before the whole response arrived.
    #[error("image {image}: the connection to {host} broke before the whole image arrived")]
    ConnectionLost {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// The I/O or HTTP error.
        source: Source,
    },
    /// The image is larger than [`MAX_IMAGE_BYTES`](crate::limits::MAX_IMAGE_BYTES).
    #[error("image {image} from {host} is larger than 4 MiB")]
    ImageTooLarge {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
    /// The images together are larger than
    /// [`MAX_BATCH_BYTES`](crate::limits::MAX_BATCH_BYTES).
    #[error("image {image} from {host} takes the images over 8 MiB in total")]
    BatchTooLarge {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
    /// Text that should hold an image in base64 does not.
    #[error("image {image} from {host} is not valid base64")]
    BadEncoding {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
    /// The body is not a PNG, JPEG or WebP image.
    #[error("image {image} from {host} is not a PNG, JPEG or WebP image")]
    UnsupportedFormat {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
    /// The header declares more than [`MAX_PIXELS`](crate::limits::MAX_PIXELS) pixels.
    #[error("image {image} from {host} is {width}×{height} pixels, more than 16 megapixels")]
    TooManyPixels {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
        /// Width from the header.
        width: u32,
        /// Height from the header.
        height: u32,
    },
    /// The header is malformed or declares a zero width or height.
    #[error("image {image} from {host} has a zero or unreadable width or height")]
    BadDimensions {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
    /// The body ended before the image header was complete.
    #[error("image {image} from {host} ended before its header was complete")]
    TruncatedHeader {
        /// Position in the batch.
        image: usize,
        /// The host.
        host: String,
    },
}

impl FetchError {
    /// The position (from 1) of the image the error is about, if it is about one image.
    pub fn image(&self) -> Option<usize> {
        match self {
            Self::TooManyImages { .. } => None,
            Self::Url { image, .. }
            | Self::InvalidCredential { image }
            | Self::Resolve { image, .. }
            | Self::NoAddresses { image, .. }
            | Self::ForbiddenAddress { image, .. }
            | Self::Connect { image, .. }
            | Self::ConnectTimeout { image, .. }
            | Self::Tls { image, .. }
            | Self::Redirect { image, .. }
            | Self::Status { image, .. }
            | Self::Protocol { image, .. }
            | Self::ResponseTimeout { image, .. }
            | Self::ConnectionLost { image, .. }
            | Self::ImageTooLarge { image, .. }
            | Self::BatchTooLarge { image, .. }
            | Self::BadEncoding { image, .. }
            | Self::UnsupportedFormat { image, .. }
            | Self::TooManyPixels { image, .. }
            | Self::BadDimensions { image, .. }
            | Self::TruncatedHeader { image, .. } => Some(*image),
        }
    }
}

/// The fetcher's TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
#[error("could not set up TLS for fetching images")]
pub struct BuildError {
    source: Source,
}

impl BuildError {
    pub(crate) fn new(source: impl Into<Source>) -> Self {
        Self {
            source: source.into(),
        }
    }
}
