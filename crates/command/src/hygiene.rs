//! What every reply goes through before anyone sees it, whichever command produced it:
//! bidirectional embedding, override and isolate controls are removed (so `!echo` of text
//! carrying U+202E cannot show "evil" as "live"), and then every configured credential is
//! redacted. Removing the controls first means a credential split by one is still found.

use std::borrow::Cow;

use yetibot_conversation::strip_bidi_controls;
use yetibot_json_util::Value;
use yetibot_redaction::{REDACTED, Secrets};

/// `text` without bidirectional controls and with every secret redacted; borrowed when
/// there was nothing to change.
fn clean<'t>(text: &'t str, secrets: &Secrets) -> Cow<'t, str> {
    match strip_bidi_controls(text) {
        Cow::Borrowed(text) => secrets.redact_text(text),
        Cow::Owned(text) => Cow::Owned(secrets.redact_text(&text).into_owned()),
    }
}

/// Cleans every string, object key and number of `value` in place. Iterative, so a deeply
/// nested value cannot exhaust the stack.
fn clean_value(value: &mut Value, secrets: &Secrets) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => {
                if let Cow::Owned(cleaned) = clean(text, secrets) {
                    *text = cleaned;
                }
            }
            Value::Integer(_) | Value::Decimal(_) => {
                // A numeric credential is found in the number's written form.
                if !secrets.is_empty() && secrets.contains_secret(&value.to_json()) {
                    *value = Value::String(REDACTED.to_owned());
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(object) => {
                object.rename_keys(|key| match clean(key, secrets) {
                    Cow::Owned(cleaned) => Some(cleaned),
                    Cow::Borrowed(_) => None,
                });
                pending.extend(object.values_mut());
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

/// Makes a reply's parts safe to show (its value, data, and texts such as its error and
/// notes): no bidirectional controls, no configured credential.
pub(crate) fn present<'t>(
    value: &mut Value,
    data: Option<&mut Value>,
    texts: impl IntoIterator<Item = &'t mut String>,
    secrets: &Secrets,
) {
    clean_value(value, secrets);
    if let Some(data) = data {
        clean_value(data, secrets);
    }
    for text in texts {
        if let Cow::Owned(cleaned) = clean(text, secrets) {
            *text = cleaned;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use yetibot_conversation::is_bidi_control;

    use super::*;

    fn parse(text: &str) -> Value {
        Value::parse(text).expect("json")
    }

    #[test]
    fn controls_go_before_credentials_are_looked_for() {
        let secrets = Secrets::new(["sk-live-0123456789abcdef"]).expect("secrets");
        let mut value = parse("[\"evil\u{202e}\", \"sk-live-0123\u{202e}456789abcdef\"]");
        let mut data = parse("{\"k\u{202e}ey\": \"da\u{2066}ta\", \"key\": 1}");
        let mut error = "oh \u{202d}no".to_owned();
        present(&mut value, Some(&mut data), Some(&mut error), &secrets);
        assert_eq!(value, parse(r#"["evil", "[redacted]"]"#));
        assert_eq!(data, parse(r#"{"key": "data", "key (2)": 1}"#));
        assert_eq!(error, "oh no");
    }

    #[test]
    fn every_text_of_a_reply_is_cleaned() {
        let secrets = Secrets::new(["sk-live-0123456789abcdef"]).expect("secrets");
        let mut value = parse("\"ok\"");
        let mut error = "no sk-live-0123456789abcdef".to_owned();
        let mut note = "local: \u{202e}sk-live-0123456789abcdef".to_owned();
        present(&mut value, None, [&mut error, &mut note], &secrets);
        assert_eq!(error, "no [redacted]");
        assert_eq!(note, "local: [redacted]");
    }

    #[test]
    fn a_numeric_credential_is_redacted_too() {
        let secrets = Secrets::new(["123456789012345678"]).expect("secrets");
        let mut value = parse("[123456789012345678, 7]");
        clean_value(&mut value, &secrets);
        assert_eq!(value, parse(r#"["[redacted]", 7]"#));
    }

    #[test]
    fn a_deep_value_does_not_exhaust_the_stack() {
        let mut value = Value::String("\u{2067}x".into());
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        clean_value(&mut value, &Secrets::empty());
        let mut inner = &value;
        while let Value::Array(items) = inner {
            inner = &items[0];
        }
        assert_eq!(inner, &Value::String("x".into()));
        // Dropping a value this deep would recurse; take it apart by hand.
        let mut pending = vec![value];
        while let Some(Value::Array(items)) = pending.pop() {
            pending.extend(items);
        }
    }

    proptest! {
        #[test]
        fn no_control_survives(text in "[a-z\u{202a}-\u{202e}\u{2066}-\u{2069}é]{0,64}") {
            let mut object = yetibot_json_util::Object::new();
            object.insert(text.clone(), Value::Array(vec![Value::String(text.clone())]))
                .expect("one key");
            let mut value = Value::Object(object);
            let mut error = text;
            present(&mut value, None, Some(&mut error), &Secrets::empty());
            let all = value.to_json() + &error;
            prop_assert!(!all.contains(is_bidi_control));
        }
    }
}
