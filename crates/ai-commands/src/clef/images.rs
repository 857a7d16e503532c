//! Images for Clef and Clairic: URLs found in typed or piped text (or a tool's `images`) and
//! the image attachments of the request's own message, checked together before anything is
//! fetched, then loaded by `yetibot-image-fetch` (public HTTPS only, pinned addresses, byte,
//! pixel and time bounds) and embedded in the request as base64. The Cloudflare token never
//! goes to an image host; the only credential ever sent is the platform's own, for a file of
//! the message on the platform's own file host (Slack's private files).

use yetibot_command::Caller;
use yetibot_conversation::Attachment;
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

/// The image attachments of the caller's message (none outside a chat platform).
pub(crate) fn attached(caller: &Caller) -> Vec<Attachment> {
    caller
        .platform
        .as_ref()
        .map(|platform| {
            platform
                .attachments()
                .iter()
                .filter(|attachment| attachment.is_image())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The URLs to load: `urls` without repeats, then the attachments', each one a URL the
/// fetcher may load, at most [`MAX_IMAGES`] in all.
///
/// # Errors
///
/// The first problem, naming the image by its place in the list.
pub(crate) fn check(urls: &[String], attached: &[Attachment]) -> Result<Vec<String>, String> {
    let mut unique: Vec<String> = Vec::new();
    for url in urls.iter().chain(attached.iter().map(|a| &a.url)) {
        if !unique.contains(url) {
            unique.push(url.clone());
        }
    }
    if unique.len() > MAX_IMAGES {
        return Err(format!(
            "at most {MAX_IMAGES} images per request (URLs and attachments together), not {}",
            unique.len()
        ));
    }
    for (i, url) in unique.iter().enumerate() {
        ImageUrl::parse(url).map_err(|error| format!("image {}: {error}", i + 1))?;
    }
    Ok(unique)
}

/// Loads checked `urls` and embeds them. A URL of one of the caller's own attachments may
/// carry the platform's credential for its own file host; no other URL carries any.
///
/// # Errors
///
/// The fetcher's refusal, or that no fetcher is configured.
pub(crate) async fn fetch(
    services: &AiServices,
    caller: &Caller,
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
        .map(|url| {
            let parsed = ImageUrl::parse(url)?;
            let host = parsed.host().to_owned();
            let request = ImageRequest::new(parsed);
            let token = caller
                .platform
                .as_ref()
                .and_then(|platform| platform.attachment_token(url));
            Ok(match token {
                Some(token) => request.with_bearer(token, host),
                None => request,
            })
        })
        .collect::<Result<Vec<_>, yetibot_image_fetch::UrlError>>()
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
