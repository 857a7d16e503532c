//! Images a request sends to a service (Clef and Clairic's inputs, the image `gi` edits):
//! URLs found in typed or piped text (or a tool's arguments) and the image attachments of
//! the request's own message, checked together before anything is fetched, then loaded by
//! `yetibot-image-fetch` (or, for a file the platform holds itself, checked by its rules
//! without a fetch): public HTTPS only, pinned addresses, byte, pixel and time bounds. No
//! service's credential ever goes to an image host; the only credential ever sent is the
//! platform's own, for a file of the message on the platform's own file host (Slack's
//! private files).

use std::sync::Arc;

use yetibot_command::Caller;
use yetibot_image_fetch::{Image, ImageRequest, ImageUrl};

use crate::services::AiServices;

/// The most images of one request.
pub(crate) const MAX_IMAGES: usize = yetibot_image_fetch::limits::MAX_IMAGES;

/// One image to load: a URL to fetch (parsed once [`check`] accepted it), or the bytes of
/// an attachment the platform holds itself (a console upload).
#[derive(Debug, Clone)]
pub(crate) struct Source {
    url: String,
    held: Option<Arc<[u8]>>,
    parsed: Option<ImageUrl>,
}

impl Source {
    /// Where the image is.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    fn fetched(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            held: None,
            parsed: None,
        }
    }
}

/// The image attachments of the caller's message (none outside a chat platform), with the
/// bytes of those the platform holds.
pub(crate) fn attached(caller: &Caller) -> Vec<Source> {
    let Some(platform) = caller.platform.as_ref() else {
        return Vec::new();
    };
    platform
        .attachments()
        .iter()
        .filter(|attachment| attachment.is_image())
        .map(|attachment| Source {
            url: attachment.url.clone(),
            held: platform.attachment_bytes(&attachment.url),
            parsed: None,
        })
        .collect()
}

/// What to load: `urls` then `attached`, each once, every URL to fetch one the fetcher
/// may load, at most [`MAX_IMAGES`] in all.
///
/// # Errors
///
/// The first problem, naming the image by its place in the list.
pub(crate) fn check(urls: &[String], attached: Vec<Source>) -> Result<Vec<Source>, String> {
    let mut sources: Vec<Source> = Vec::new();
    for source in urls.iter().map(|url| Source::fetched(url)).chain(attached) {
        match sources.iter_mut().find(|s| s.url == source.url) {
            // The same file named twice is loaded once, from the bytes the platform holds
            // when it holds them (a model may repeat an attachment's URL).
            Some(seen) => {
                if seen.held.is_none() {
                    seen.held = source.held;
                }
            }
            None => sources.push(source),
        }
        // One past the bound is enough to refuse: the rest need not be compared.
        if sources.len() > MAX_IMAGES {
            break;
        }
    }
    if sources.len() > MAX_IMAGES {
        return Err(format!(
            "at most {MAX_IMAGES} images per request (URLs and attachments together), not {}",
            sources.len()
        ));
    }
    for (i, source) in sources.iter_mut().enumerate() {
        if source.held.is_none() {
            source.parsed = Some(
                ImageUrl::parse(&source.url)
                    .map_err(|error| format!("image {}: {error}", i + 1))?,
            );
        }
    }
    Ok(sources)
}

/// Loads checked `sources`, in order: held bytes are checked as a fetched
/// body is (format, dimensions, size), the rest fetched in one batch. A URL of one of the
/// caller's own attachments may carry the platform's credential for its own file host; no
/// other URL carries any.
///
/// # Errors
///
/// The first refusal, that the images are over the batch bound together, or that no
/// fetcher is configured.
pub(crate) async fn fetch(
    services: &AiServices,
    caller: &Caller,
    sources: &[Source],
) -> Result<Vec<Image>, String> {
    let to_fetch: Vec<(&Source, &ImageUrl)> = sources
        .iter()
        .filter_map(|s| s.parsed.as_ref().map(|parsed| (s, parsed)))
        .collect();
    let mut fetched = if to_fetch.is_empty() {
        Vec::new()
    } else {
        let Some(fetcher) = &services.images else {
            return Err("image loading is not available in this program".to_owned());
        };
        let requests: Vec<ImageRequest> = to_fetch
            .iter()
            .map(|(source, parsed)| {
                let request = ImageRequest::new((*parsed).clone());
                let token = caller
                    .platform
                    .as_ref()
                    .and_then(|platform| platform.attachment_token(&source.url));
                match token {
                    Some(token) => request.with_bearer(token, parsed.host()),
                    None => request,
                }
            })
            .collect();
        fetcher
            .fetch_all(&requests)
            .await
            .map_err(|error| error.to_string())?
    }
    .into_iter();
    let mut images = Vec::with_capacity(sources.len());
    for (i, source) in sources.iter().enumerate() {
        let image = match &source.held {
            Some(bytes) => Image::from_bytes(i + 1, "the attached file", bytes)
                .map_err(|error| error.to_string())?,
            None => fetched
                .next()
                .ok_or_else(|| "an image went missing while loading".to_owned())?,
        };
        images.push(image);
    }
    let total: usize = images.iter().map(|image| image.bytes().len()).sum();
    if total > yetibot_image_fetch::limits::MAX_BATCH_BYTES {
        return Err("the images are over 8 MiB together".to_owned());
    }
    Ok(images)
}
