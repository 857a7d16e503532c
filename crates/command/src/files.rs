//! Files a command makes for its reply, such as a generated image. A command holds a place
//! for one with its runner's `reserve_file` before making it, then fills it
//! (`FileSlot::attach`); the
//! line's [`Reply`](crate::Reply) carries every file its commands made, whatever stage made
//! it, so a platform can deliver them with the answer (an upload on chat platforms). Files
//! are not values: later stages neither see nor change them.

use std::sync::Arc;

use crate::limits::{MAX_REPLY_FILE_BYTES, MAX_REPLY_FILES};

/// One file for the reply.
#[derive(Clone, PartialEq, Eq)]
pub struct ReplyFile {
    name: String,
    media_type: &'static str,
    bytes: Arc<[u8]>,
}

impl std::fmt::Debug for ReplyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyFile")
            .field("name", &self.name)
            .field("media_type", &self.media_type)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Why a file cannot go with the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The name is empty, longer than 100 bytes, or has a character other than ASCII
    /// letters, digits, `.`, `-` and `_`, or starts with `.`.
    #[error("a reply file's name must be 1-100 ASCII letters, digits, '.', '-' or '_'")]
    BadName,
    /// The file is empty or larger than [`MAX_REPLY_FILE_BYTES`].
    #[error("a reply file must be 1 byte to 8 MiB")]
    BadSize,
    /// The reply already has [`MAX_REPLY_FILES`] files.
    #[error("a reply carries at most 4 files")]
    TooMany,
}

impl ReplyFile {
    /// The file `name` (what a platform shows and downloads it as) of `media_type`.
    ///
    /// # Errors
    ///
    /// [`FileError::BadName`] or [`FileError::BadSize`].
    pub fn new(
        name: impl Into<String>,
        media_type: &'static str,
        bytes: impl Into<Arc<[u8]>>,
    ) -> Result<Self, FileError> {
        let name = name.into();
        let name_ok = (1..=100).contains(&name.len())
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !name_ok {
            return Err(FileError::BadName);
        }
        let bytes = bytes.into();
        if bytes.is_empty() || bytes.len() > MAX_REPLY_FILE_BYTES {
            return Err(FileError::BadSize);
        }
        Ok(Self {
            name,
            media_type,
            bytes,
        })
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its media type, such as `image/png`.
    #[must_use]
    pub fn media_type(&self) -> &'static str {
        self.media_type
    }

    /// Its content.
    #[must_use]
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }
}

/// Where reply files are also published for the world to fetch (the binary's store of
/// generated images behind a public URL). A command learns the URL when it attaches the
/// file, so that its text, data or tool result can name it.
pub trait Publish: Send + Sync {
    /// Publishes `file` and returns its public URL, or `None` when it is not published
    /// (a kind of file this publisher does not serve).
    fn publish(&self, file: &ReplyFile) -> Option<String>;
}

/// The files one line's commands made, and the places reserved for files being made,
/// shared by all of the line's runs (which may run at once, under `xargs`).
#[derive(Debug, Default)]
pub(crate) struct Files(std::sync::Mutex<Shelf>);

#[derive(Debug, Default)]
struct Shelf {
    files: Vec<ReplyFile>,
    reserved: usize,
}

impl Files {
    fn shelf(&self) -> std::sync::MutexGuard<'_, Shelf> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds a place for a file about to be made, so that a command pays for nothing the
    /// reply could not carry.
    pub(crate) fn reserve(&self) -> Result<(), FileError> {
        let mut shelf = self.shelf();
        if shelf.files.len() + shelf.reserved >= MAX_REPLY_FILES {
            return Err(FileError::TooMany);
        }
        shelf.reserved += 1;
        Ok(())
    }

    /// Fills a reserved place.
    pub(crate) fn fill(&self, file: ReplyFile) {
        let mut shelf = self.shelf();
        shelf.reserved = shelf.reserved.saturating_sub(1);
        shelf.files.push(file);
    }

    /// Gives a reserved place back.
    pub(crate) fn release(&self) {
        let mut shelf = self.shelf();
        shelf.reserved = shelf.reserved.saturating_sub(1);
    }

    pub(crate) fn take(&self) -> Vec<ReplyFile> {
        std::mem::take(&mut self.shelf().files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sizes_and_count_are_bounded() {
        assert!(ReplyFile::new("gi-1a2b.png", "image/png", vec![1u8]).is_ok());
        for bad in ["", ".hidden", "a/b.png", "a b", &"x".repeat(101), "é.png"] {
            assert_eq!(
                ReplyFile::new(bad, "image/png", vec![1u8]),
                Err(FileError::BadName),
                "{bad:?}"
            );
        }
        assert_eq!(
            ReplyFile::new("a.png", "image/png", Vec::<u8>::new()),
            Err(FileError::BadSize)
        );
        assert_eq!(
            ReplyFile::new("a.png", "image/png", vec![0u8; MAX_REPLY_FILE_BYTES + 1]),
            Err(FileError::BadSize)
        );
        let files = Files::default();
        let file = ReplyFile::new("a.png", "image/png", vec![1u8]).unwrap();
        // Places are held before files are made: a held place counts, a released one not.
        for _ in 0..MAX_REPLY_FILES {
            assert_eq!(files.reserve(), Ok(()));
        }
        assert_eq!(files.reserve(), Err(FileError::TooMany));
        files.release();
        assert_eq!(files.reserve(), Ok(()));
        for _ in 0..MAX_REPLY_FILES {
            files.fill(file.clone());
        }
        assert_eq!(files.reserve(), Err(FileError::TooMany));
        assert_eq!(files.take().len(), MAX_REPLY_FILES);
        assert!(files.take().is_empty());
        assert_eq!(files.reserve(), Ok(()));
    }
}
