//! Images for Clef and Clairic: URLs found in typed or piped text, checked before anything
//! is fetched, then loaded by `yetibot-image-fetch` (public HTTPS only, pinned addresses,
//! byte, pixel and time bounds) and embedded in the request as base64. The Cloudflare token
//! never goes to an image host: the fetcher is given no credential.

use yetibot_image_fetch::{ImageRequest, ImageUrl};

use super::wire::EmbeddedImage;
use crate::services::AiServices;

/// The most images of one request.
pub(crate) const MAX_IMAGES: usize = yetibot_image_fetch::limits::MAX_IMAGES;

/// The image URLs written in `text`: whitespace-separated `https://` words whose path ends
/// in a PNG, JPEG or WebP extension.
pub(crate) fn urls_in(text: &str) -> Vec<&str> {
    yetibot_image_fetch::image_urls_in(text)
}

/// `urls` without repeats, each one a URL the fetcher may load, at most [`MAX_IMAGES`].
///
/// # Errors
///
/// The first problem, naming the image by its place in the list.
pub(crate) fn check(urls: &[String]) -> Result<Vec<String>, String> {
    let mut unique: Vec<String> = Vec::new();
    for url in urls {
        if !unique.contains(url) {
            unique.push(url.clone());
        }
    }
    if unique.len() > MAX_IMAGES {
        return Err(format!(
            "at most {MAX_IMAGES} images per request, not {}",
            unique.len()
        ));
    }
    for (i, url) in unique.iter().enumerate() {
        ImageUrl::parse(url).map_err(|error| format!("image {}: {error}", i + 1))?;
    }
    Ok(unique)
}

/// Loads checked `urls` and embeds them.
///
/// # Errors
///
/// The fetcher's refusal, or that no fetcher is configured.
pub(crate) async fn fetch(
    services: &AiServices,
    urls: &[String],
) -> Result<Vec<EmbeddedImage>, String> {
    if urls.is_empty() {
        return Ok(Vec::new());
    }
    let Some(fetcher) = &services.images else {
        return Err("image loading is not available in this program".to_owned());
    };
    let requests = urls
        .iter()
        .map(|url| ImageUrl::parse(url).map(ImageRequest::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| error.to_string())?;
    let images = fetcher
        .fetch_all(&requests)
        .await
        .map_err(|error| error.to_string())?;
    Ok(images
        .iter()
        .map(|image| EmbeddedImage {
            content_type: image.media_type(),
            base64: image.to_base64(),
        })
        .collect())
}
