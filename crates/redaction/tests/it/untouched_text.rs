//! Text that holds no secret in any spelling comes back byte for byte.

use std::borrow::Cow;

use proptest::prelude::*;
use yetibot_redaction::Secrets;

/// Secrets drawn from uppercase letters outside the hex digits, plus digits. Each holds at
/// least one letter, and no view of the generated text can contain those letters.
fn secret() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            proptest::char::range('G', 'Z'),
            proptest::char::range('0', '9')
        ],
        8..20,
    )
    .prop_map(String::from_iter)
    .prop_filter("needs a letter", |s| {
        s.chars().any(|c| c.is_ascii_uppercase())
    })
}

/// Pieces of lowercase text, punctuation, backslashes and escapes (JSON and percent), both
/// valid and broken. Escapes use lowercase hex and decode to lowercase letters, punctuation
/// or non-ASCII, and no piece starts with a digit, so that no `%` can join the pieces after
/// it into an uppercase letter.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::collection::vec(proptest::char::range('a', 'z'), 1..8)
            .prop_map(String::from_iter),
        1 => proptest::sample::select(vec![" ", "\n", "\"", "/", "[", "]", "{", "}", ":", ",", "é", "😀"])
            .prop_map(str::to_owned),
        2 => proptest::sample::select(vec![
            r"\", r"\\", r#"\""#, r"\/", r"\n", r"\t", r"\b", r"\u00e9", r"\ud83d\ude00",
            r"\u12", r"\x", r"\ud83d", r"\\u00e9", r#"\\\""#, r"\u005c", "[redacted]",
            "%", "%2", "%2f", "%25", "%5c", "%c3%a9", "%7a", "%zz", "%%", r"\u0025",
        ])
        .prop_map(str::to_owned),
        1 => proptest::char::range('a', 'z').prop_map(|c| format!("\\u{:04x}", u32::from(c))),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn text_without_secrets_is_unchanged(
        secrets in proptest::collection::vec(secret(), 1..6),
        text in text(),
    ) {
        let set = Secrets::new(&secrets).unwrap();
        prop_assert!(matches!(set.redact_text(&text), Cow::Borrowed(t) if t == text));
        prop_assert!(!set.contains_secret(&text));
    }
}
