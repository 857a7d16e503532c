//! Recognising PNG, JPEG and WebP by their first bytes and reading width and height from
//! the header, incrementally, as the body arrives; pixels are never decoded.

use crate::image::Format;
use crate::limits::MAX_PIXELS;

/// What the bytes received so far say about the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// The header is not complete yet.
    NeedMore,
    /// The header is complete and the dimensions are within bounds.
    Accepted(Format, u32, u32),
    /// The image is refused; nothing more needs to be read.
    Refused(Refusal),
}

/// Why an image is refused from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The first bytes are not PNG, JPEG or WebP.
    Unsupported,
    /// The header is malformed or a dimension is zero.
    BadDimensions,
    /// The image declares more than [`MAX_PIXELS`].
    TooManyPixels(u32, u32),
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
const JPEG_SIGNATURE: &[u8] = b"\xff\xd8\xff";
const RIFF: &[u8] = b"RIFF";
const WEBP: &[u8] = b"WEBP";

/// Reads an image header from a body that grows. Each call to [`HeaderReader::advance`]
/// gets the whole body received so far and resumes where the previous call stopped, so the
/// total work is linear in the body's length however it was cut into chunks.
#[derive(Debug, Default)]
pub(crate) struct HeaderReader {
    format: Option<Format>,
    /// JPEG: where the next marker starts.
    next_marker: usize,
    /// Loop iterations so far, for the linear-time property test.
    steps: usize,
}

impl HeaderReader {
    pub(crate) fn advance(&mut self, body: &[u8]) -> Progress {
        let format = match self.format {
            Some(format) => format,
            None => match sniff(body) {
                Sniff::Known(format) => {
                    self.format = Some(format);
                    self.next_marker = JPEG_SIGNATURE.len() - 1;
                    format
                }
                Sniff::NeedMore => return Progress::NeedMore,
                Sniff::Unsupported => return Progress::Refused(Refusal::Unsupported),
            },
        };
        let dimensions = match format {
            Format::Png => png(body),
            Format::Jpeg => self.jpeg(body),
            Format::Webp => webp(body),
        };
        match dimensions {
            Dimensions::NeedMore => Progress::NeedMore,
            Dimensions::Unreadable => Progress::Refused(Refusal::BadDimensions),
            Dimensions::Read(width, height) => judge(format, width, height),
        }
    }

    #[cfg(test)]
    pub(crate) fn steps(&self) -> usize {
        self.steps
    }

    /// Walks JPEG segments by their lengths to the first frame header (SOF0–SOF15, but not
    /// DHT `C4`, JPG `C8` or DAC `CC`, which share that marker range).
    fn jpeg(&mut self, body: &[u8]) -> Dimensions {
        loop {
            self.steps += 1;
            let at = self.next_marker;
            let Some(&first) = body.get(at) else {
                return Dimensions::NeedMore;
            };
            if first != 0xff {
                return Dimensions::Unreadable;
            }
            let Some(&marker) = body.get(at + 1) else {
                return Dimensions::NeedMore;
            };
            match marker {
                // A fill byte before a marker.
                0xff => self.next_marker = at + 1,
                // Markers that stand alone, without a length: TEM and RST0–RST7.
                0x01 | 0xd0..=0xd7 => self.next_marker = at + 2,
                // A second SOI, the end of the image or the scan itself before any frame
                // header: there are no dimensions to find.
                0x00 | 0xd8 | 0xd9 | 0xda => return Dimensions::Unreadable,
                0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                    // FF Cn, length (2), precision (1), height (2), width (2).
                    let (Some(length), Some(height), Some(width)) =
                        (be16(body, at + 2), be16(body, at + 5), be16(body, at + 7))
                    else {
                        return Dimensions::NeedMore;
                    };
                    if length < 8 {
                        return Dimensions::Unreadable;
                    }
                    return Dimensions::Read(width.into(), height.into());
                }
                _ => {
                    let Some(length) = be16(body, at + 2) else {
                        return Dimensions::NeedMore;
                    };
                    if length < 2 {
                        return Dimensions::Unreadable;
                    }
                    self.next_marker = at + 2 + usize::from(length);
                }
            }
        }
    }
}

enum Sniff {
    NeedMore,
    Unsupported,
    Known(Format),
}

