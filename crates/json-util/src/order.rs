//! The lexical order of `sort` and `keys`: the JVM's `String.compareTo`, which compares
//! UTF-16 code units rather than code points.

use std::cmp::Ordering;

/// Compares two strings as the JVM does.
///
/// UTF-8 byte order equals code-point order, and code-point order equals UTF-16 order except
/// when a character from U+E000..=U+FFFF meets one above U+FFFF: the latter is encoded with
/// a surrogate (U+D800..=U+DFFF), which sorts before U+E000 in UTF-16 but after it as a code
/// point. So `"\u{FF61}" < "\u{1F600}"` in Rust, but `"\u{1F600}" < "\u{FF61}"` here.
pub(crate) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let mut left = a.chars();
    let mut right = b.chars();
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x == y => {}
            // The first differing characters decide; their UTF-16 encodings differ in some
            // unit, and all earlier units of the two strings are equal.
            (Some(x), Some(y)) => return units(x).cmp(&units(y)),
        }
    }
}

/// The UTF-16 units of `c`, padded with zero for a single-unit character. Padding cannot
/// change an outcome: two characters whose first units are equal are both astral.
fn units(c: char) -> [u16; 2] {
    let mut buffer = [0u16; 2];
    c.encode_utf16(&mut buffer);
    buffer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(a: &str, b: &str, expected: Ordering) {
        assert_eq!(utf16_cmp(a, b), expected, "{a:?} vs {b:?}");
        assert_eq!(utf16_cmp(b, a), expected.reverse(), "{b:?} vs {a:?}");
    }

    #[test]
    fn agrees_with_byte_order_inside_the_bmp() {
        check("", "", Ordering::Equal);
        check("", "a", Ordering::Less);
        check("a", "b", Ordering::Less);
        check("B", "a", Ordering::Less);
        check("ab", "abc", Ordering::Less);
        check("é", "z", Ordering::Greater);
        check("\u{FF61}", "\u{FFFF}", Ordering::Less);
    }

    #[test]
    fn astral_characters_sort_before_the_top_of_the_bmp() {
        // Rust's own order says the opposite for both pairs.
        assert!("\u{FF61}" < "\u{1F600}");
        check("\u{1F600}", "\u{FF61}", Ordering::Less);
        check("\u{10000}", "\u{E000}", Ordering::Less);
        // Below U+D800 the two orders agree.
        check("\u{D7FF}", "\u{10000}", Ordering::Less);
        // Two astral characters compare by their surrogates, which keeps code-point order.
        check("\u{1F600}", "\u{1F601}", Ordering::Less);
        check("\u{10400}", "\u{1F600}", Ordering::Less);
        check("x\u{1F600}", "x\u{FF61}y", Ordering::Less);
    }

    #[test]
    fn matches_an_explicit_utf16_comparison() {
        let samples = [
            "",
            "a",
            "A",
            "ab",
            "é",
            "\u{FF61}",
            "\u{1F600}",
            "\u{E000}",
            "\u{10000}",
            "\u{D7FF}",
            "a\u{1F600}",
            "a\u{FFFF}",
            "\u{10FFFF}",
        ];
        for a in samples {
            for b in samples {
                let expected = a.encode_utf16().cmp(b.encode_utf16());
                assert_eq!(utf16_cmp(a, b), expected, "{a:?} vs {b:?}");
            }
        }
    }
}
