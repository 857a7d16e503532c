//! `StreamRedactor`: redaction of a text that arrives in pieces, such as a model's streamed
//! reply, publishing each piece as soon as no secret can still reach into it.

use std::fmt;

use crate::scan::{End, splice};
use crate::secrets::Secrets;
use crate::view::{MAX_SPREAD, MAX_UNIT};

/// Redacts a text that arrives in chunks, with the same result as redacting it whole.
///
/// Each [`push`](StreamRedactor::push) returns the text that is safe to publish now, and
/// [`finish`](StreamRedactor::finish) the rest. For every way of cutting a text into
/// chunks, the outputs joined together equal [`Secrets::redact_text`] of the whole text, so a
/// secret split across two deltas of a streamed reply is caught like any other.
///
/// The redactor holds back only what could still turn out to be part of a secret: the
/// longest end of the text that, in any form the redaction reads (plain, JSON-escaped,
/// `\u`-escaped, percent-encoded, escaped twice), could begin a secret; an escape sequence
/// the chunk cut off; and an occurrence that the next chunk could extend or touch (touching
/// occurrences share one marker). Ordinary text whose end begins no secret passes straight
/// through. Held-back text never exceeds [`StreamRedactor::max_held_back`] bytes, and a
/// held-back occurrence is remembered without keeping its text.
///
/// Each push searches only the held-back text and the new chunk, so the total cost stays
/// linear in the length of the stream. Output never splits a UTF-8 character.
///
/// ```
/// use yetibot_redaction::{Secrets, StreamRedactor};
///
/// # fn main() -> Result<(), yetibot_redaction::Error> {
/// let secrets = Secrets::new(["sk-live-0123456789"])?;
/// let mut stream = StreamRedactor::new(&secrets);
/// let mut published = stream.push("your key is sk-li");
/// assert_eq!(published, "your key is ");
/// published += &stream.push("ve-0123456789, keep it safe");
/// published += &stream.finish();
/// assert_eq!(published, "your key is [redacted], keep it safe");
/// # Ok(())
/// # }
/// ```
pub struct StreamRedactor {
    secrets: Secrets,
    /// Input not yet published. It always begins where no escape sequence is cut, so it
    /// can be searched on its own.
    pending: String,
    /// Set when the output so far ends right before a range to replace whose marker is not
    /// written yet, because more input could still extend it: how many bytes at the start
    /// of `pending` the range is known to cover (possibly none).
    covered: Option<usize>,
}

impl StreamRedactor {
    /// A redactor for one stream, searching for the secrets in `secrets`.
    pub fn new(secrets: &Secrets) -> Self {
        Self {
            secrets: secrets.clone(),
            pending: String::new(),
            covered: None,
        }
    }

    /// Takes the next chunk and returns the text that is now safe to publish, possibly
    /// empty.
    pub fn push(&mut self, chunk: &str) -> String {
        self.pending.push_str(chunk);
        let Some(scan) = self.secrets.scan() else {
            return std::mem::take(&mut self.pending);
        };
        let found = scan.find(&self.pending, self.covered, End::Open);
        let settled = found.settled;
        // Ranges that end before the settled point are final. The next one, if it reaches
        // the settled point, may still grow or touch the next chunk's first occurrence and
        // share its marker: publish up to it and remember it instead.
        let finals = found.ranges.partition_point(|r| r.end < settled);
        let open = found
            .ranges
            .get(finals)
            .filter(|r| r.start < settled || (r.start == 0 && self.covered.is_some()));
        // Ranges begin at character boundaries; flooring only keeps a future bug from
        // becoming a panic on someone's reply.
        let published = self
            .pending
            .floor_char_boundary(open.map_or(settled, |r| r.start));
        let out = splice(&self.pending[..published], &found.ranges[..finals]);
        self.covered = open.map(|r| r.end - settled);
        self.pending.drain(..settled);
        out
    }

    /// Ends the stream and returns the rest of the redacted text.
    pub fn finish(self) -> String {
        let Some(scan) = self.secrets.scan() else {
            return self.pending;
        };
        let found = scan.find(&self.pending, self.covered, End::Final);
        splice(&self.pending, &found.ranges)
    }

    /// How many bytes of input the redactor holds back right now.
    pub fn held_back(&self) -> usize {
        self.pending.len()
    }

    /// The most bytes the redactor can hold back after a push, for these secrets:
    /// 36 × L + 216, where L is the longest secret's length in bytes.
    ///
    /// The worst case is a text ending in the first L − 1 characters of a secret, each
    /// escaped twice in the longest way (`\u0041` with each of its characters written as
    /// `\u00XX`, 36 bytes), followed by the start of a cut-off escape. Plain text ending in
    /// the start of a secret holds back at most L − 1 bytes.
    pub fn max_held_back(&self) -> usize {
        let longest = self.secrets.scan().map_or(0, |scan| scan.max_len());
        MAX_SPREAD * longest + 3 * MAX_UNIT
    }
}

