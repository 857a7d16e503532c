//! A fetched image: its format, dimensions and bytes, and its base64 form for APIs that
//! take images inline.

use std::fmt;

/// The image formats accepted, recognised by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Portable Network Graphics.
    Png,
    /// JPEG (JFIF or Exif), baseline or progressive.
    Jpeg,
    /// WebP, lossy, lossless or extended.
    Webp,
}

impl Format {
    /// The format's media type: `image/png`, `image/jpeg` or `image/webp`.
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Webp => "WebP",
        })
    }
}

/// An image that passed every check: its header was read, its dimensions are within
/// bounds, and its bytes are exactly the body the host sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    format: Format,
    width: u32,
    height: u32,
    bytes: Vec<u8>,
}

impl Image {
    pub(crate) fn new(format: Format, width: u32, height: u32, bytes: Vec<u8>) -> Self {
        Self {
            format,
            width,
            height,
            bytes,
        }
    }

    /// The format its first bytes announced.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The width in pixels, from the header.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The height in pixels, from the header.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The media type of [`Image::format`].
    pub fn media_type(&self) -> &'static str {
        self.format.media_type()
    }

    /// The encoded image, as received.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The encoded image, as received, without copying.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The encoded image in standard base64 (RFC 4648, with `=` padding).
    pub fn to_base64(&self) -> String {
        base64(&self.bytes)
    }

    /// A `data:` URL holding the image, as several model APIs accept images inline.
    pub fn to_data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type(), self.to_base64())
    }
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The bytes themselves are never useful in a log line.
        f.debug_struct("Image")
            .field("format", &self.format)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding. Small enough to write here rather than add a crate.
fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let [a, b, c] = [0, 1, 2].map(|i| group.get(i).copied().unwrap_or(0));
        let n = u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c);
        let sextet = |shift: u32| char::from(ALPHABET[((n >> shift) & 0x3f) as usize]);
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if group.len() > 1 { sextet(6) } else { '=' });
        out.push(if group.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// Decodes standard, padded base64 (RFC 4648) of at most `max_bytes` bytes; `None` for
/// anything else, including text too long to decode within the bound. One pass, no
/// allocation beyond the output.
pub(crate) fn decode_base64(text: &str, max_bytes: usize) -> Option<Vec<u8>> {
    let text = text.as_bytes();
    if !text.len().is_multiple_of(4) || text.len() / 4 * 3 > max_bytes + 2 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let groups = text.len() / 4;
    for (i, group) in text.chunks_exact(4).enumerate() {
        let last = i + 1 == groups;
        let padding = group.iter().rev().take_while(|&&c| c == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &group[..4 - padding] {
            n = n << 6 | value(c)?;
        }
        n <<= 6 * padding as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // Bits below the last whole byte must be zero in canonical base64.
        if (padding == 1 && bytes[2] != 0) || (padding == 2 && bytes[1] != 0) {
            return None;
        }
        out.extend_from_slice(&bytes[..3 - padding]);
    }
    (out.len() <= max_bytes).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A strict reference decoder written independently of the encoder: it walks the text
    /// bit by bit and rejects anything out of place.
    fn decode(text: &str) -> Option<Vec<u8>> {
        if !text.len().is_multiple_of(4) {
            return None;
        }
        let body = text.trim_end_matches('=');
        if text.len() - body.len() > 2 {
            return None;
        }
        let mut bits = 0u64;
        let mut count = 0;
        let mut out = Vec::new();
        for c in body.chars() {
            let value = ALPHABET.iter().position(|&a| char::from(a) == c)?;
            bits = bits << 6 | value as u64;
            count += 6;
            if count >= 8 {
                count -= 8;
                out.push((bits >> count) as u8);
                bits &= (1 << count) - 1;
            }
        }
        // Padding bits must be zero, as an encoder writes them.
        (bits == 0).then_some(out)
    }

    #[test]
    fn rfc_4648_test_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
    }

    #[test]
    fn media_types_and_debug() {
        let image = Image::new(Format::Webp, 2, 3, vec![1, 2, 3, 4]);
        assert_eq!(image.media_type(), "image/webp");
        assert_eq!(Format::Png.media_type(), "image/png");
        assert_eq!(Format::Jpeg.media_type(), "image/jpeg");
        assert_eq!(image.to_data_url(), "data:image/webp;base64,AQIDBA==");
        assert_eq!(
            format!("{image:?}"),
            "Image { format: Webp, width: 2, height: 3, bytes: 4 }"
        );
    }

    proptest! {
        #[test]
        fn base64_decodes_back_to_the_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let encoded = base64(&bytes);
            prop_assert_eq!(encoded.len(), bytes.len().div_ceil(3) * 4);
            prop_assert_eq!(decode(&encoded), Some(bytes.clone()));
            prop_assert_eq!(decode_base64(&encoded, 300), Some(bytes));
        }

        #[test]
        fn the_decoder_agrees_with_the_reference_on_any_text(text in "[A-Za-z0-9+/=]{0,40}|\\PC{0,40}") {
            prop_assert_eq!(decode_base64(&text, 1 << 20), decode(&text));
        }
    }

    #[test]
    fn decoding_refuses_what_is_too_long_or_not_canonical() {
        assert_eq!(decode_base64("aGk=", 2), Some(b"hi".to_vec()));
        assert_eq!(decode_base64("aGk=", 1), None);
        assert_eq!(decode_base64("aGl=", 8), None, "non-zero trailing bits");
        assert_eq!(decode_base64("aG=k", 8), None);
        assert_eq!(decode_base64("aGk", 8), None);
        assert_eq!(
            decode_base64("aGk=aGk=", 8),
            None,
            "padding only at the end"
        );
        assert_eq!(decode_base64(&"A".repeat(4_000_000), 1000), None);
    }
}
