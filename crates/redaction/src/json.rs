//! Redaction of JSON values: secrets in strings, keys and numbers, and the whole value of
//! fields whose name marks them as sensitive.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::secret::REDACTED;
use crate::secrets::Secrets;

/// Field names whose values are always replaced by [`REDACTED`].
///
/// Names are compared by [`is_sensitive_field`], which ignores ASCII case and the separators
/// `-` and `_`, so one entry covers `api_key`, `api-key`, `apiKey` and `API_KEY`. The crate
/// README lists where each entry comes from.
pub const SENSITIVE_FIELDS: &[&str] = &[
    // Generic names for a credential.
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "key",
    "api_key",
    "secret_key",
    "private_key",
    "credentials",
    // HTTP authentication and session headers.
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "x-goog-api-key",
    "x-auth-token",
    "x-amz-security-token",
    "x-vault-token",
    "private-token",
    "ocp-apim-subscription-key",
    // OAuth 2 and OpenID Connect.
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "client_assertion",
    // Cloud credential files and responses.
    "aws_secret_access_key",
    "secret_access_key",
    "aws_session_token",
    "session_token",
    // Chat platforms.
    "bot_token",
    "signing_secret",
    // Yetibot's own configuration keys.
    "key-file",
    "account-id",
];

/// Whether a field with this name holds a credential, whatever its value.
///
/// The name matches an entry of [`SENSITIVE_FIELDS`] when both are equal after ASCII letters
/// are lower-cased and the separators `-` and `_` are dropped: `X-Api-Key`, `x_api_key` and
/// `xApiKey` are all sensitive. The comparison is otherwise exact, not a substring test:
/// `Token` is sensitive, `tokens_used` is not.
pub fn is_sensitive_field(name: &str) -> bool {
    SENSITIVE_FIELDS
        .iter()
        .any(|field| normalized(field).eq(normalized(name)))
}

/// The bytes of a field name as [`is_sensitive_field`] compares them.
fn normalized(name: &str) -> impl Iterator<Item = u8> + '_ {
    name.bytes()
        .filter(|&b| b != b'-' && b != b'_')
        .map(|b| b.to_ascii_lowercase())
}

impl Secrets {
    /// A copy of `value` with secrets removed; see [`Secrets::redact_json_in_place`].
    pub fn redact_json(&self, value: &Value) -> Value {
        let mut copy = value.clone();
        self.redact_json_in_place(&mut copy);
        copy
    }

