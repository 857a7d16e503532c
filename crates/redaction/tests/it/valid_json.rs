//! Redaction keeps JSON string content valid, one and two levels deep, even when a secret
//! begins or ends inside an escape sequence.

use proptest::prelude::*;
use yetibot_redaction::Secrets;

use crate::encode::{Spelling, any_spelling, decode, encode, spelling, tricky_char};

/// Plain text, its JSON string content (some characters possibly percent-encoded), and
/// optionally that content encoded again as JSON.
fn document() -> impl Strategy<Value = (String, String, Option<String>)> {
    (
        proptest::collection::vec(tricky_char(), 8..40).prop_map(String::from_iter),
        proptest::collection::vec(any_spelling(), 1..24),
        proptest::option::of(proptest::collection::vec(spelling(), 1..24)),
    )
        .prop_map(|(plain, inner, outer): (String, Vec<Spelling>, _)| {
            let once = encode(&plain, &inner);
            let twice = outer.map(|outer| encode(&once, &outer));
            (plain, once, twice)
        })
}

/// A piece of `text` starting at the `from`-th character, at least 8 bytes long when the
/// text allows it. Taking secrets from the encoded text yields ones that start or end in
/// the middle of an escape.
fn piece(text: &str, from: usize, chars: usize) -> String {
    let skip = from % text.chars().count().max(1);
    let mut piece = String::new();
    for ch in text.chars().skip(skip) {
        piece.push(ch);
        if piece.chars().count() >= chars && piece.len() >= 8 {
            break;
        }
    }
    piece
}

proptest! {
    #[test]
    fn output_stays_valid_json(
        (plain, once, twice) in document(),
        picks in proptest::collection::vec((0..3_usize, any::<usize>(), 1..16_usize), 1..4),
    ) {
        let input = twice.clone().unwrap_or_else(|| once.clone());
        let sources = [plain.as_str(), once.as_str(), input.as_str()];
        let secrets: Vec<String> = picks
            .iter()
            .map(|&(source, from, chars)| piece(sources[source], from, chars))
            .collect();
        let set = Secrets::new(&secrets).unwrap();
        let out = set.redact_text(&input);
        prop_assert!(!set.contains_secret(&out));
        let decoded = decode(&out);
        prop_assert!(decoded.is_some(), "invalid JSON string content: {:?}", out);
        if twice.is_some() {
            let inner = decoded.unwrap_or_default();
            prop_assert!(decode(&inner).is_some(), "invalid inner JSON: {:?}", inner);
        }
    }
}
