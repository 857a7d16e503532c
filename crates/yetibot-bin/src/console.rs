//! The web console's wiring in the binary: the access token kept in a file across restarts
//! (the library only takes the token; files are the binary's to read), the link that
//! `yetibot console-url` prints, and a room's earlier conversation from the history store.
//!
//! The token file holds the token alone. It is created with mode 0600 (its folder 0700 when
//! the folder is new) the first time the console starts, and reused after that, so that a
//! restart keeps every open tab and bookmarked link working. `yetibot console-url --rotate`
//! replaces it (a running bot keeps the old token until it restarts). Errors name the
//! setting (`:yetibot :web :token-file`), never the file's path or contents.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use yetibot_chat_adapters::web::{AccessToken, Transcript};
use yetibot_chat_adapters::{HistoryError, HistoryMessage};
use yetibot_history::{HistoryFilter, HistoryOrder, HistoryQuery, HistoryScope, HistoryStore};

/// The largest token file read (a token is at most 256 characters).
const MAX_TOKEN_FILE_BYTES: u64 = 1024;

/// Why the console's token could not be read or kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenFileError {
    /// The file (or a folder on its way) could not be read, made or written.
    #[error("the console's token file (:yetibot :web :token-file) cannot be {0}")]
    Io(&'static str),
    /// Other users may read it.
    #[error(
        "the console's token file (:yetibot :web :token-file) can be read by other users; \
         make it private (chmod 600) or delete it for a new token"
    )]
    Exposed,
    /// It does not hold a token.
    #[error(
        "the console's token file (:yetibot :web :token-file) does not hold a valid token; \
         delete it for a new one"
    )]
    Invalid,
    /// No random token could be made.
    #[error("no access token could be made: the operating system's random source is unavailable")]
    NoRandomness,
}

/// The token kept in `path`, made and kept there when there is none yet.
///
/// # Errors
///
/// [`TokenFileError`] when the file cannot be read or written, is readable by other users,
/// or does not hold a valid token.
pub fn token(path: &Path) -> Result<AccessToken, TokenFileError> {
    if let Some(kept) = read(path)? {
        return Ok(kept);
    }
    let token = AccessToken::generate().map_err(|_| TokenFileError::NoRandomness)?;
    // Written whole beside it, then linked into place: the file is never seen half
    // written, and of two starts at once, one links and the other reads the winner's.
    let fresh = write_beside(path, &token)?;
    let linked = std::fs::hard_link(&fresh, path);
    let _ = std::fs::remove_file(&fresh);
    match linked {
        Ok(()) => Ok(token),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            read(path)?.ok_or(TokenFileError::Io("read"))
        }
        Err(_) => Err(TokenFileError::Io("created")),
    }
}

/// Replaces the token in `path` with a new one, which is returned.
///
/// # Errors
///
/// [`TokenFileError`] when it cannot be written.
pub fn rotate(path: &Path) -> Result<AccessToken, TokenFileError> {
    let token = AccessToken::generate().map_err(|_| TokenFileError::NoRandomness)?;
    let fresh = write_beside(path, &token)?;
    std::fs::rename(&fresh, path).map_err(|_| {
        let _ = std::fs::remove_file(&fresh);
        TokenFileError::Io("replaced")
    })?;
    Ok(token)
}

/// The link that opens the console at `addr` with `token`.
#[must_use]
pub fn url(addr: std::net::SocketAddr, token: &AccessToken) -> String {
    format!("http://{addr}/?token={}", token.expose())
}

/// The kept token, or `None` when there is no file yet.
fn read(path: &Path) -> Result<Option<AccessToken>, TokenFileError> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(TokenFileError::Io("read")),
    };
    if !metadata.is_file() || metadata.len() > MAX_TOKEN_FILE_BYTES {
        return Err(TokenFileError::Invalid);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if metadata.permissions().mode() & 0o077 != 0 {
            return Err(TokenFileError::Exposed);
        }
    }
    let text = std::fs::read_to_string(path).map_err(|_| TokenFileError::Invalid)?;
    AccessToken::new(text.trim())
        .map(Some)
        .map_err(|_| TokenFileError::Invalid)
}

