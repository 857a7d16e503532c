//! Splitting Slack markup into messages of at most a given length, at boundaries that keep
//! each message readable on its own.
//!
//! A message ends before a line, preferably at a blank line, never inside a code block
//! when the block fits in a message; a code block longer than one message is cut at a
//! line, closed, and reopened in the next, so each message's code renders as code. Only a
//! line longer than a whole message is cut inside, at a character, so never between the
//! halves of a surrogate pair. Lengths are counted in UTF-16 units, which is at least
//! Slack's count of characters.

use crate::fit::units;

/// What a code block's cut costs: the closing fence and the reopening one.
const FENCE_COST: usize = 8;

/// `text` in pieces of at most `max_units` each (at least 16), in order; an empty text
/// gives no pieces.
#[must_use]
pub fn split(text: &str, max_units: usize) -> Vec<String> {
    let max_units = max_units.max(16);
    let mut pieces = Vec::new();
    if units(text) <= max_units {
        if !text.trim().is_empty() {
            pieces.push(text.to_owned());
        }
        return pieces;
    }
    let mut current = String::new();
    let mut current_units = 0;
    let mut fenced = false;
    for line in text.split('\n') {
        let width = units(line) + 1;
        let is_fence = is_fence(line);
        let fences = if fenced { FENCE_COST } else { 0 };
        if width + fences > max_units {
            // One line longer than a whole message: cut between characters.
            flush(&mut pieces, &mut current, fenced);
            for part in crate::fit::chunks(line, max_units - fences) {
                if fenced {
                    pieces.push(format!("```\n{part}\n```"));
                } else {
                    pieces.push(part.to_owned());
                }
            }
            current_units = reopen(&mut current, fenced);
            continue;
        }
        // Room for the line, and for the closing fence a cut inside code needs.
        let closing = if fenced || is_fence { 4 } else { 0 };
        if current_units + width + closing > max_units && current.trim().is_empty() {
            // Only blank lines so far: they are dropped rather than pushed ahead.
            current.clear();
            current_units = 0;
        }
        if current_units + width + closing > max_units && !current.trim().is_empty() {
            if fenced {
                flush(&mut pieces, &mut current, true);
            } else {
                // Move the last paragraph to the next piece when that keeps most of this one.
                let keep = last_break(&current);
                let rest = current.split_off(keep);
                flush(&mut pieces, &mut current, false);
                current = rest;
            }
            reopen(&mut current, fenced);
            current_units = units(&current);
            if current_units + width + closing > max_units {
                // The carried paragraph and this line still do not fit together.
                flush(&mut pieces, &mut current, fenced);
                current_units = reopen(&mut current, fenced);
            }
        }
        current.push_str(line);
        current.push('\n');
        current_units += width;
        if is_fence {
            fenced = !fenced;
        }
    }
    flush(&mut pieces, &mut current, fenced);
    pieces
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```") && line.matches("```").count() % 2 == 1
}

/// Ends the current piece, closing its code block when it is inside one.
fn flush(pieces: &mut Vec<String>, current: &mut String, fenced: bool) {
    let piece = current.trim_end_matches('\n');
    if !piece.trim().is_empty() && piece.trim() != "```" {
        if fenced {
            pieces.push(format!("{piece}\n```"));
        } else {
            pieces.push(piece.to_owned());
        }
    }
    current.clear();
}

/// Starts the next piece inside the code block the last one closed; returns its length.
fn reopen(current: &mut String, fenced: bool) -> usize {
    if fenced {
        current.insert_str(0, "```\n");
        4
    } else {
        0
    }
}

/// Where a full piece is best cut: after its last blank line that is outside code and in
/// its second half, else at its end.
fn last_break(piece: &str) -> usize {
    let mut fenced = false;
    let mut best = piece.len();
    let half = piece.len() / 2;
    let mut offset = 0;
    for line in piece.split_inclusive('\n') {
        if is_fence(line) {
            fenced = !fenced;
        }
        offset += line.len();
        if !fenced && line.trim().is_empty() && offset >= half && offset < piece.len() {
            best = offset;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(split("hello", 100), ["hello"]);
        assert!(split("", 100).is_empty());
    }

    #[test]
    fn a_code_block_that_fits_is_never_cut() {
        let code = format!("```\n{}```", "let x = 1;\n".repeat(5));
        let text = format!("{}\n\n{code}\n\nafter", "intro ".repeat(10));
        let pieces = split(&text, 80);
        assert!(pieces.iter().any(|p| p.contains(&code)), "{pieces:#?}");
        for piece in &pieces {
            assert!(units(piece) <= 80, "{piece:?}");
            assert_eq!(piece.matches("```").count() % 2, 0, "{piece:?}");
        }
    }

    #[test]
    fn a_long_code_block_is_closed_and_reopened() {
        let text = format!("```\n{}```", "line of code\n".repeat(40));
        let pieces = split(&text, 100);
        assert!(pieces.len() > 1);
        for piece in &pieces {
            assert!(units(piece) <= 100, "{piece:?}");
            assert!(
                piece.starts_with("```") && piece.ends_with("```"),
                "{piece:?}"
            );
        }
    }

    #[test]
    fn a_long_line_is_cut_between_characters() {
        let text = "😀".repeat(100);
        let pieces = split(&text, 21);
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| units(p) <= 21));
    }

    proptest! {
        #[test]
        fn pieces_respect_the_bound_and_balance_fences(
            text in "([a-z ]{0,30}\n|```\n|\n|😀{1,40}\n){0,60}",
            max in 16usize..120,
        ) {
            // Slack markup from `to_mrkdwn` always closes its code blocks.
            let mut text = text;
            if text.lines().filter(|l| is_fence(l)).count() % 2 == 1 {
                text.push_str("```\n");
            }
            for piece in split(&text, max) {
                prop_assert!(units(&piece) <= max, "{:?}", piece);
                prop_assert_eq!(piece.matches("```").count() % 2, 0, "{:?}", piece);
            }
        }
    }
}