    /// Removes secrets from `value`:
    ///
    /// - strings and object keys go through [`Secrets::redact_text`];
    /// - a number whose written form contains a secret becomes the string [`REDACTED`];
    /// - the whole value of a [sensitive field](is_sensitive_field) becomes the string
    ///   [`REDACTED`], even when this set is empty.
    ///
    /// When two keys become equal after redaction, the later one gets the suffix ` (2)`,
    /// ` (3)` and so on, so no field is lost.
    pub fn redact_json_in_place(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact_text(text) {
                    *text = redacted;
                }
            }
            Value::Number(number) => {
                if self.contains_secret(&number.to_string()) {
                    *value = Value::String(REDACTED.to_owned());
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.redact_json_in_place(item);
                }
            }
            Value::Object(fields) => {
                for (name, mut field) in std::mem::take(fields) {
                    if is_sensitive_field(&name) {
                        field = Value::String(REDACTED.to_owned());
                    } else {
                        self.redact_json_in_place(&mut field);
                    }
                    let name = unique_name(fields, self.redact_text(&name).into_owned());
                    fields.insert(name, field);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }
}

/// `name`, or `name (n)` with the smallest `n` from 2 that is not taken yet.
fn unique_name(fields: &Map<String, Value>, name: String) -> String {
    if !fields.contains_key(&name) {
        return name;
    }
    let mut n = 2_u64;
    loop {
        let candidate = format!("{name} ({n})");
        if !fields.contains_key(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Redacts `input` with a set built from `secrets` and compares with `expected`.
    fn check(secrets: &[&str], input: Value, expected: Value) {
        let set = Secrets::new(secrets).unwrap();
        assert_eq!(set.redact_json(&input), expected, "input: {input}");
        let mut in_place = input;
        set.redact_json_in_place(&mut in_place);
        assert_eq!(in_place, expected);
    }

    #[test]
    fn strings_anywhere() {
        check(
            &["sk-0123456789"],
            json!({"a": ["x sk-0123456789 y", {"b": "sk-0123456789"}], "c": true, "d": null}),
            json!({"a": ["x [redacted] y", {"b": "[redacted]"}], "c": true, "d": null}),
        );
    }

    #[test]
    fn json_text_inside_strings() {
        check(
            &["sk-0123456789"],
            json!({"text": r#"{"k":"sk-\u0030123456789"}"#}),
            json!({"text": r#"{"k":"[redacted]"}"#}),
        );
    }

    #[test]
    fn keys() {
        check(
            &["sk-0123456789"],
            json!({"sk-0123456789": 1, "other": 2}),
            json!({"[redacted]": 1, "other": 2}),
        );
    }

    #[test]
    fn colliding_keys_are_kept() {
        check(
            &["sk-0123456789", "tok-0123456789"],
            // Listed in sorted order so the outcome is the same whether or not serde_json
            // keeps insertion order.
            json!({"[redacted] (2)": 3, "sk-0123456789": 1, "tok-0123456789": 2}),
            json!({"[redacted] (2)": 3, "[redacted]": 1, "[redacted] (3)": 2}),
        );
    }

    #[test]
    fn numbers() {
        check(
            &["1234567890"],
            json!({"n": 1234567890123_u64, "m": 42, "f": 0.12345678901}),
            json!({"n": "[redacted]", "m": 42, "f": "[redacted]"}),
        );
    }

    #[test]
    fn sensitive_fields_even_without_secrets() {
        check(
            &[],
            json!({"Authorization": "Bearer x", "API_KEY": {"nested": 1}, "password": null,
                   "tokens_used": 12, "keys": ["a"], "AccountId": 7}),
            json!({"Authorization": "[redacted]", "API_KEY": "[redacted]", "password": "[redacted]",
                   "tokens_used": 12, "keys": ["a"], "AccountId": "[redacted]"}),
        );
    }

    #[test]
    fn sensitive_names() {
        for name in SENSITIVE_FIELDS {
            assert!(is_sensitive_field(name));
            assert!(is_sensitive_field(&name.to_ascii_uppercase()));
            assert!(is_sensitive_field(&name.replace('-', "_")));
            assert!(is_sensitive_field(&name.replace('_', "-")));
        }
        for name in [
            "",
            "tokens",
            "my_token",
            "keys",
            "api key",
            "secret_id",
            "passwords",
            "tokens_used",
            "cookies_enabled",
            "key_id",
            "access_token_expires_in",
        ] {
            assert!(!is_sensitive_field(name), "{name}");
        }
    }

    #[test]
    fn sensitive_field_list_misses_common_api_names() {
        // Names that real APIs use for credentials: OAuth 2 token responses, HTTP headers,
        // cloud credential files, in the spellings they appear in.
        for name in [
            "x-api-key",
            "X-API-Key",
            "client_secret",
            "clientSecret",
            "access_token",
            "accessToken",
            "refresh_token",
            "id_token",
            "Proxy-Authorization",
            "Cookie",
            "Set-Cookie",
            "api-key",
            "x-goog-api-key",
            "X-Auth-Token",
            "aws_secret_access_key",
            "SecretAccessKey",
            "SessionToken",
            "private_key",
            "privateKey",
            "passwd",
            "apikey",
            "ApiKey",
            "key_file",
            "keyfile",
            "account_id",
            "AccountId",
        ] {
            assert!(is_sensitive_field(name), "{name}");
        }
    }

    #[test]
    fn scalars_at_the_top() {
        check(
            &["sk-0123456789"],
            json!("sk-0123456789"),
            json!("[redacted]"),
        );
        check(&["sk-0123456789"], json!(3), json!(3));
    }
}
