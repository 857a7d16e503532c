//! Redacting redacted text changes nothing.

use proptest::prelude::*;
use yetibot_redaction::Secrets;

use crate::encode::{any_spelling, encode, tricky_char};

fn value() -> impl Strategy<Value = String> {
    proptest::collection::vec(tricky_char(), 1..14).prop_map(String::from_iter)
}

/// A secret, sometimes beginning with the end of the marker or ending with its beginning:
/// those are the values that a freshly inserted marker can complete into a new occurrence.
fn secret() -> impl Strategy<Value = String> {
    let marker_edge = (0..10_usize, any::<bool>(), value()).prop_map(|(cut, leading, value)| {
        if leading {
            format!("{}{value}", &"[redacted]"[cut..])
        } else {
            format!("{value}{}", &"[redacted]"[..cut])
        }
    });
    prop_oneof![value(), marker_edge]
}

/// Text built from free-form pieces, copies of the secrets spelled at random, and pieces of
/// the secrets, so that occurrences overlap, touch and sit next to markers.
fn text(secrets: Vec<String>) -> impl Strategy<Value = String> {
    let whole = secrets.clone();
    let parts = secrets.clone();
    let piece = prop_oneof![
        value(),
        Just("[redacted]".to_owned()),
        Just("\\".to_owned()),
        Just("%".to_owned()),
        (
            0..secrets.len(),
            proptest::collection::vec(any_spelling(), 1..8)
        )
            .prop_map(move |(i, spellings)| encode(&whole[i], &spellings)),
        (0..secrets.len(), any::<usize>(), any::<bool>()).prop_map(move |(i, cut, head)| {
            let chars: Vec<char> = parts[i].chars().collect();
            let cut = cut % (chars.len() + 1);
            let part = if head { &chars[..cut] } else { &chars[cut..] };
            part.iter().collect::<String>()
        }),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

pub(crate) fn case() -> impl Strategy<Value = (Vec<String>, String)> {
    proptest::collection::vec(secret(), 1..4).prop_flat_map(|secrets| {
        let pick = secrets.clone();
        text(pick).prop_map(move |text| (secrets.clone(), text))
    })
}

proptest! {
    #[test]
    fn redaction_is_idempotent((secrets, text) in case()) {
        let set = Secrets::new(&secrets).unwrap();
        let once = set.redact_text(&text);
        let twice = set.redact_text(&once);
        prop_assert_eq!(&once, &twice);
        prop_assert!(!set.contains_secret(&once));
        prop_assert_eq!(set.contains_secret(&text), once != text);
    }
}
