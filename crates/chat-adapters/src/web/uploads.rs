//! Images the operator attaches to a console message. The page uploads each file first
//! (`POST /api/uploads`, the raw bytes under an image media type); a message then names the
//! uploads it carries, and they become its attachments with a `console-upload:` URL that
//! only this console's outbox resolves ([`Uploads::bytes`]): the bytes never leave the
//! process through a URL, and no fetcher ever reaches the console.
//!
//! Memory is bounded: an upload is at most `max_upload_bytes`, and the oldest uploads leave
//! once more than [`MAX_KEPT_UPLOADS`] or `max_kept_bytes` are kept. An upload's ID is 128
//! random bits, so a page cannot name another page's upload by guessing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use yetibot_conversation::Attachment;

/// The URL scheme of a console upload.
pub(crate) const UPLOAD_SCHEME: &str = "console-upload:";
/// The most uploads kept at once, attached or not.
pub(crate) const MAX_KEPT_UPLOADS: usize = 32;
/// The media types an upload may have.
pub(crate) const UPLOAD_TYPES: [&str; 3] = ["image/png", "image/jpeg", "image/webp"];

/// Why an upload or a message's attachments are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UploadError {
    /// The media type is not one of [`UPLOAD_TYPES`].
    #[error("attach PNG, JPEG or WebP images only")]
    Type,
    /// The file is empty.
    #[error("the file is empty")]
    Empty,
    /// No randomness for the upload's ID.
    #[error("the console could not make an upload ID")]
    NoRandomness,
    /// A message names an upload that is not (or no longer) kept.
    #[error("an attachment was not found: upload it again")]
    Unknown,
    /// A message names more uploads than one message may carry.
    #[error("a message carries at most {0} attachments")]
    TooMany(usize),
}

#[derive(Debug)]
struct Upload {
    id: String,
    name: String,
    media_type: &'static str,
    bytes: Arc<[u8]>,
}

#[derive(Debug, Default)]
struct Kept {
    uploads: VecDeque<Upload>,
    bytes: usize,
}

/// The console's uploads.
#[derive(Debug)]
pub(crate) struct Uploads {
    kept: Mutex<Kept>,
    max_kept_bytes: usize,
}

impl Uploads {
    pub(crate) fn new(max_kept_bytes: usize) -> Self {
        Self {
            kept: Mutex::new(Kept::default()),
            max_kept_bytes,
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps one uploaded file and returns its ID. The caller has bounded its size.
    pub(crate) fn add(
        &self,
        name: &str,
        media_type: &str,
        bytes: Vec<u8>,
    ) -> Result<String, UploadError> {
        let media_type = UPLOAD_TYPES
            .iter()
            .copied()
            .find(|t| t.eq_ignore_ascii_case(media_type.trim()))
            .ok_or(UploadError::Type)?;
        if bytes.is_empty() {
            return Err(UploadError::Empty);
        }
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|_| UploadError::NoRandomness)?;
        let id: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let mut kept = self.kept();
        kept.bytes += bytes.len();
        kept.uploads.push_back(Upload {
            id: id.clone(),
            name: name.to_owned(),
            media_type,
            bytes: bytes.into(),
        });
        while kept.uploads.len() > MAX_KEPT_UPLOADS || kept.bytes > self.max_kept_bytes {
            let Some(oldest) = kept.uploads.pop_front() else {
                break;
            };
            kept.bytes -= oldest.bytes.len();
        }
        Ok(id)
    }

    /// The attachments of a message carrying the uploads `ids`, in order, each once.
    pub(crate) fn attachments(&self, ids: &[String]) -> Result<Vec<Attachment>, UploadError> {
        if ids.len() > yetibot_conversation::MAX_ATTACHMENTS {
            return Err(UploadError::TooMany(yetibot_conversation::MAX_ATTACHMENTS));
        }
        let kept = self.kept();
        let mut out: Vec<Attachment> = Vec::new();
        for id in ids {
            let upload = kept
                .uploads
                .iter()
                .find(|u| &u.id == id)
                .ok_or(UploadError::Unknown)?;
            let url = format!("{UPLOAD_SCHEME}{id}");
            if out.iter().any(|a| a.url == url) {
                continue;
            }
            let size = u64::try_from(upload.bytes.len()).ok();
            out.push(
                Attachment::new(&upload.name, Some(upload.media_type), &url, size)
                    .ok_or(UploadError::Unknown)?,
            );
        }
        Ok(out)
    }

    /// The bytes of the upload at `url` (`console-upload:<id>`), while it is kept.
    pub(crate) fn bytes(&self, url: &str) -> Option<Arc<[u8]>> {
        let id = url.strip_prefix(UPLOAD_SCHEME)?;
        self.kept()
            .uploads
            .iter()
            .find(|u| u.id == id)
            .map(|u| Arc::clone(&u.bytes))
    }
}

/// `text` with `%XX` escapes decoded (a file name the page sent with
/// `encodeURIComponent`); `None` when an escape is malformed or the result is not UTF-8.
pub(crate) fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_are_kept_within_their_bounds_and_named_by_unguessable_ids() {
        let uploads = Uploads::new(10);
        let a = uploads.add("a.png", "image/png", vec![1; 4]).expect("kept");
        assert_eq!(a.len(), 32);
        let b = uploads
            .add("b.jpg", "IMAGE/JPEG", vec![2; 4])
            .expect("kept");
        assert_ne!(a, b);
        let attached = uploads
            .attachments(&[a.clone(), b.clone(), a.clone()])
            .expect("both");
        assert_eq!(attached.len(), 2);
        assert_eq!(attached[0].url, format!("console-upload:{a}"));
        assert_eq!(attached[1].media_type.as_deref(), Some("image/jpeg"));
        assert_eq!(
            uploads.bytes(&attached[0].url).as_deref(),
            Some(&[1u8; 4][..])
        );
        // A third upload takes the kept bytes over 10: the oldest leaves.
        uploads
            .add("c.webp", "image/webp", vec![3; 4])
            .expect("kept");
        assert_eq!(uploads.bytes(&format!("console-upload:{a}")), None);
        assert_eq!(uploads.attachments(&[a]), Err(UploadError::Unknown));
        assert_eq!(
            uploads.add("x.gif", "image/gif", vec![1]),
            Err(UploadError::Type)
        );
        assert_eq!(
            uploads.add("x.png", "image/png", Vec::new()),
            Err(UploadError::Empty)
        );
        assert_eq!(uploads.bytes("https://example.test/x.png"), None);
        let many = vec![b; 11];
        assert_eq!(uploads.attachments(&many), Err(UploadError::TooMany(10)));
    }

    #[test]
    fn file_names_are_percent_decoded() {
        assert_eq!(
            percent_decoded("r%C3%A9sum%C3%A9+1.png").as_deref(),
            Some("résumé 1.png")
        );
        assert_eq!(percent_decoded("bad%2"), None);
        assert_eq!(percent_decoded("bad%zz"), None);
        assert_eq!(percent_decoded("%ff"), None);
    }
}
