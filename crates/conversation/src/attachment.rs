//! Files attached to a chat message, as the platform described them: the noun the chat
//! adapters produce and commands read (through their caller's platform), so neither side
//! defines its own copy.

/// The most attachments kept from one message; platforms allow about ten.
pub const MAX_ATTACHMENTS: usize = 10;
/// The longest attachment URL kept, in characters.
pub const MAX_ATTACHMENT_URL_CHARS: usize = 4096;
/// The longest file name or media type kept, in characters (longer ones are cut).
pub const MAX_ATTACHMENT_NAME_CHARS: usize = 256;

/// One file attached to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The file's name, for display only.
    pub name: String,
    /// The media type the platform reported (`image/png`), lower-cased, if any.
    pub media_type: Option<String>,
    /// Where the platform serves the file.
    pub url: String,
    /// The size in bytes the platform reported, if any (a claim, not a bound).
    pub size: Option<u64>,
}

impl Attachment {
    /// An attachment within the bounds: `None` when the URL is empty or longer than
    /// [`MAX_ATTACHMENT_URL_CHARS`]; the name and media type are cut to
    /// [`MAX_ATTACHMENT_NAME_CHARS`] and stripped of control characters.
    #[must_use]
    pub fn new(name: &str, media_type: Option<&str>, url: &str, size: Option<u64>) -> Option<Self> {
        if url.is_empty() || url.chars().count() > MAX_ATTACHMENT_URL_CHARS {
            return None;
        }
        let clean = |text: &str| -> String {
            text.chars()
                .filter(|c| !c.is_control() && !crate::bidi::is_bidi_control(*c))
                .take(MAX_ATTACHMENT_NAME_CHARS)
                .collect()
        };
        Some(Self {
            name: clean(name),
            media_type: media_type
                .map(|m| clean(m).trim().to_ascii_lowercase())
                .filter(|m| !m.is_empty()),
            url: url.to_owned(),
            size,
        })
    }

    /// Whether the platform says it is an image (`image/*`), or, when it gave no media
    /// type, its name ends in a PNG, JPEG or WebP extension.
    #[must_use]
    pub fn is_image(&self) -> bool {
        match &self.media_type {
            Some(media_type) => media_type.starts_with("image/"),
            None => {
                let name = self.name.to_ascii_lowercase();
                [".png", ".jpg", ".jpeg", ".webp"]
                    .iter()
                    .any(|extension| name.ends_with(extension))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_are_bounded_and_recognised_as_images() {
        let png = Attachment::new(
            "cat.png",
            Some("Image/PNG"),
            "https://cdn.test/cat.png",
            Some(9),
        );
        let png = png.expect("kept");
        assert_eq!(png.media_type.as_deref(), Some("image/png"));
        assert!(png.is_image());
        let named = Attachment::new("x.JPG", None, "https://cdn.test/1", None).expect("kept");
        assert!(named.is_image());
        let text = Attachment::new("notes.txt", Some("text/plain"), "https://cdn.test/2", None);
        assert!(!text.expect("kept").is_image());
        assert!(Attachment::new("a", None, "", None).is_none());
        assert!(Attachment::new("a", None, &"u".repeat(4097), None).is_none());
        let odd = Attachment::new("a\u{202e}b\nc", Some(" "), "https://x.test/a", None);
        let odd = odd.expect("kept");
        assert_eq!(odd.name, "abc");
        assert_eq!(odd.media_type, None);
    }
}
