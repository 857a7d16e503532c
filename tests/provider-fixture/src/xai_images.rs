//! A fake xAI image API (`POST /images/generations`, `POST /images/edits`) for one key, in
//! the wire format the bot's `gi` module documents: one image, inline as base64. Mount it
//! with [`XaiImages::mount`] under a prefix and point `:xai :api-url` there.
//!
//! - Generation answers [`GENERATED_PNG`] (4×3 pixels).
//! - Editing needs the source image as a `data:` URL in `image.url` and answers
//!   [`EDITED_PNG`] (3×4 pixels).
//! - A wrong key gets `401` and a malformed request `400`; both bodies name
//!   [`ERROR_CANARY`], which a caller must never show. Every reply's `revised_prompt` is
//!   [`REVISED_CANARY`], which a caller must neither show nor give a model.

use serde_json::{Value, json};

use crate::{Fixture, Recorded, Reply};

/// The image generation answers: a 4×3 red PNG.
pub const GENERATED_PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 4, 0, 0, 0, 3, 8, 2, 0,
    0, 0, 59, 150, 57, 145, 0, 0, 0, 16, 73, 68, 65, 84, 120, 156, 99, 56, 33, 39, 7, 71, 12, 56,
    57, 0, 245, 199, 12, 49, 7, 235, 173, 153, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];
const GENERATED_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAEElEQVR4nGM4IScHRww4OQD1xwwxB+utmQAAAABJRU5ErkJggg==";

/// The image editing answers: a 3×4 blue PNG.
pub const EDITED_PNG: &[u8] = &[
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 3, 0, 0, 0, 4, 8, 2, 0,
    0, 0, 196, 79, 18, 80, 0, 0, 0, 16, 73, 68, 65, 84, 120, 156, 99, 144, 147, 59, 1, 65, 12, 120,
    89, 0, 235, 240, 12, 49, 209, 220, 33, 54, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];
const EDITED_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAMAAAAECAIAAADETxJQAAAAEElEQVR4nGOQkzsBQQx4WQDr8Awx0dwhNgAAAABJRU5ErkJggg==";

/// A marker in every error body.
pub const ERROR_CANARY: &str = "xai-images-error-canary-77c";
/// The revised prompt of every answer.
pub const REVISED_CANARY: &str = "xai-revised-prompt-canary-3b0";

/// The fake's key.
#[derive(Debug, Clone)]
pub struct XaiImages {
    key: String,
}

impl XaiImages {
    /// A fake that accepts `key`.
    #[must_use]
    pub fn new(key: &str) -> Self {
        Self {
            key: key.to_owned(),
        }
    }

    /// Answers both endpoints under `prefix` (such as `/v1`) on `fixture`.
    pub fn mount(&self, fixture: &Fixture, prefix: &str) {
        let fake = self.clone();
        fixture.respond_with(&format!("{prefix}/images/generations"), move |request| {
            fake.answer(request, false)
        });
        let fake = self.clone();
        fixture.respond_with(&format!("{prefix}/images/edits"), move |request| {
            fake.answer(request, true)
        });
    }

    fn answer(&self, request: &Recorded, edit: bool) -> Reply {
        let authorized = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            == Some(format!("Bearer {}", self.key).as_str());
        if !authorized {
            return error(401, "Incorrect API key provided");
        }
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return error(400, "the body is not JSON");
        };
        let well_formed = body["model"] == "grok-imagine-image"
            && body["n"] == 1
            && body["response_format"] == "b64_json"
            && body["prompt"].as_str().is_some_and(|p| !p.is_empty());
        if !well_formed {
            return error(400, "unexpected request");
        }
        let image = if edit {
            let source = body["image"]["url"].as_str().unwrap_or_default();
            if !source.starts_with("data:image/") || !source.contains(";base64,") {
                return error(400, "the edit has no source image");
            }
            EDITED_B64
        } else {
            if body.get("image").is_some() {
                return error(400, "a generation takes no image");
            }
            GENERATED_B64
        };
        Reply::json(
            json!({
                "data": [{"b64_json": image, "mime_type": "image/png", "revised_prompt": REVISED_CANARY}],
                "usage": {"cost_in_usd_ticks": 200_000_000},
            })
            .to_string(),
        )
    }
}

fn error(status: u16, message: &str) -> Reply {
    Reply::status_json(
        status,
        json!({"error": format!("{message} ({ERROR_CANARY})"), "code": status}).to_string(),
    )
}
