//! The adapter reply: the serialized success or failure object a call answers with.

use std::fmt;

use crate::error::Error;
use crate::writer::write_str;

/// What a call answers, already serialized and bounded to 12,288 bytes.
///
/// - Success: `{"structuredContent":{"untrusted":true,"result":<value>}}`.
/// - Failure: `{"isError":true,"error":{"category":<category>,"message":<sentence>}}`,
///   where both strings are fixed texts chosen by the [`Error`] kind and never contain any
///   part of the call.
///
/// `Debug` shows only whether the reply is an error, the error kind and the length, so a
/// reply cannot leak its result into a log by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Reply {
    json: String,
    error: Option<Error>,
}

impl Reply {
    /// The failure reply for `error`.
    #[must_use]
    pub fn failure(error: Error) -> Self {
        let mut json = String::from(r#"{"isError":true,"error":{"category":"#);
        write_str(&mut json, error.category().as_str());
        json.push_str(r#","message":"#);
        write_str(&mut json, error.message());
        json.push_str("}}");
        Self {
            json,
            error: Some(error),
        }
    }

    /// A success reply whose JSON has been built and bounded by the caller.
    pub(crate) fn success(json: String) -> Self {
        Self { json, error: None }
    }

    /// Whether this is a failure reply.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// Why the call failed, for a failure reply.
    #[must_use]
    pub fn error(&self) -> Option<Error> {
        self.error
    }

    /// The serialized reply.
    #[must_use]
    pub fn as_json(&self) -> &str {
        &self.json
    }

    /// The serialized reply, by value.
    #[must_use]
    pub fn into_json(self) -> String {
        self.json
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("error", &self.error)
            .field("bytes", &self.json.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds the failure reply for `error` and compares its JSON with `expected`.
    fn check(error: Error, expected: &str) {
        let reply = Reply::failure(error);
        assert_eq!(reply.as_json(), expected);
        assert!(reply.is_error());
        assert_eq!(reply.error(), Some(error));
        let parsed: serde_json::Value = serde_json::from_str(reply.as_json()).unwrap();
        assert_eq!(parsed["isError"], true);
    }

    #[test]
    fn failures_carry_only_fixed_text() {
        check(
            Error::DuplicateKey,
            r#"{"isError":true,"error":{"category":"invalid_json","message":"input_json repeats an object key"}}"#,
        );
        check(
            Error::SecretInInput,
            r#"{"isError":true,"error":{"category":"credential","message":"the arguments contain a configured credential"}}"#,
        );
    }

    #[test]
    fn debug_hides_the_payload() {
        let reply = Reply::success(
            r#"{"structuredContent":{"untrusted":true,"result":"private"}}"#.to_owned(),
        );
        let shown = format!("{reply:?}");
        assert!(!shown.contains("private"), "{shown}");
        assert!(!reply.is_error());
    }
}
