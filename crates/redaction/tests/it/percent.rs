//! A secret percent-encoded, with any choice of raw or encoded per character and either hex
//! case, alone, inside JSON text, or encoded a second time, never survives redaction.

use proptest::prelude::*;
use yetibot_redaction::Secrets;

use crate::encode::{Spelling, encode, percent, percent_decode, secret, spelling};

/// How one character of the secret is written: raw, or percent-encoded in a hex case.
fn choice() -> impl Strategy<Value = Option<bool>> {
    prop_oneof![Just(None), any::<bool>().prop_map(Some)]
}

/// Plain text around the secret, free of escape introducers, so that it cannot combine with
/// the secret's first or last characters into an escape.
fn filler() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(vec!['a', 'k', 'z', ' ', '.', ':', '/', '?', '=', '&']),
        0..12,
    )
    .prop_map(String::from_iter)
}

/// A second layer around the text that holds the secret.
#[derive(Clone, Debug)]
enum Outer {
    None,
    /// The text inside a JSON string, its `%XX` sequences kept as they are (as JSON
    /// encoders do) and every other character spelled at random.
    Json(Vec<Spelling>),
    /// The text percent-encoded again (as a URL inside a URL parameter): every `%` and `\`
    /// encoded, other characters at random.
    Percent(Vec<Option<bool>>),
}

fn outer() -> impl Strategy<Value = Outer> {
    prop_oneof![
        Just(Outer::None),
        proptest::collection::vec(spelling(), 1..16).prop_map(Outer::Json),
        proptest::collection::vec(choice(), 1..16).prop_map(Outer::Percent),
    ]
}

/// Pieces of text: a plain character, or a `%XX` sequence that must stay whole.
fn pieces(text: &str, choices: &[Option<bool>], always: &[char]) -> Vec<String> {
    text.chars()
        .enumerate()
        .map(|(index, ch)| {
            let choice = choices.get(index % choices.len().max(1)).copied().flatten();
            let upper = choice.or(always.contains(&ch).then_some(index % 2 == 0));
            let mut piece = String::new();
            match upper {
                Some(upper) => percent(&mut piece, ch, upper),
                None => piece.push(ch),
            }
            piece
        })
        .collect()
}

fn wrap(inner: &[String], outer: &Outer) -> String {
    match outer {
        Outer::None => inner.concat(),
        Outer::Json(spellings) => inner
            .iter()
            .enumerate()
            .map(|(index, piece)| {
                if piece.starts_with('%') {
                    piece.clone()
                } else {
                    encode(
                        piece,
                        &spellings[index % spellings.len()..=index % spellings.len()],
                    )
                }
            })
            .collect(),
        Outer::Percent(choices) => pieces(&inner.concat(), choices, &['%', '\\']).concat(),
    }
}

proptest! {
    #[test]
    fn percent_encoded_secret_is_found(
        secret in secret(),
        prefix in filler(),
        suffix in filler(),
        choices in proptest::collection::vec(choice(), 1..24),
        outer in outer(),
    ) {
        // An encoder always encodes `%` and `\`; leaving them raw next to encoded
        // characters would make the text mean something else.
        let mut inner: Vec<String> = prefix.chars().map(String::from).collect();
        inner.extend(pieces(&secret, &choices, &['%', '\\']));
        inner.extend(suffix.chars().map(String::from));
        let input = wrap(&inner, &outer);
        let set = Secrets::new([&secret]).unwrap();
        prop_assert!(set.contains_secret(&input), "not found in {:?}", input);

        let out = set.redact_text(&input);
        prop_assert!(!set.contains_secret(&out), "still matches: {:?}", out);
        prop_assert!(!out.contains(&secret));
        prop_assert!(!percent_decode(&out).contains(&secret), "decoded: {:?}", out);
        prop_assert_eq!(set.redact_text(&out), out.clone());
    }

    #[test]
    fn json_text_percent_encoded_is_found(
        secret in secret(),
        spellings in proptest::collection::vec(spelling(), 1..24),
        choices in proptest::collection::vec(choice(), 1..24),
    ) {
        // JSON inside a URL parameter: the JSON string content, then percent-encoded. URL
        // encoders always encode quotes too; a raw quote reads as a JSON string delimiter.
        let json = format!(r#"{{"k":"{}"}}"#, encode(&secret, &spellings));
        let input = format!("?q={}", pieces(&json, &choices, &['%', '\\', '"']).concat());
        let set = Secrets::new([&secret]).unwrap();
        prop_assert!(set.contains_secret(&input), "not found in {:?}", input);
        let out = set.redact_text(&input);
        prop_assert!(!set.contains_secret(&out), "still matches: {:?}", out);
        prop_assert_eq!(set.redact_text(&out), out.clone());
    }
}
