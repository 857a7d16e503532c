//! A proposal's review pages: a first page with the repository, base, hash, expiry, file
//! list and the exact pull request title, then the body and the complete diff of every file.
//! Every line is a JSON string with its line terminator, so `\r\n`, `\n`, `\r`, tabs,
//! trailing blanks and a missing final newline all show, and the decoded strings joined
//! give the exact text. The strings are pure printable ASCII: every other character
//! (non-ASCII letters, invisible and bidirectional controls, the backtick) is a `\uXXXX`
//! escape, and the rows sit in a code block, so no chat platform's formatting can hide or
//! reorder a character.

/// The most characters of one review page (chat platforms cut longer messages).
pub const PAGE_CHARS: usize = 3_000;
/// The most characters of a line shown as one string; a longer line continues on the next
/// row (marked `>`), so no row outgrows a page.
const PIECE_CHARS: usize = 400;
/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;

/// `text` split into lines, each with its terminator (`\r\n`, `\n` or a lone `\r`); the last
/// line has none when the text does not end with one.
pub(crate) fn lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => Some(i + 1),
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => Some(i + 2),
            b'\r' => Some(i + 1),
            _ => None,
        };
        match end {
            Some(end) => {
                out.push(&text[start..end]);
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// `text` as a JSON string literal of printable ASCII only: `\"`, `\\`, `\n`, `\r` and
/// `\t` as usual, and every other character outside `' '..='~'`, and the backtick, as
/// `\uXXXX` (a surrogate pair beyond the Basic Multilingual Plane).
pub(crate) fn exact(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' if c != '`' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
    out
}

/// The rows of one line: its sign and the line as [`exact`] strings of at most
/// `PIECE_CHARS` characters each, a longer line continuing on rows marked `>`.
fn rows(sign: char, line: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    if chars.is_empty() {
        out.push(format!("{sign} \"\""));
        return;
    }
    for (i, piece) in chars.chunks(PIECE_CHARS).enumerate() {
        let piece: String = piece.iter().collect();
        let mark = if i == 0 { ' ' } else { '>' };
        out.push(format!("{sign}{mark}{}", exact(&piece)));
    }
}

/// `text` as rows of [`exact`] strings, one per line, for a text shown whole (a pull
/// request's body).
pub(crate) fn text_rows(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines(text) {
        rows(' ', line, &mut out);
    }
    out
}

/// The diff of one file as rows, and its added and removed line counts. The changed block
/// is found by trimming the lines both texts share at their start and end (linear in the
/// sizes); up to three unchanged lines are shown on each side, and the skipped ones are
/// counted.
pub fn diff(before: Option<&str>, after: &str) -> (Vec<String>, usize, usize) {
    let old = lines(before.unwrap_or_default());
    let new = lines(after);
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let removed = &old[prefix..old.len() - suffix];
    let added = &new[prefix..new.len() - suffix];
    let mut out = Vec::new();
    let lead = prefix.saturating_sub(CONTEXT_LINES);
    if lead > 0 {
        out.push(format!("@@ {lead} unchanged lines @@"));
    }
    for line in &old[lead..prefix] {
        rows(' ', line, &mut out);
    }
    for line in removed {
        rows('-', line, &mut out);
    }
    for line in added {
        rows('+', line, &mut out);
    }
    let tail_end = (old.len() - suffix + CONTEXT_LINES.min(suffix)).min(old.len());
    for line in &old[old.len() - suffix..tail_end] {
        rows(' ', line, &mut out);
    }
    let trail = suffix - CONTEXT_LINES.min(suffix);
    if trail > 0 {
        out.push(format!("@@ {trail} unchanged lines @@"));
    }
    if removed.is_empty() && added.is_empty() {
        out.push("@@ no change @@".to_owned());
    }
    (out, added.len(), removed.len())
}

/// One file of a proposal as the review shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileView<'a> {
    /// The path from the repository root.
    pub(crate) path: &'a str,
    /// The text before; `None` for a new file.
    pub(crate) before: Option<&'a str>,
    /// The text after.
    pub(crate) after: &'a str,
}

/// The diff pages of `files`: every row of every file, packed into pages of at most
/// [`PAGE_CHARS`], each page saying which file it continues.
pub(crate) fn diff_pages(files: &[FileView<'_>]) -> Vec<String> {
    let sections = files
        .iter()
        .enumerate()
        .map(|(index, file)| {
            let (rows, added, removed) = diff(file.before, file.after);
            let what = if file.before.is_some() {
                "update"
            } else {
                "new file"
            };
            let title = format!(
                "File {}/{}: {} ({what}, +{added} -{removed})",
                index + 1,
                files.len(),
                exact(file.path)
            );
            (title, exact(file.path), rows)
        })
        .collect();
    pack(sections)
}

/// Packs sections (a title, what a continuation page calls it, and rows) into pages of at
/// most [`PAGE_CHARS`] (a row longer than a page gets a page of its own), each section
/// starting a page, its rows in a code block.
pub(crate) fn pack(sections: Vec<(String, String, Vec<String>)>) -> Vec<String> {
    const OPEN: &str = "```\n";
    const CLOSE: &str = "```";
    let mut pages = Vec::new();
    for (title, short, rows) in sections {
        let mut page = format!("{title}\n{OPEN}");
        let mut empty = true;
        for row in rows {
            if !empty && page.len() + row.len() + 1 + CLOSE.len() > PAGE_CHARS {
                page.push_str(CLOSE);
                pages.push(std::mem::take(&mut page));
                page = format!("{short} (continued)\n{OPEN}");
            }
            page.push_str(&row);
            page.push('\n');
            empty = false;
        }
        page.push_str(CLOSE);
        pages.push(page);
    }
    pages
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The text the rows of one side spell: context and that side's lines, decoded.
    fn spelled(rows: &[String], side: char) -> String {
        rows.iter()
            .filter(|row| row.starts_with(side) || row.starts_with(' '))
            .filter_map(|row| serde_json::from_str::<String>(&row[2..]).ok())
            .collect()
    }

    #[test]
    fn line_terminators_are_kept_and_distinguished() {
        assert_eq!(lines("a\r\nb\nc\rd"), vec!["a\r\n", "b\n", "c\r", "d"]);
        assert_eq!(lines("a\n\n"), vec!["a\n", "\n"]);
        assert!(lines("").is_empty());
        let (rows, added, removed) = diff(Some("x\ny\n"), "x\ny");
        assert_eq!((added, removed), (1, 1));
        assert_eq!(rows, vec![r#"  "x\n""#, r#"- "y\n""#, r#"+ "y""#]);
        let (rows, ..) = diff(Some("a\tb\n"), "a\tb\r\n");
        assert_eq!(rows, vec![r#"- "a\tb\n""#, r#"+ "a\tb\r\n""#]);
    }

    #[test]
    fn rows_are_printable_ascii_that_decodes_to_the_exact_text() {
        for text in [
            "plain",
            "tab\there",
            "quote \" backslash \\ tick `",
            "é 漢 \u{1f600}",
            "bidi \u{202e}evil\u{202c} zero\u{200b}width \u{feff}",
            "\u{7f}\u{85}\u{2028}",
        ] {
            let shown = exact(text);
            assert!(
                shown
                    .bytes()
                    .all(|b| (b' '..=b'~').contains(&b) && b != b'`'),
                "{shown}"
            );
            assert_eq!(
                serde_json::from_str::<String>(&shown).ok().as_deref(),
                Some(text)
            );
        }
    }

    #[test]
    fn long_files_show_only_the_change_with_context() {
        let before: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 50\n", "line fifty\n");
        let (rows, added, removed) = diff(Some(&before), &after);
        assert_eq!((added, removed), (1, 1));
        assert_eq!(
            rows.first().map(String::as_str),
            Some("@@ 47 unchanged lines @@")
        );
        assert_eq!(
            rows.last().map(String::as_str),
            Some("@@ 46 unchanged lines @@")
        );
        assert_eq!(rows.len(), 2 + 3 + 1 + 1 + 3);
    }

    #[test]
    fn pages_stay_within_their_bound() {
        let after = "y".repeat(5_000) + "\n" + &"z\n".repeat(400);
        let files = [FileView {
            path: "src/big.txt",
            before: None,
            after: &after,
        }];
        let pages = diff_pages(&files);
        assert!(pages.len() > 1);
        for page in &pages {
            assert!(
                page.chars().count() <= PAGE_CHARS + PIECE_CHARS * 6,
                "{}",
                page.len()
            );
        }
        assert!(pages[1].starts_with("\"src/big.txt\" (continued)"));
    }

    proptest! {
        /// Whatever the texts, the rows of each side decode back to exactly the part of
        /// that side they show, and a small file is shown whole.
        #[test]
        fn rows_decode_to_the_exact_texts(
            before in "[ab\r\n\t é]{0,40}",
            after in "[ab\r\n\t é]{0,40}",
        ) {
            let (rows, ..) = diff(Some(&before), &after);
            let rows: Vec<String> = rows.into_iter().filter(|r| !r.starts_with("@@")).collect();
            if lines(&before).len() <= CONTEXT_LINES && lines(&after).len() <= CONTEXT_LINES {
                prop_assert_eq!(spelled(&rows, '-'), before.as_str());
                prop_assert_eq!(spelled(&rows, '+'), after.as_str());
            }
            prop_assert!(before.contains(&spelled(&rows, '-')));
            prop_assert!(after.contains(&spelled(&rows, '+')));
        }
    }
}
