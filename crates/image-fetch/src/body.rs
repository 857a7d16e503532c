//! Collecting an image body under its bounds: bytes are counted as they arrive (whatever
//! `Content-Length` claims) and the header is judged as soon as it is complete.

use crate::header::{HeaderReader, Progress, Refusal};
use crate::image::{Format, Image};
use crate::limits::MAX_IMAGE_BYTES;

/// Why a body is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyRefusal {
    ImageTooLarge,
    BatchTooLarge,
    Header(Refusal),
    TruncatedHeader,
}

#[derive(Debug)]
pub(crate) struct BodyReader {
    header: HeaderReader,
    accepted: Option<(Format, u32, u32)>,
    bytes: Vec<u8>,
    /// What is left of the batch's byte budget for this image.
    batch_left: usize,
}

impl BodyReader {
    pub(crate) fn new(batch_left: usize) -> Self {
        Self {
            header: HeaderReader::default(),
            accepted: None,
            bytes: Vec::new(),
            batch_left,
        }
    }

    /// Refuses early a body whose declared length is already over a bound. A body without
    /// a declared length, or with a false one, is still bounded by [`BodyReader::push`].
    pub(crate) fn declared(&self, length: u64) -> Result<(), BodyRefusal> {
        if length > MAX_IMAGE_BYTES as u64 {
            Err(BodyRefusal::ImageTooLarge)
        } else if length > self.batch_left as u64 {
            Err(BodyRefusal::BatchTooLarge)
        } else {
            Ok(())
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), BodyRefusal> {
        let total = self.bytes.len().saturating_add(chunk.len());
        if total > MAX_IMAGE_BYTES {
            return Err(BodyRefusal::ImageTooLarge);
        }
        if total > self.batch_left {
            return Err(BodyRefusal::BatchTooLarge);
        }
        self.bytes.extend_from_slice(chunk);
        if self.accepted.is_none() {
            match self.header.advance(&self.bytes) {
                Progress::NeedMore => {}
                Progress::Accepted(format, width, height) => {
                    self.accepted = Some((format, width, height));
                }
                Progress::Refused(refusal) => return Err(BodyRefusal::Header(refusal)),
            }
        }
        Ok(())
    }

    /// The image, once the body has ended.
    pub(crate) fn finish(self) -> Result<Image, BodyRefusal> {
        let (format, width, height) = self.accepted.ok_or(BodyRefusal::TruncatedHeader)?;
        Ok(Image::new(format, width, height, self.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_BATCH_BYTES;

    const PNG: &[u8] = image_fixture::PNG;

    #[test]
    fn a_whole_image_in_any_chunks() {
        for size in [1, 2, 7, PNG.len()] {
            let mut reader = BodyReader::new(MAX_BATCH_BYTES);
            for chunk in PNG.chunks(size) {
                reader.push(chunk).expect("within bounds");
            }
            let image = reader.finish().expect("an image");
            assert_eq!(
                (image.format(), image.width(), image.height()),
                (Format::Png, 2, 3)
            );
            assert_eq!(image.bytes(), PNG);
        }
    }

    #[test]
    fn bytes_are_counted_not_declared() {
        let mut reader = BodyReader::new(MAX_BATCH_BYTES);
        reader.push(PNG).expect("the header");
        let filler = vec![0; 64 * 1024];
        let mut sent = PNG.len();
        let refusal = loop {
            match reader.push(&filler) {
                Ok(()) => sent += filler.len(),
                Err(refusal) => break refusal,
            }
        };
        assert_eq!(refusal, BodyRefusal::ImageTooLarge);
        assert!(sent <= MAX_IMAGE_BYTES && sent + filler.len() > MAX_IMAGE_BYTES);
    }

    #[test]
    fn exactly_the_bound_is_accepted() {
        let mut reader = BodyReader::new(MAX_IMAGE_BYTES);
        reader.push(PNG).expect("the header");
        reader
            .push(&vec![0; MAX_IMAGE_BYTES - PNG.len()])
            .expect("at the bound");
        assert_eq!(reader.push(&[0]), Err(BodyRefusal::ImageTooLarge));
    }

    #[test]
    fn the_batch_budget_applies_below_the_image_bound() {
        let mut reader = BodyReader::new(100);
        assert_eq!(reader.declared(101), Err(BodyRefusal::BatchTooLarge));
        assert_eq!(
            reader.declared(MAX_IMAGE_BYTES as u64 + 1),
            Err(BodyRefusal::ImageTooLarge)
        );
        assert_eq!(reader.declared(100), Ok(()));
        reader.push(PNG).expect("the header");
        assert_eq!(reader.push(&[0; 24]), Err(BodyRefusal::BatchTooLarge));
    }

    #[test]
    fn a_body_that_ends_early_has_no_image() {
        let mut reader = BodyReader::new(MAX_BATCH_BYTES);
        reader.push(&PNG[..20]).expect("so far so good");
        assert_eq!(reader.finish(), Err(BodyRefusal::TruncatedHeader));
        assert_eq!(
            BodyReader::new(10).finish(),
            Err(BodyRefusal::TruncatedHeader)
        );
    }

    #[test]
    fn the_header_is_judged_as_soon_as_it_is_complete() {
        let mut reader = BodyReader::new(MAX_BATCH_BYTES);
        assert_eq!(
            reader.push(b"GIF89a"),
            Err(BodyRefusal::Header(Refusal::Unsupported))
        );
        let mut huge = PNG[..24].to_vec();
        huge[16..24].copy_from_slice(&[0, 0, 0x27, 0x10, 0, 0, 0x27, 0x10]);
        let mut reader = BodyReader::new(MAX_BATCH_BYTES);
        assert_eq!(
            reader.push(&huge),
            Err(BodyRefusal::Header(Refusal::TooManyPixels(10_000, 10_000)))
        );
    }
}
