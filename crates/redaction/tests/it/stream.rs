//! Streaming redaction equals redacting the whole text, however the text is cut into
//! chunks, and holds back no more than its documented bound.

use proptest::prelude::*;
use proptest::sample::Index;
use yetibot_redaction::{Secret, Secrets, StreamRedactor};

use crate::encode::{Spelling, any_spelling, encode, secret, spelling};
use crate::idempotence::case;

/// Where to cut a text: at chosen points, or after every character.
#[derive(Clone, Debug)]
enum Cuts {
    At(Vec<Index>),
    EveryChar,
}

fn cuts() -> impl Strategy<Value = Cuts> {
    prop_oneof![
        4 => proptest::collection::vec(any::<Index>(), 0..24).prop_map(Cuts::At),
        1 => Just(Cuts::EveryChar),
    ]
}

/// `text` cut into chunks at character boundaries.
fn chunks<'t>(text: &'t str, cuts: &Cuts) -> Vec<&'t str> {
    let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
    let mut points: Vec<usize> = match cuts {
        Cuts::EveryChar => boundaries,
        Cuts::At(indices) if boundaries.is_empty() => {
            let _ = indices;
            Vec::new()
        }
        Cuts::At(indices) => indices
            .iter()
            .map(|i| boundaries[i.index(boundaries.len())])
            .collect(),
    };
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// Streams `pieces` and checks the held-back bound after every push.
fn stream(set: &Secrets, pieces: &[&str]) -> Result<String, TestCaseError> {
    let mut redactor = StreamRedactor::new(set);
    let mut out = String::new();
    for piece in pieces {
        out.push_str(&redactor.push(piece));
        prop_assert!(
            redactor.held_back() <= redactor.max_held_back(),
            "held back {} of at most {}",
            redactor.held_back(),
            redactor.max_held_back()
        );
    }
    out.push_str(&redactor.finish());
    Ok(out)
}

proptest! {
    #[test]
    fn secret_split_across_chunks_is_redacted((secrets, text) in case(), cuts in cuts()) {
        let set = Secrets::new(&secrets).unwrap();
        let pieces = chunks(&text, &cuts);
        let out = stream(&set, &pieces)?;
        prop_assert_eq!(out, set.redact_text(&text), "chunks: {:?}", pieces);
    }

    #[test]
    fn stream_with_extra_secrets_matches_whole_text(
        (secrets, text) in case(),
        cuts in cuts(),
        split in any::<Index>(),
    ) {
        // Some secrets configured, the rest added for one request.
        let split = split.index(secrets.len() + 1);
        let base = Secrets::new(&secrets[..split]).unwrap();
        let extra: Vec<Secret> = secrets[split..].iter().map(|s| Secret::new(s.as_str())).collect();
        let set = base.with_extra(&extra).unwrap();
        let mut whole = Secrets::builder();
        for value in &secrets[..split] {
            whole.add_str(value);
        }
        for value in &extra {
            whole.add_credential(value);
        }
        let whole = whole.build().unwrap();
        prop_assert_eq!(set.redact_text(&text), whole.redact_text(&text));
        prop_assert_eq!(set.contains_secret(&text), whole.contains_secret(&text));
        let pieces = chunks(&text, &cuts);
        prop_assert_eq!(stream(&set, &pieces)?, whole.redact_text(&text), "chunks: {:?}", pieces);
    }
}

/// Pieces that each begin a secret, written with every mix of escapes, once or twice: the
/// text that the redactor must hold back the most of.
fn prefixes() -> impl Strategy<Value = (String, String)> {
    let piece = (
        any::<Index>(),
        proptest::collection::vec(any_spelling(), 1..8),
        proptest::option::of(proptest::collection::vec(spelling(), 1..8)),
    );
    (secret(), proptest::collection::vec(piece, 1..16)).prop_map(|(secret, pieces)| {
        let chars: Vec<char> = secret.chars().collect();
        let text = pieces
            .iter()
            .map(
                |(len, inner, outer): &(Index, Vec<Spelling>, Option<Vec<Spelling>>)| {
                    let prefix: String = chars[..len.index(chars.len())].iter().collect();
                    let once = encode(&prefix, inner);
                    match outer {
                        Some(outer) => encode(&once, outer),
                        None => once,
                    }
                },
            )
            .collect();
        (secret, text)
    })
}

proptest! {
    // Every case streams a long, heavily escaped text one character at a time.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn held_back_text_stays_within_its_bound((secret, text) in prefixes()) {
        let set = Secrets::new([&secret]).unwrap();
        let pieces = chunks(&text, &Cuts::EveryChar);
        let out = stream(&set, &pieces)?;
        prop_assert_eq!(out, set.redact_text(&text));
    }
}
