//! Bidirectional controls: the characters that reorder the text around them, so that a
//! message can display differently from what it says (U+202E shows "evil" as "live").
//! Whatever shows text to a person removes them.

use std::borrow::Cow;

/// Whether `c` changes the direction of the text around it: the embeddings and overrides
/// U+202A–U+202E and the isolates U+2066–U+2069.
#[must_use]
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` without bidirectional controls; borrowed when it had none.
///
/// ```
/// use yetibot_conversation::strip_bidi_controls;
///
/// assert_eq!(strip_bidi_controls("\u{202e}evil"), "evil");
/// assert!(matches!(strip_bidi_controls("plain"), std::borrow::Cow::Borrowed(_)));
/// ```
#[must_use]
pub fn strip_bidi_controls(text: &str) -> Cow<'_, str> {
    if text.contains(is_bidi_control) {
        Cow::Owned(text.chars().filter(|&c| !is_bidi_control(c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_goes_and_nothing_else() {
        let text =
            "a\u{202a}b\u{202b}c\u{202c}d\u{202d}e\u{202e}f\u{2066}g\u{2067}h\u{2068}i\u{2069}j";
        assert_eq!(strip_bidi_controls(text), "abcdefghij");
        // Neighbours of the ranges, and right-to-left text itself, stay.
        let kept = "\u{2029}\u{202f}\u{2065}\u{206a}\u{200f}שלום";
        assert!(matches!(strip_bidi_controls(kept), Cow::Borrowed(_)));
    }
}
