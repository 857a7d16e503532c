//! Resolves a provider's credential at the last moment, inside the request that needs it.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use yetibot_redaction::Secret;

use crate::capability::{AuthKind, is_placeholder_key};
use crate::config::{Credential, Provider, is_header_token};
use crate::error::{Error, Result};

/// The largest accepted key file, in bytes.
pub const MAX_KEY_FILE_BYTES: u64 = 8192;

/// How long reading a key file may take before the credential counts as unavailable.
pub const KEY_FILE_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// What the request is for: listing may go without auth when the key is a placeholder,
/// prompts may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    Listing,
    Prompt,
}

/// The bearer token for one request, or `None` for no `Authorization` header.
///
/// A key file is opened here and nowhere else. It must be an absolute path to a regular file
/// (symlinks are followed) of at most [`MAX_KEY_FILE_BYTES`] bytes that neither its group
/// nor others may write, read within [`KEY_FILE_READ_TIMEOUT`], whose trimmed content is a
/// nonblank, printable ASCII token without whitespace. Any failure is [`Error::CredentialUnavailable`], which
/// names only the provider.
pub(crate) async fn bearer(provider: &Provider, purpose: Purpose) -> Result<Option<Secret>> {
    let placeholder = || Error::Setup {
        provider: provider.name().to_owned(),
        reason: "the API key is a setup placeholder; configure a real :key or :key-file",
    };
    match (provider.capabilities().auth, purpose) {
        (AuthKind::Placeholder, Purpose::Listing) => return Ok(None),
        (AuthKind::Placeholder, Purpose::Prompt) => return Err(placeholder()),
        _ => {}
    }
    match provider.credential() {
        Credential::None => Ok(None),
        Credential::Inline(key) => Ok(Some(key.clone())),
        Credential::KeyFile(path) => {
            let unavailable = || Error::CredentialUnavailable {
                provider: provider.name().to_owned(),
            };
            let token = read_key_file(path).await.ok_or_else(unavailable)?;
            if is_placeholder_key(token.expose()) {
                return match purpose {
                    Purpose::Listing => Ok(None),
                    Purpose::Prompt => Err(placeholder()),
                };
            }
            Ok(Some(token))
        }
    }
}

/// The token in the key file at `path`, read now, under the rules every `:key-file` follows:
/// an absolute path to a regular file of at most [`MAX_KEY_FILE_BYTES`] that neither its
/// group nor others may write, read within [`KEY_FILE_READ_TIMEOUT`], holding one nonblank,
/// printable ASCII token. `None` when it cannot be used (the reason is never told, so no
/// caller can echo the path or the content).
pub async fn read_key_file(path: &Path) -> Option<Secret> {
    if !path.is_absolute() {
        return None;
    }
    // Checked before opening: opening a FIFO waits for a writer and a device can be read
    // forever. The check follows symlinks, which mounted secrets use.
    let meta = tokio::fs::metadata(path).await.ok()?;
    if !usable(&meta) {
        return None;
    }
    let read = async {
        let file = open_without_blocking(path).await.ok()?;
        // The file opened may not be the file checked: check what was opened.
        let meta = file.metadata().await.ok()?;
        if !usable(&meta) {
            return None;
        }
        // Read one byte past the bound so a file that grew after the check is still refused.
        let mut bytes = Vec::new();
        file.take(MAX_KEY_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .await
            .ok()?;
        (bytes.len() as u64 <= MAX_KEY_FILE_BYTES).then_some(bytes)
    };
    let bytes = tokio::time::timeout(KEY_FILE_READ_TIMEOUT, read)
        .await
        .ok()??;
    let text = String::from_utf8(bytes).ok()?;
    let token = text.trim();
    is_header_token(token).then(|| Secret::new(token))
}

/// A key file must be a regular file within the size bound that only its owner can change:
/// a file others may write lets them choose the credential, and with it where our requests
/// are accepted.
fn usable(meta: &std::fs::Metadata) -> bool {
    meta.is_file() && meta.len() <= MAX_KEY_FILE_BYTES && !writable_by_others(meta)
}

#[cfg(unix)]
fn writable_by_others(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o022 != 0
}

#[cfg(not(unix))]
fn writable_by_others(_: &std::fs::Metadata) -> bool {
    false
}

/// Opens for reading without ever waiting on the open itself: should the path have been
/// swapped for a FIFO since the check, the open returns at once instead of waiting for a
/// writer (and the check of the opened file then refuses it).
async fn open_without_blocking(path: &Path) -> std::io::Result<tokio::fs::File> {
    let mut options = tokio::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    options.custom_flags(libc::O_NONBLOCK);
    options.open(path).await
}
