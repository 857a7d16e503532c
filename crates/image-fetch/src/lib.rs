#![doc = include_str!("../README.md")]

mod address;
mod body;
mod error;
mod fetcher;
mod header;
mod image;
mod image_url;
pub mod limits;
mod net;

pub use address::{AddressClass, classify};
pub use error::{BuildError, FetchError, UrlError};
pub use fetcher::{FetchOptions, Fetcher, ImageRequest};
pub use image::{Format, Image};
pub use image_url::{ImageUrl, image_urls_in};
pub use net::{BoxFuture, Dial, Resolve, SystemResolver, TcpDialer};
pub use rustls::RootCertStore;