/// Which format the first bytes announce, or whether more are needed to tell.
fn sniff(body: &[u8]) -> Sniff {
    let png = starts_like(body, 0, PNG_SIGNATURE);
    let jpeg = starts_like(body, 0, JPEG_SIGNATURE);
    // RIFF, the file size (any four bytes), WEBP.
    let webp = starts_like(body, 0, RIFF) && starts_like(body, 8, WEBP);
    if png && body.len() >= PNG_SIGNATURE.len() {
        Sniff::Known(Format::Png)
    } else if jpeg && body.len() >= JPEG_SIGNATURE.len() {
        Sniff::Known(Format::Jpeg)
    } else if webp && body.len() >= 12 {
        Sniff::Known(Format::Webp)
    } else if png || jpeg || webp {
        Sniff::NeedMore
    } else {
        Sniff::Unsupported
    }
}

/// Whether the bytes of `body` from `at` on agree with `expected` as far as both go.
fn starts_like(body: &[u8], at: usize, expected: &[u8]) -> bool {
    let have = body.get(at..).unwrap_or_default();
    have.iter().zip(expected).all(|(a, b)| a == b)
}

enum Dimensions {
    NeedMore,
    Unreadable,
    Read(u32, u32),
}

/// PNG: the signature, then the IHDR chunk (length 13) with width and height.
fn png(body: &[u8]) -> Dimensions {
    let (Some(length), Some(kind), Some(width), Some(height)) = (
        be32(body, 8),
        body.get(12..16),
        be32(body, 16),
        be32(body, 20),
    ) else {
        return Dimensions::NeedMore;
    };
    if length != 13 || kind != b"IHDR" || width > i32::MAX as u32 || height > i32::MAX as u32 {
        return Dimensions::Unreadable;
    }
    Dimensions::Read(width, height)
}

