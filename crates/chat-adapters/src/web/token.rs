//! The console's access token: 256 random bits from the operating system, compared in
//! constant time, never printed by `Debug`.

use std::fmt;

/// The secret that opens the console. Its `Debug` is `[redacted]`; the value comes out only
/// through [`AccessToken::expose`], for the URL printed once at start.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken(String);

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessToken([redacted])")
    }
}

/// Why no token could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The operating system's random source failed.
    #[error("the operating system's random source is unavailable")]
    NoRandomness,
    /// A given token is too short or has characters other than `[A-Za-z0-9_-]`.
    #[error("an access token must be 32 to 256 characters of A-Z, a-z, 0-9, - or _")]
    Invalid,
}

impl AccessToken {
    /// A new token: 32 random bytes as 64 hexadecimal characters.
    ///
    /// # Errors
    ///
    /// [`TokenError::NoRandomness`] when the operating system has no random source.
    pub fn generate() -> Result<Self, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|_| TokenError::NoRandomness)?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A token chosen by the caller (tests, or an operator who pins it).
    ///
    /// # Errors
    ///
    /// [`TokenError::Invalid`] unless it is 32 to 256 characters of `[A-Za-z0-9_-]`.
    pub fn new(token: &str) -> Result<Self, TokenError> {
        let valid = (32..=256).contains(&token.len())
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if valid {
            Ok(Self(token.to_owned()))
        } else {
            Err(TokenError::Invalid)
        }
    }

    /// The token's text.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` is the token, in time that depends only on the lengths.
    #[must_use]
    pub fn matches(&self, candidate: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), candidate.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// Eight random hexadecimal characters that tell this process's message IDs apart from
    /// an earlier run's (history is recorded once per message ID).
    pub(crate) fn nonce() -> Result<String, TokenError> {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).map_err(|_| TokenError::NoRandomness)?;
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_hidden_and_compared_exactly() {
        let a = AccessToken::generate().expect("token");
        let b = AccessToken::generate().expect("token");
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 64);
        assert_eq!(format!("{a:?}"), "AccessToken([redacted])");
        assert!(a.matches(a.expose()));
        assert!(!a.matches(b.expose()));
        assert!(!a.matches(&a.expose()[..63]));
        assert!(!a.matches(""));
        assert!(AccessToken::new("short").is_err());
        assert!(AccessToken::new(&"x".repeat(31)).is_err());
        assert!(AccessToken::new(&format!("{}!", "x".repeat(40))).is_err());
        assert!(AccessToken::new(&"x".repeat(32)).is_ok());
        assert_eq!(AccessToken::nonce().expect("nonce").len(), 8);
    }
}
