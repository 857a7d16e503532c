//! A secret embedded in JSON string content, spelled any way JSON allows and optionally
//! encoded a second time, never survives redaction.

use proptest::prelude::*;
use yetibot_redaction::Secrets;

use crate::encode::{Spelling, decode, encode, secret, spelling, tricky_char};

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(tricky_char(), 0..16).prop_map(String::from_iter)
}

fn spellings() -> impl Strategy<Value = Vec<Spelling>> {
    proptest::collection::vec(spelling(), 1..24)
}

proptest! {
    #[test]
    fn escaped_secret_is_removed(
        secret in secret(),
        prefix in text(),
        suffix in text(),
        around in spellings(),
        inside in spellings(),
        outer in proptest::option::of(spellings()),
    ) {
        let inner = format!(
            "{}{}{}",
            encode(&prefix, &around),
            encode(&secret, &inside),
            encode(&suffix, &around),
        );
        let input = match &outer {
            Some(outer) => encode(&inner, outer),
            None => inner,
        };
        let set = Secrets::new([&secret]).unwrap();
        prop_assert!(!set.is_empty());

        // The generator really hid the secret where the reference decoder finds it.
        let once = decode(&input).expect("the generator writes valid JSON string content");
        let plain = if outer.is_some() { decode(&once).expect("inner content is valid") } else { once };
        prop_assert!(plain.contains(&secret));
        prop_assert!(set.contains_secret(&input));

        let out = set.redact_text(&input);
        prop_assert!(!set.contains_secret(&out), "still matches: {:?}", out);
        prop_assert!(!out.contains(&secret));
        let once = decode(&out);
        prop_assert!(once.is_some(), "redaction broke the JSON string: {:?}", out);
        let once = once.unwrap_or_default();
        prop_assert!(!once.contains(&secret), "decoded once: {:?}", once);
        match decode(&once) {
            Some(twice) => prop_assert!(!twice.contains(&secret), "decoded twice: {:?}", twice),
            None => prop_assert!(outer.is_none(), "redaction broke the inner JSON: {:?}", once),
        }
    }
}

/// A secret with its own `%XX` is found where JSON escapes are decoded and percent-encoding
/// is not: decoding both at once would turn its `%aa` into one byte.
#[test]
fn a_secret_holding_percent_hex_is_found_in_json_escaped_text() {
    let set = Secrets::new(["aaaaaaaaaa%a"]).unwrap();
    let text = r"aaaaaaaa\u0061a%aa";
    assert!(set.contains_secret(text));
    let out = set.redact_text(text);
    assert!(!set.contains_secret(&out), "{out}");
    // Percent-encoded JSON whose string holds such a secret: decoded once with every
    // escape, then with JSON's alone.
    let set = Secrets::new(["aa\"aa%aa"]).unwrap();
    let text = "?q={%22k%22:%22aa%5C%22aa%25aa%22}";
    assert!(set.contains_secret(text));
    let out = set.redact_text(text);
    assert!(!set.contains_secret(&out), "{out}");
}
