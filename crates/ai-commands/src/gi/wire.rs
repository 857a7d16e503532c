//! xAI's image API as `gi` uses it: generation (`POST {api}/images/generations`) and
//! editing (`POST {api}/images/edits`, JSON with the source image as a `data:` URL), both
//! with the `grok-imagine-image` model, one image, and the result inline as base64
//! (`response_format: "b64_json"`), so the bot holds the bytes and never depends on a
//! temporary URL of xAI's. Only `data[0].b64_json` is read from a reply: a revised prompt,
//! usage and anything else xAI sends are ignored and never shown, logged or given to a
//! model.

use serde_json::{Value, json};

/// The name xAI image requests carry in errors.
pub(crate) const XAI_IMAGES: &str = "xAI images";
/// The image model.
pub(crate) const IMAGE_MODEL: &str = "grok-imagine-image";
/// The largest reply read: a 4 MiB image in base64 with room for the envelope.
pub(crate) const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

/// The generation URL below the API base.
pub(crate) fn generation_url(api_url: &str) -> String {
    format!("{api_url}/images/generations")
}

/// The edit URL below the API base.
pub(crate) fn edit_url(api_url: &str) -> String {
    format!("{api_url}/images/edits")
}

/// A generation request.
pub(crate) fn generation_body(prompt: &str) -> Value {
    json!({
        "model": IMAGE_MODEL,
        "prompt": prompt,
        "n": 1,
        "response_format": "b64_json",
    })
}

/// An edit request of the image at `data_url`.
pub(crate) fn edit_body(prompt: &str, data_url: &str) -> Value {
    json!({
        "model": IMAGE_MODEL,
        "prompt": prompt,
        "n": 1,
        "response_format": "b64_json",
        "image": {"type": "image_url", "url": data_url},
    })
}

/// The base64 image of a reply (`data[0].b64_json`).
///
/// # Errors
///
/// A fixed reason when the reply is not that shape.
pub(crate) fn image_base64(reply: &[u8]) -> Result<String, &'static str> {
    let value: Value = serde_json::from_slice(reply).map_err(|_| "the reply is not JSON")?;
    let Some(first) = value
        .get("data")
        .and_then(Value::as_array)
        .and_then(|data| data.first())
    else {
        return Err("the reply has no image");
    };
    match first.get("b64_json") {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        _ => Err("the reply's image is not inline base64"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn requests_ask_for_one_inline_image() {
        assert_eq!(
            generation_url("http://127.0.0.1:9/v1"),
            "http://127.0.0.1:9/v1/images/generations"
        );
        assert_eq!(
            edit_url("https://api.x.ai/v1"),
            "https://api.x.ai/v1/images/edits"
        );
        let body = generation_body("a yeti");
        assert_eq!(body["model"], IMAGE_MODEL);
        assert_eq!(body["n"], 1);
        assert_eq!(body["response_format"], "b64_json");
        assert!(body.get("image").is_none());
        let body = edit_body("make it blue", "data:image/png;base64,AA==");
        assert_eq!(body["image"]["url"], "data:image/png;base64,AA==");
        assert_eq!(body["image"]["type"], "image_url");
    }

    #[test]
    fn only_the_first_inline_image_is_read() {
        assert_eq!(
            image_base64(
                br#"{"data":[{"b64_json":"aGk=","revised_prompt":"x"},{"b64_json":"b"}]}"#
            ),
            Ok("aGk=".to_owned())
        );
        for bad in [
            &b"nope"[..],
            br#"{"data":[]}"#,
            br#"{"data":[{"url":"https://imgen.x.ai/1.jpg"}]}"#,
            br#"{"data":[{"b64_json":""}]}"#,
            br#"{"error":"x"}"#,
        ] {
            assert!(image_base64(bad).is_err());
        }
    }

    proptest! {
        #[test]
        fn any_reply_is_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = image_base64(&bytes);
        }
    }
}
