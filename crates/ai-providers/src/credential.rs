//! Resolves a provider's credential at the last moment, inside the request that needs it.

use std::path::Path;

use tokio::io::AsyncReadExt;
use yetibot_redaction::Secret;

use crate::capability::{AuthKind, is_placeholder_key};
use crate::config::{Credential, Provider, is_header_token};
use crate::error::{Error, Result};

/// The largest accepted key file, in bytes.
pub const MAX_KEY_FILE_BYTES: u64 = 8192;

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
/// of at most [`MAX_KEY_FILE_BYTES`] bytes whose trimmed content is a nonblank, printable
/// ASCII token without whitespace. Any failure is [`Error::CredentialUnavailable`], which
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

async fn read_key_file(path: &Path) -> Option<Secret> {
    if !path.is_absolute() {
        return None;
    }
    let file = tokio::fs::File::open(path).await.ok()?;
    let meta = file.metadata().await.ok()?;
    if !meta.is_file() || meta.len() > MAX_KEY_FILE_BYTES {
        return None;
    }
    // Read one byte past the bound so a file that grew after the check is still refused.
    let mut bytes = Vec::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .ok()?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    let token = text.trim();
    is_header_token(token).then(|| Secret::new(token))
}
