//! The bounds every fetch keeps, in one place so that callers can quote them to users.

use std::time::Duration;

/// The longest image URL accepted, counted in characters.
pub const MAX_URL_CHARS: usize = 4096;

/// The most images one batch may name.
pub const MAX_IMAGES: usize = 4;

/// The most bytes one image body may have (4 MiB).
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;

/// The most bytes all image bodies of one batch may have together (8 MiB).
pub const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;

/// The most pixels (width × height) one image may declare: 16 megapixels.
pub const MAX_PIXELS: u64 = 16_000_000;

/// The default deadline for connecting to an image host: TCP connection and TLS handshake
/// together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The default deadline for the host's answer once connected: response head and body
/// together.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The default deadline for resolving an image host's name.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
