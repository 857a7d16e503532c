//! Grok Imagine images: the `gi` command ([`command`]) and the `gi` native tool ([`tool`])
//! generate an image from a prompt with xAI's image API, or edit the image attached to the
//! request's own message. Both go through [`generate`], which checks the prompt, loads the
//! attachment with the shared image loader (never with the xAI key), sends one request
//! and holds the result to the image loader's rules (PNG, JPEG or WebP by magic bytes, 16
//! megapixels, 4 MiB). The image goes with the reply as a file, which each chat platform
//! posts as an upload and the console shows. These are paid calls: nothing is retried, and
//! a failure after the request went out is an unknown outcome.

pub(crate) mod command;
pub(crate) mod tool;
pub(crate) mod wire;

use yetibot_command::{Caller, ReplyFile};
use yetibot_image_fetch::Image;
use yetibot_redaction::Secrets;

use crate::services::AiServices;
use wire::XAI_IMAGES;

/// The longest prompt, in characters.
pub(crate) const MAX_PROMPT_CHARS: usize = 2_000;

/// What to say when no xAI key is configured.
pub(crate) const NOT_CONFIGURED: &str = "gi needs an xAI API key: set :yetibot :xai :key";

/// Why no image was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing was charged: a check failed, nothing was sent, or xAI refused the request.
    NotMade(String),
    /// The request went out and its outcome is unknown: it may have been charged.
    Unknown(String),
}

impl Failure {
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::NotMade(message) | Self::Unknown(message) => message,
        }
    }
}

/// A made image, ready to go with the reply.
pub(crate) struct Made {
    pub(crate) image: Image,
    pub(crate) file: ReplyFile,
    /// Whether an attached image was edited (rather than a new one generated).
    pub(crate) edited: bool,
}

impl Made {
    /// What the reply's data and the tool's result say about it.
    pub(crate) fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file.name(),
            "media_type": self.image.media_type(),
            "width": self.image.width(),
            "height": self.image.height(),
            "edited": self.edited,
        })
    }
}

/// `prompt` trimmed, when it is 1 to [`MAX_PROMPT_CHARS`] characters.
pub(crate) fn prompt_text(prompt: &str) -> Result<&str, String> {
    let prompt = prompt.trim();
    if prompt.is_empty() {
        return Err("gi needs a prompt: what the image should show".to_owned());
    }
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return Err(format!(
            "gi: a prompt is at most {MAX_PROMPT_CHARS} characters"
        ));
    }
    Ok(prompt)
}

/// Makes one image from `prompt`, editing the first image attached to the caller's message
/// when there is one. `secrets` are the request's credentials besides the configured ones
/// (both are refused in the prompt and the attachment's URL).
///
/// # Errors
///
/// [`Failure::NotMade`] before anything is charged, [`Failure::Unknown`] after. Messages
/// never carry the key, xAI's words or the prompt.
pub(crate) async fn generate(
    services: &AiServices,
    caller: &Caller,
    prompt: &str,
    secrets: &Secrets,
) -> Result<Made, Failure> {
    let not_made = |message: String| Failure::NotMade(message);
    let account = services
        .xai
        .as_ref()
        .ok_or_else(|| not_made(NOT_CONFIGURED.to_owned()))?;
    let prompt = prompt_text(prompt).map_err(not_made)?;
    // Only the first image of the message is edited; xAI takes one source image here.
    let attached: Vec<_> = crate::images::attached(caller)
        .into_iter()
        .take(1)
        .collect();
    let sources = crate::images::check(&[], attached)
        .map_err(|problem| not_made(format!("gi: {problem}")))?;
    let quotes_secret = |text: &str| {
        services.client.secrets().contains_secret(text) || secrets.contains_secret(text)
    };
    if quotes_secret(prompt) || sources.iter().any(|source| quotes_secret(source.url())) {
        return Err(not_made(
            "gi: the request quotes a configured credential, so nothing was sent".to_owned(),
        ));
    }
    let source = crate::images::fetch(services, caller, &sources)
        .await
        .map_err(|problem| not_made(format!("gi: the attached image: {problem}")))?
        .into_iter()
        .next();
    let (url, body) = match &source {
        Some(image) => (
            wire::edit_url(account.api_url()),
            wire::edit_body(prompt, &image.to_data_url()),
        ),
        None => (
            wire::generation_url(account.api_url()),
            wire::generation_body(prompt),
        ),
    };
    let body = serde_json::to_vec(&body)
        .map_err(|_| not_made("gi: the request could not be written".to_owned()))?;
    let call = yetibot_ai_providers::ServiceCall::post(
        XAI_IMAGES,
        &url,
        yetibot_ai_providers::ServiceBody::Json(body),
        wire::MAX_REPLY_BYTES,
    )
    .bearer(account.key());
    let reply = services.client.call_service(call).await.map_err(|error| {
        let message = services
            .client
            .secrets()
            .redact_text(&error.to_string())
            .into_owned();
        if error.never_sent() {
            not_made(format!("gi: {message}; nothing was sent"))
        } else if error.refused() {
            not_made(format!("gi: {message}; xAI made no image"))
        } else {
            Failure::Unknown(format!(
                "gi: {message} (the image may have been made and charged; it is not retried)"
            ))
        }
    })?;
    let unusable = |reason: &str| {
        Failure::Unknown(format!(
            "gi: xAI's reply was unusable ({reason}); the image may have been charged"
        ))
    };
    let text = wire::image_base64(&reply).map_err(unusable)?;
    let image =
        Image::from_base64(1, "xAI", &text).map_err(|error| unusable(&error.to_string()))?;
    let extension = match image.format() {
        yetibot_image_fetch::Format::Png => "png",
        yetibot_image_fetch::Format::Jpeg => "jpg",
        yetibot_image_fetch::Format::Webp => "webp",
    };
    let name = format!("gi-{:016x}.{extension}", fnv1a(image.bytes()));
    let file = ReplyFile::new(name, image.media_type(), image.bytes().to_vec())
        .map_err(|error| unusable(&error.to_string()))?;
    Ok(Made {
        image,
        file,
        edited: source.is_some(),
    })
}

/// A stable name for the bytes (64-bit FNV-1a): the same image keeps its file name.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