/// WebP: the first chunk after `RIFF....WEBP` is `VP8 ` (lossy), `VP8L` (lossless) or
/// `VP8X` (extended, with the canvas size).
fn webp(body: &[u8]) -> Dimensions {
    let Some(chunk) = body.get(12..16) else {
        return Dimensions::NeedMore;
    };
    match chunk {
        b"VP8 " => {
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height.
            let (Some(code), Some(width), Some(height)) =
                (body.get(23..26), le16(body, 26), le16(body, 28))
            else {
                return Dimensions::NeedMore;
            };
            if code != [0x9d, 0x01, 0x2a] {
                return Dimensions::Unreadable;
            }
            Dimensions::Read((width & 0x3fff).into(), (height & 0x3fff).into())
        }
        b"VP8L" => {
            // Signature 2F, then width − 1 and height − 1 in 14 bits each.
            let (Some(&signature), Some(bits)) = (body.get(20), le32(body, 21)) else {
                return Dimensions::NeedMore;
            };
            if signature != 0x2f {
                return Dimensions::Unreadable;
            }
            Dimensions::Read((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
        }
        b"VP8X" => {
            // Flags and reserved bytes (4), then canvas width − 1 and height − 1 in 24 bits.
            let (Some(width), Some(height)) = (le24(body, 24), le24(body, 27)) else {
                return Dimensions::NeedMore;
            };
            Dimensions::Read(width + 1, height + 1)
        }
        _ => Dimensions::Unreadable,
    }
}

fn judge(format: Format, width: u32, height: u32) -> Progress {
    if width == 0 || height == 0 {
        Progress::Refused(Refusal::BadDimensions)
    } else if u64::from(width) * u64::from(height) > MAX_PIXELS {
        Progress::Refused(Refusal::TooManyPixels(width, height))
    } else {
        Progress::Accepted(format, width, height)
    }
}

fn bytes<const N: usize>(body: &[u8], at: usize) -> Option<[u8; N]> {
    body.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn be16(body: &[u8], at: usize) -> Option<u16> {
    bytes(body, at).map(u16::from_be_bytes)
}

fn be32(body: &[u8], at: usize) -> Option<u32> {
    bytes(body, at).map(u32::from_be_bytes)
}

fn le16(body: &[u8], at: usize) -> Option<u16> {
    bytes(body, at).map(u16::from_le_bytes)
}

fn le24(body: &[u8], at: usize) -> Option<u32> {
    bytes::<3>(body, at).map(|[a, b, c]| u32::from_le_bytes([a, b, c, 0]))
}

fn le32(body: &[u8], at: usize) -> Option<u32> {
    bytes(body, at).map(u32::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PNG: &[u8] = image_fixture::PNG;
    const JPEG: &[u8] = image_fixture::JPEG;
    const JPEG_PROGRESSIVE: &[u8] = image_fixture::JPEG_PROGRESSIVE;
    const WEBP_LOSSY: &[u8] = image_fixture::WEBP;
    const WEBP_LOSSLESS: &[u8] = image_fixture::WEBP_LOSSLESS;
    const WEBP_EXTENDED: &[u8] = image_fixture::WEBP_EXTENDED;
    const GIF: &[u8] = image_fixture::GIF;

    /// Feeds `body` whole and one byte at a time; both must agree.
    fn read(body: &[u8]) -> Progress {
        let whole = HeaderReader::default().advance(body);
        let mut reader = HeaderReader::default();
        let mut progress = Progress::NeedMore;
        for end in 0..=body.len() {
            progress = reader.advance(&body[..end]);
            if progress != Progress::NeedMore {
                break;
            }
        }
        assert_eq!(whole, progress);
        whole
    }

    fn check(body: &[u8], expected: Progress) {
        assert_eq!(read(body), expected);
    }

    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut body = PNG_SIGNATURE.to_vec();
        body.extend(13u32.to_be_bytes());
        body.extend(b"IHDR");
        body.extend(width.to_be_bytes());
        body.extend(height.to_be_bytes());
        body
    }

    fn jpeg_header(width: u16, height: u16, marker: u8) -> Vec<u8> {
        let mut body = vec![0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, marker, 0, 11, 8];
        body.extend(height.to_be_bytes());
        body.extend(width.to_be_bytes());
        body
    }

    fn vp8x_header(width: u32, height: u32) -> Vec<u8> {
        let mut body = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        body.extend(&(width - 1).to_le_bytes()[..3]);
        body.extend(&(height - 1).to_le_bytes()[..3]);
        body
    }

    #[test]
    fn real_images_give_their_dimensions() {
        check(PNG, Progress::Accepted(Format::Png, 2, 3));
        check(JPEG, Progress::Accepted(Format::Jpeg, 2, 3));
        check(JPEG_PROGRESSIVE, Progress::Accepted(Format::Jpeg, 2, 3));
        check(WEBP_LOSSY, Progress::Accepted(Format::Webp, 2, 3));
        check(WEBP_LOSSLESS, Progress::Accepted(Format::Webp, 2, 3));
        check(WEBP_EXTENDED, Progress::Accepted(Format::Webp, 2, 3));
    }

    #[test]
    fn other_formats_are_refused_from_the_first_byte() {
        let unsupported = Progress::Refused(Refusal::Unsupported);
        check(GIF, unsupported);
        check(b"<!doctype html><html>", unsupported);
        check(b"\x89PNx", unsupported);
        check(b"RIFF\0\0\0\0WAVEfmt ", unsupported);
        check(b"\xff\xd8\x00", unsupported);
        assert_eq!(HeaderReader::default().advance(b"G"), unsupported);
        assert_eq!(HeaderReader::default().advance(b""), Progress::NeedMore);
        assert_eq!(HeaderReader::default().advance(b"RIFF"), Progress::NeedMore);
    }

    #[test]
    fn a_cut_header_needs_more() {
        for body in [PNG, JPEG, WEBP_LOSSY, WEBP_LOSSLESS, WEBP_EXTENDED] {
            let mut reader = HeaderReader::default();
            assert_eq!(reader.advance(&body[..10]), Progress::NeedMore);
        }
    }

    #[test]
    fn the_pixel_bound_is_inclusive() {
        check(
            &png_header(4000, 4000),
            Progress::Accepted(Format::Png, 4000, 4000),
        );
        check(
            &png_header(4000, 4001),
            Progress::Refused(Refusal::TooManyPixels(4000, 4001)),
        );
        check(
            &png_header(1, 16_000_001),
            Progress::Refused(Refusal::TooManyPixels(1, 16_000_001)),
        );
        check(
            &vp8x_header(16_384, 16_384),
            Progress::Refused(Refusal::TooManyPixels(16_384, 16_384)),
        );
        check(
            &jpeg_header(65_535, 65_535, 0xc0),
            Progress::Refused(Refusal::TooManyPixels(65_535, 65_535)),
        );
    }

    #[test]
    fn zero_or_malformed_dimensions_are_refused() {
        let bad = Progress::Refused(Refusal::BadDimensions);
        check(&png_header(0, 5), bad);
        check(&png_header(5, 0), bad);
        check(&png_header(u32::MAX, 1), bad);
        let mut not_ihdr = png_header(1, 1);
        not_ihdr[12..16].copy_from_slice(b"IDAT");
        check(&not_ihdr, bad);
        check(&jpeg_header(0, 8, 0xc0), bad);
        check(&jpeg_header(8, 0, 0xc2), bad);
        // A scan before any frame header, the end of the image, a bad segment length.
        check(b"\xff\xd8\xff\xda\x00\x08", bad);
        check(b"\xff\xd8\xff\xd9", bad);
        check(b"\xff\xd8\xff\xe0\x00\x01", bad);
        check(b"\xff\xd8\xff\xe0\x00\x02\x12", bad);
        check(
            b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x01\x02\x03\x04\x05\x06\x07",
            bad,
        );
        check(b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2e\0\0\0\0", bad);
        check(b"RIFF\0\0\0\0WEBPALPH\0\0\0\0", bad);
    }

    #[test]
    fn jpeg_skips_tables_fill_bytes_and_markers_that_share_the_frame_range() {
        // DHT (C4), JPG (C8) and DAC (CC) are segments, not frame headers.
        for marker in [0xc4, 0xc8, 0xcc] {
            let mut body = vec![0xff, 0xd8, 0xff, marker, 0, 4, 0xaa, 0xbb, 0xff, 0xff, 0xd0];
            body.extend([0xff, 0xc1, 0, 11, 8, 0, 3, 0, 2]);
            check(&body, Progress::Accepted(Format::Jpeg, 2, 3));
        }
        for marker in (0xc0..=0xcf).filter(|m| ![0xc4, 0xc8, 0xcc].contains(m)) {
            check(
                &jpeg_header(7, 9, marker),
                Progress::Accepted(Format::Jpeg, 7, 9),
            );
        }
    }

    fn chunked(max: usize) -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
        (
            proptest::collection::vec(any::<u8>(), 0..max),
            proptest::collection::vec(1usize..64, 0..64),
        )
    }

    /// Bytes that begin like a JPEG and then consist of many tiny segments: the worst case
    /// for a reader that would start over with every chunk.
    fn jpeg_like() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                Just(vec![0xff, 0xe1, 0x00, 0x02]),
                Just(vec![0xff, 0xd0]),
                Just(vec![0xff]),
                proptest::collection::vec(any::<u8>(), 0..6),
            ],
            0..200,
        )
        .prop_map(|parts| {
            let mut body = JPEG_SIGNATURE.to_vec();
            body.pop();
            body.extend(parts.concat());
            body
        })
    }

    /// Feeds `body` cut at the given chunk lengths; returns the result and the steps taken.
    fn feed(body: &[u8], cuts: &[usize]) -> (Progress, usize, usize) {
        let mut reader = HeaderReader::default();
        let mut end = 0;
        let mut calls = 0;
        let mut progress = Progress::NeedMore;
        for cut in cuts.iter().copied().chain(std::iter::repeat(1)) {
            end = (end + cut).min(body.len());
            calls += 1;
            progress = reader.advance(&body[..end]);
            if progress != Progress::NeedMore || end == body.len() {
                break;
            }
        }
        (progress, reader.steps(), calls)
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_and_cost_linear_time((body, cuts) in chunked(512)) {
            let (progress, steps, calls) = feed(&body, &cuts);
            prop_assert_eq!(progress, HeaderReader::default().advance(&body));
            prop_assert!(steps <= body.len() + calls, "{steps} steps for {} bytes", body.len());
        }

        #[test]
        fn jpeg_like_bytes_cost_linear_time(body in jpeg_like(), cuts in proptest::collection::vec(1usize..8, 0..64)) {
            let (progress, steps, calls) = feed(&body, &cuts);
            prop_assert_eq!(progress, HeaderReader::default().advance(&body));
            prop_assert!(steps <= body.len() + calls, "{steps} steps for {} bytes", body.len());
        }

        #[test]
        fn headers_of_any_size_are_read_exactly(width in 1u32..70_000, height in 1u32..70_000) {
            let expected = judge(Format::Png, width, height);
            prop_assert_eq!(read(&png_header(width, height)), expected);
            let expected = judge(Format::Webp, width, height);
            prop_assert_eq!(read(&vp8x_header(width, height)), expected);
            if let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) {
                prop_assert_eq!(read(&jpeg_header(w, h, 0xc0)), judge(Format::Jpeg, width, height));
            }
        }
    }
}
