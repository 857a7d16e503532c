//! The credential rules: configured secrets and credential-like field names are rejected in
//! every input, and redacted from every result before it is bounded and serialized.

use std::borrow::Cow;

use yetibot_redaction::{REDACTED, Secrets};

use crate::error::{Error, Result};
use crate::operators::{Options, Segment};
use crate::value::{Object, Value};

/// The credential-like field names this tool refuses in input and masks in output,
/// compared ignoring ASCII case. This is the tool's own, deliberately short list, the one
/// its specification states: the redaction crate's wider list of sensitive names (cookies,
/// OAuth tokens, cloud keys) serves logs and transcripts, where masking too much costs
/// nothing, whereas refusing a field here refuses the user's data.
pub const CREDENTIAL_FIELD_NAMES: &[&str] = &[
    "authorization",
    "password",
    "token",
    "secret",
    "key",
    "api-key",
    "api_key",
    "apikey",
    "key-file",
    "key_file",
    "keyfile",
    "account-id",
    "account_id",
    "accountid",
];

/// Whether `name` is one of [`CREDENTIAL_FIELD_NAMES`], ignoring ASCII case.
#[must_use]
pub fn is_credential_field(name: &str) -> bool {
    CREDENTIAL_FIELD_NAMES
        .iter()
        .any(|field| field.eq_ignore_ascii_case(name))
}

/// Rejects secrets in the optional fields and credential-like names in a `get` path.
///
/// A path segment naming a sensitive field could only ever reach a value that the input
/// check rejects, so refusing it loses nothing and keeps the rule simple: no call may name
/// a credential-like field anywhere.
pub(crate) fn check_options(options: &Options, secrets: &Secrets) -> Result<()> {
    for text in [&options.separator, &options.query].into_iter().flatten() {
        if secrets.contains_secret(text) {
            return Err(Error::SecretInInput);
        }
    }
    if let Some(count) = options.count
        && secrets.contains_secret(&count.to_string())
    {
        return Err(Error::SecretInInput);
    }
    for segment in options.path.iter().flatten() {
        match segment {
            Segment::Key(key) => {
                if is_credential_field(key) {
                    return Err(Error::SensitiveField);
                }
                if secrets.contains_secret(key) {
                    return Err(Error::SecretInInput);
                }
            }
            Segment::Index(index) => {
                if secrets.contains_secret(&index.to_string()) {
                    return Err(Error::SecretInInput);
                }
            }
        }
    }
    Ok(())
}

/// Rejects a value holding a secret in any string, key or serialized scalar, or a
/// credential-like object key anywhere.
pub(crate) fn check_value(value: &Value, secrets: &Secrets) -> Result<()> {
    match value {
        Value::String(text) => {
            if secrets.contains_secret(text) {
                return Err(Error::SecretInInput);
            }
        }
        Value::Array(items) => {
            for item in items {
                check_value(item, secrets)?;
            }
        }
        Value::Object(object) => {
            for (key, item) in object.iter() {
                if is_credential_field(key) {
                    return Err(Error::SensitiveField);
                }
                if secrets.contains_secret(key) {
                    return Err(Error::SecretInInput);
                }
                check_value(item, secrets)?;
            }
        }
        Value::Null | Value::Bool(_) | Value::Integer(_) | Value::Decimal(_) => {
            if !secrets.is_empty() && secrets.contains_secret(&value.to_json()) {
                return Err(Error::SecretInInput);
            }
        }
    }
    Ok(())
}