/// Writes `token` to a new file of its own next to `path` (its folder made private when it
/// is new), private from its first byte; returns that file's path.
fn write_beside(path: &Path, token: &AccessToken) -> Result<std::path::PathBuf, TokenFileError> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !folder.exists()
    {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(folder)
            .map_err(|_| TokenFileError::Io("created"))?;
    }
    let unique = AccessToken::generate().map_err(|_| TokenFileError::NoRandomness)?;
    let fresh = path.with_extension(format!("new-{}", &unique.expose()[..16]));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&fresh)
        .map_err(|_| TokenFileError::Io("created"))?;
    let written = writeln!(file, "{}", token.expose()).and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = std::fs::remove_file(&fresh);
        return Err(TokenFileError::Io("written"));
    }
    Ok(fresh)
}

/// A console room's earlier conversation, read from the history store (the console's rows
/// are kept under the adapter key `:web`).
pub struct HistoryTranscript {
    store: Arc<dyn HistoryStore>,
    connection: String,
}

impl std::fmt::Debug for HistoryTranscript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryTranscript")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl HistoryTranscript {
    /// Reads the rows of the console connection named `connection` from `store`.
    #[must_use]
    pub fn new(store: Arc<dyn HistoryStore>, connection: &str) -> Self {
        Self {
            store,
            connection: connection.to_owned(),
        }
    }
}

impl Transcript for HistoryTranscript {
    fn recent<'a>(
        &'a self,
        room: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
        Box::pin(async move {
            let scope = HistoryScope::new(&self.connection, room);
            let query = HistoryQuery {
                filter: HistoryFilter::default(),
                before_id: None,
                order: HistoryOrder::NewestFirst,
                offset: 0,
                limit: u32::try_from(limit).unwrap_or(u32::MAX),
            };
            let rows = self
                .store
                .rows(&scope, &query)
                .await
                .map_err(|_| HistoryError::Unavailable("the history store cannot be read"))?;
            Ok(rows
                .into_iter()
                .rev()
                .map(|row| HistoryMessage {
                    author: row.user_name,
                    text: row.body,
                    from_bot: row.is_yetibot,
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("yetibot-token-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_token_is_made_once_privately_and_kept() {
        let dir = scratch("kept");
        let path = dir.join("data").join("console-token");
        let first = token(&path).expect("made");
        let again = token(&path).expect("read");
        assert_eq!(first, again);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("file").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let folder = std::fs::metadata(path.parent().expect("folder"))
                .expect("folder")
                .permissions()
                .mode();
            assert_eq!(folder & 0o077, 0);
        }
        let rotated = rotate(&path).expect("rotated");
        assert_ne!(rotated, first);
        assert_eq!(token(&path).expect("read"), rotated);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn racing_starts_agree_on_one_token() {
        let dir = scratch("race");
        let path = dir.join("console-token");
        let tokens: Vec<AccessToken> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8).map(|_| scope.spawn(|| token(&path))).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic").expect("a token"))
                .collect()
        });
        assert!(tokens.windows(2).all(|pair| pair[0] == pair[1]));
        // A folder where the file should be is refused, not read.
        let folder = dir.join("a-folder");
        std::fs::create_dir_all(&folder).expect("dir");
        assert_eq!(token(&folder), Err(TokenFileError::Invalid));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_bad_or_exposed_file_is_refused_without_its_path_or_contents() {
        let dir = scratch("bad");
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("console-token");
        std::fs::write(&path, "not a token at all").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let error = token(&path).expect_err("invalid");
        assert_eq!(error, TokenFileError::Invalid);
        let shown = error.to_string();
        assert!(!shown.contains("not a token") && !shown.contains(&dir.display().to_string()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::write(&path, format!("{}\n", "a".repeat(64))).expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
            assert_eq!(token(&path), Err(TokenFileError::Exposed));
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
