//! The `Secret` credential wrapper and the marker that stands in for every redacted value.

use std::fmt;

use serde::Deserialize;

/// The text that replaces every secret, in logs, chat replies and tool output alike.
pub const REDACTED: &str = "[redacted]";

/// A credential, held in this type from the moment configuration is loaded until the moment
/// it is sent to the service that needs it.
///
/// `Debug` and `Display` both print [`REDACTED`], so a secret that ends up in a log line or
/// in a `{:?}` of its enclosing config struct gives nothing away. The value is reachable
/// only through [`Secret::expose`], which makes every use easy to find in review.
///
/// The type deliberately implements `Deserialize` but not `Serialize`: configuration can be
/// read into it, but it cannot be written back out by accident.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Returns the credential itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    #[allow(dead_code, reason = "the fields exist only to be printed by Debug")]
    struct ProviderConfig {
        name: &'static str,
        api_key: Secret,
    }

    #[test]
    fn debug_and_display_print_only_the_marker() {
        let secret = Secret::new("sk-test-0123456789");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(format!("{secret:#?}"), "[redacted]");
        assert_eq!(format!("{secret}"), "[redacted]");
        assert_eq!(secret.to_string(), "[redacted]");
    }

    #[test]
    fn debug_of_an_enclosing_struct_hides_the_value() {
        let config = ProviderConfig {
            name: "openai",
            api_key: Secret::new("sk-test-0123456789"),
        };
        let printed = format!("{config:?}");
        assert_eq!(
            printed,
            r#"ProviderConfig { name: "openai", api_key: [redacted] }"#
        );
        assert!(!format!("{config:#?}").contains("sk-test"));
    }

    #[test]
    fn expose_returns_the_value() {
        assert_eq!(Secret::new("abc").expose(), "abc");
        assert_eq!(Secret::from("abc".to_owned()), Secret::from("abc"));
    }

    #[test]
    fn deserializes_from_a_json_string() {
        let secret: Secret = serde_json::from_str(r#""tok\u0065n-123""#).unwrap();
        assert_eq!(secret.expose(), "token-123");
        assert!(serde_json::from_str::<Secret>("42").is_err());
    }
}