/// Replaces what a result must not show:
///
/// - secrets inside strings and object keys, which an operator can rebuild from harmless
///   pieces (`join`, `unletters`), become [`REDACTED`] in place;
/// - a non-string scalar whose serialized form contains a secret (a `sum` can add up to a
///   numeric credential) becomes the string [`REDACTED`];
/// - the value of a credential-like field becomes [`REDACTED`], even though inputs with
///   such fields are rejected, as a second line of defence.
///
/// Keys that become equal after redaction get a ` (2)`, ` (3)`, … suffix so the object
/// keeps distinct keys and no member is lost.
pub(crate) fn redact(value: &mut Value, secrets: &Secrets) {
    match value {
        Value::String(text) => {
            if let Cow::Owned(clean) = secrets.redact_text(text) {
                *text = clean;
            }
        }
        Value::Array(items) => {
            for item in items {
                redact(item, secrets);
            }
        }
        Value::Object(object) => {
            let entries = std::mem::take(object).into_entries();
            let mut renamed = false;
            let mut clean: Vec<(String, Value)> = Vec::with_capacity(entries.len());
            for (key, mut item) in entries {
                if is_credential_field(&key) {
                    item = Value::String(REDACTED.to_owned());
                } else {
                    redact(&mut item, secrets);
                }
                let key = match secrets.redact_text(&key) {
                    Cow::Borrowed(_) => key,
                    Cow::Owned(redacted) => {
                        renamed = true;
                        redacted
                    }
                };
                clean.push((key, item));
            }
            if renamed {
                // A redacted key can collide with another redacted key or with an untouched
                // one, so every key is made distinct again, in order.
                let mut distinct: Vec<(String, Value)> = Vec::with_capacity(clean.len());
                for (key, item) in clean {
                    let key = distinct_key(&distinct, key);
                    distinct.push((key, item));
                }
                clean = distinct;
            }
            *object = Object::from_distinct(clean);
        }
        Value::Null | Value::Bool(_) | Value::Integer(_) | Value::Decimal(_) => {
            if !secrets.is_empty() && secrets.contains_secret(&value.to_json()) {
                *value = Value::String(REDACTED.to_owned());
            }
        }
    }
}

/// `key`, or `key (n)` with the smallest `n` from 2 that no earlier entry uses.
fn distinct_key(entries: &[(String, Value)], key: String) -> String {
    let taken = |candidate: &str| entries.iter().any(|(k, _)| k == candidate);
    if !taken(&key) {
        return key;
    }
    (2..)
        .map(|n| format!("{key} ({n})"))
        .find(|candidate| !taken(candidate))
        .unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "sk-0123456789";

    fn secrets() -> Secrets {
        Secrets::new([SECRET, "424242424242"]).unwrap()
    }

    /// Checks the input JSON `input` and compares with `expected`.
    fn check(input: &str, expected: Result<()>) {
        let value = Value::parse(input).unwrap();
        assert_eq!(check_value(&value, &secrets()), expected, "input: {input}");
    }

    /// Redacts the JSON `input` and compares the result's JSON with `expected`.
    fn check_redact(input: &str, expected: &str) {
        let mut value = Value::parse(input).unwrap();
        redact(&mut value, &secrets());
        assert_eq!(value.to_json(), expected, "input: {input}");
    }

    #[test]
    fn inputs_with_secrets_or_sensitive_names_are_rejected() {
        check(r#"["harmless", {"a": 1}]"#, Ok(()));
        check(r#"["x sk-0123456789 y"]"#, Err(Error::SecretInInput));
        check(r#"{"sk-0123456789": 1}"#, Err(Error::SecretInInput));
        check(
            r#"["sk-\u00301234\u0035\u0036789"]"#,
            Err(Error::SecretInInput),
        );
        check(
            r#"["{\"k\":\"sk-\\u0030123456789\"}"]"#,
            Err(Error::SecretInInput),
        );
        check("[424242424242]", Err(Error::SecretInInput));
        check("[4242424242420.5]", Err(Error::SecretInInput));
        check(
            r#"[{"nested": {"Password": 1}}]"#,
            Err(Error::SensitiveField),
        );
        check(r#"{"API_KEY": null}"#, Err(Error::SensitiveField));
        check(r#"{"tokens": 1, "keys": 2, "secret_id": 3}"#, Ok(()));
    }

    #[test]
    fn outputs_are_redacted() {
        check_redact(r#"["sk-0123456789", "ok"]"#, r#"["[redacted]","ok"]"#);
        check_redact("[424242424242, 4242]", r#"["[redacted]",4242]"#);
        check_redact(
            r#"{"token": [1], "other": "x"}"#,
            r#"{"token":"[redacted]","other":"x"}"#,
        );
        check_redact(
            r#"{"sk-0123456789": 1, "[redacted]": 2}"#,
            r#"{"[redacted]":1,"[redacted] (2)":2}"#,
        );
        check_redact("[true, null, 1.5]", "[true,null,1.5]");
    }

    #[test]
    fn options_are_checked() {
        let mut options = Options {
            separator: Some(format!("-{SECRET}-")),
            ..Options::default()
        };
        assert_eq!(
            check_options(&options, &secrets()),
            Err(Error::SecretInInput)
        );
        options.separator = None;
        options.path = Some(vec![Segment::Key("Token".to_owned())]);
        assert_eq!(
            check_options(&options, &secrets()),
            Err(Error::SensitiveField)
        );
        options.path = Some(vec![Segment::Key("tokens".to_owned()), Segment::Index(3)]);
        assert_eq!(check_options(&options, &secrets()), Ok(()));
    }
}