impl fmt::Debug for StreamRedactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The held-back text may be the start of a secret: show only its length.
        f.debug_struct("StreamRedactor")
            .field("secrets", &self.secrets)
            .field("held_back", &self.pending.len())
            .field("covering", &self.covered.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `chunks` through a redactor for `secrets`; checks the joined output against
    /// redacting the whole text and returns what each push published.
    fn check(secrets: &[&str], chunks: &[&str]) -> Vec<String> {
        let set = Secrets::new(secrets).unwrap();
        let mut stream = StreamRedactor::new(&set);
        let mut outputs: Vec<String> = chunks.iter().map(|c| stream.push(c)).collect();
        outputs.push(stream.finish());
        let whole = chunks.concat();
        assert_eq!(
            outputs.concat(),
            set.redact_text(&whole),
            "chunks: {chunks:?}"
        );
        outputs
    }

    #[test]
    fn secret_split_across_deltas_survives() {
        let out = check(&["sk-live-0123456789"], &["key: sk-live-01", "23456789 ok"]);
        assert_eq!(out, ["key: ", "[redacted] ok", ""]);
    }

    #[test]
    fn plain_text_passes_through_at_once() {
        let out = check(&["sk-live-0123456789"], &["hello ", "world", "!"]);
        assert_eq!(out, ["hello ", "world", "!", ""]);
    }

    #[test]
    fn holds_back_only_a_possible_start() {
        // `s` could begin the secret; `sk-x` cannot.
        let out = check(&["sk-live-0123456789"], &["this is", " sk-x", "yz"]);
        assert_eq!(out, ["this i", "s sk-x", "yz", ""]);
    }

    #[test]
    fn escape_cut_off_by_a_chunk() {
        let out = check(&["secret-value"], &[r#"{"t":"secret-valu\u00"#, r#"65"}"#]);
        assert_eq!(out, [r#"{"t":""#, r#"[redacted]"}"#, ""]);
        check(&["tok/abcdefgh"], &["?k=tok%", "2", "Fabcdefgh&x"]);
        check(&["key-😀-value"], &[r"key-\uD83D", r"\uDE00-value"]);
        check(&["ABCDEFGH"], &[r"x \", r"\u0041BCDEFGH y"]);
    }

    #[test]
    fn touching_occurrences_share_one_marker() {
        let out = check(&["abcdefgh"], &["abcdefgh", "abcdefgh", "abcdefgh", " x"]);
        assert_eq!(out.concat(), "[redacted] x");
        assert_eq!(out[0], "");
        check(&["abcdefgh"], &["abcdefgh"]);
        check(&["abcdefgh"], &["abcdefgh", " ", "abcdefgh"]);
    }

    #[test]
    fn long_runs_are_not_kept() {
        let set = Secrets::new(["abcdefgh"]).unwrap();
        let mut stream = StreamRedactor::new(&set);
        for _ in 0..1000 {
            assert_eq!(stream.push("abcdefgh"), "");
            assert!(stream.held_back() < 16);
        }
        assert_eq!(stream.finish(), "[redacted]");
    }

    #[test]
    fn dense_escapes_are_published_as_they_are_decided() {
        let set = Secrets::new(["secret-value"]).unwrap();
        let mut stream = StreamRedactor::new(&set);
        let text = r"\n%2F\u00e9".repeat(200);
        let mut out = String::new();
        for ch in text.chars() {
            out += &stream.push(ch.encode_utf8(&mut [0; 4]));
            // At most one escape, not yet decided, is ever held back.
            assert!(stream.held_back() <= 12, "{}", stream.held_back());
        }
        out += &stream.finish();
        assert_eq!(out, text);
    }

    #[test]
    fn empty_set_publishes_everything() {
        let mut stream = StreamRedactor::new(&Secrets::empty());
        assert_eq!(stream.push("sk-"), "sk-");
        assert_eq!(stream.held_back(), 0);
        assert_eq!(stream.max_held_back(), 3 * MAX_UNIT);
        assert_eq!(stream.finish(), "");
    }

    #[test]
    fn debug_shows_no_text() {
        let set = Secrets::new(["sk-live-0123456789"]).unwrap();
        let mut stream = StreamRedactor::new(&set);
        let _ = stream.push("x sk-live");
        let printed = format!("{stream:?}");
        assert!(!printed.contains("sk-"), "{printed}");
        assert!(printed.contains("held_back: 7"), "{printed}");
    }
}
