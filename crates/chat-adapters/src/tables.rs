//! Markdown tables as aligned fixed-width code blocks, for platforms whose Markdown has no
//! tables (Discord, and Slack through `aligned_rows`). The conversion is pure text work: every header and cell is kept, only
//! spacing changes, and no model is asked to reformat anything.
//!
//! Only tables outside code fences are converted. A table that cannot be shown faithfully in
//! a code block is reported instead of converted, so that [`crate::fit`] can post the exact
//! text as `answer.md`: a cell holding a backtick fence (it would end the block early), a row
//! with more cells than the header (GitHub's rules drop the extra cells, so some text would
//! vanish), or characters whose display width a monospace font does not fix (zero-width
//! joiners, combining marks, control characters), which would break the alignment the
//! block promises. A converted text longer than the caller's budget is reported too: padding
//! only ever adds text, and an answer that grew past its card must not be cut.
//!
//! The work is linear in the text: each line is looked at a constant number of times.

use std::borrow::Cow;

/// How a platform shows Markdown tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableStyle {
    /// The platform renders Markdown tables itself (the web console), or its text is left as
    /// the model wrote it: nothing changes.
    Markdown,
    /// The platform has no tables: each one becomes an aligned code block.
    FixedWidth,
}

/// Why a text's tables could not be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A cell holds a backtick fence, which would end the code block early.
    #[error("a table cell holds a code fence")]
    Fence,
    /// A row has more cells than the header; Markdown would drop the extra ones.
    #[error("a table row has more cells than its header")]
    Ragged,
    /// A cell holds characters whose width a monospace font does not fix.
    #[error("a table cell holds characters of unknown width")]
    Width,
    /// The converted text is longer than the budget.
    #[error("the aligned table is longer than the message may be")]
    TooWide,
}

/// `text` with every Markdown table outside code fences turned into an aligned code block,
/// or the text itself when it has none. `max_units` bounds the converted text in UTF-16
/// units.
///
/// # Errors
///
/// A [`TableError`] when a table cannot be shown faithfully, or the result would be longer
/// than `max_units`.
pub fn align_tables(text: &str, max_units: usize) -> Result<Cow<'_, str>, TableError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut changed = false;
    let mut fence: Option<(char, usize)> = None;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        if let Some(marker) = fence_marker(line) {
            fence = match fence {
                None => Some(marker),
                Some(open) if marker.0 == open.0 && marker.1 >= open.1 => None,
                open => open,
            };
        }
        if fence.is_none()
            && let Some(rows) = table_at(&lines, index)
        {
            let end = index + rows;
            out.push_str(&render(&lines[index..end])?);
            // Keep whatever line break ended the table's last line.
            if !lines[end - 1].ends_with('\n') {
                out.pop();
            }
            changed = true;
            index = end;
            continue;
        }
        out.push_str(line);
        index += 1;
    }
    if !changed {
        return Ok(Cow::Borrowed(text));
    }
    if crate::fit::units(&out) > max_units {
        return Err(TableError::TooWide);
    }
    Ok(Cow::Owned(out))
}

/// A fence line's character and length (```` ``` ```` or `~~~`, indented at most three
/// spaces).
fn fence_marker(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let first = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let count = trimmed.chars().take_while(|c| *c == first).count();
    (count >= 3).then_some((first, count))
}

/// How many lines the table starting at `index` takes (header, delimiter, rows), if one
/// starts there.
pub(crate) fn table_at(lines: &[&str], index: usize) -> Option<usize> {
    let header = lines.get(index)?;
    let delimiter = lines.get(index + 1)?;
    if !header.contains('|') {
        return None;
    }
    let columns = cells(header).len();
    let aligns = delimiter_row(delimiter)?;
    if aligns.len() != columns {
        return None;
    }
    let mut end = index + 2;
    while let Some(line) = lines.get(end) {
        if line.trim().is_empty() || !line.contains('|') || fence_marker(line).is_some() {
            break;
        }
        end += 1;
    }
    Some(end - index)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Center,
    Right,
}

/// The alignments of a delimiter row (`| :--- | :-: | --: |`), or `None` for any other line.
fn delimiter_row(line: &str) -> Option<Vec<Align>> {
    if !line.contains('-') {
        return None;
    }
    cells(line)
        .iter()
        .map(|cell| {
            let cell = cell.trim();
            let left = cell.starts_with(':');
            let right = cell.ends_with(':') && cell.len() > 1;
            let dashes = cell.trim_start_matches(':').trim_end_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|c| c == '-') {
                return None;
            }
            Some(match (left, right) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

/// A row's cells: split at unescaped pipes, the outer pipes dropped, each cell trimmed and
/// its escaped pipes unescaped.
fn cells(line: &str) -> Vec<String> {
    let line = line.trim();
    let line = line.strip_prefix('|').unwrap_or(line);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut escaped = false;
    for c in line.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => cells.push(std::mem::take(&mut cell)),
            _ => {
                if escaped && c != '|' {
                    cell.push('\\');
                }
                escaped = false;
                cell.push(c);
            }
        }
    }
    if escaped {
        cell.push('\\');
    }
    // A trailing pipe ends the last cell rather than starting an empty one.
    if !cell.trim().is_empty() || !line.trim_end().ends_with('|') {
        cells.push(cell);
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The table's lines as one code block, each line ending in a line break.
fn render(lines: &[&str]) -> Result<String, TableError> {
    let mut out = String::from("```\n");
    out.push_str(&aligned_rows(lines)?);
    out.push_str("```\n");
    Ok(out)
}

/// A table's lines (header, delimiter row, body rows, as [`table_at`] found them) as aligned
/// fixed-width text, each line ending in a line break: columns padded to their widest cell,
/// aligned as the delimiter row says, `|` between columns and a `-+-` rule under the header.
/// Every cell's text is kept as written. Shared by every platform without tables: Discord
/// wraps the result in a code block here, Slack after escaping it.
///
/// # Errors
///
/// A [`TableError`] when the table cannot be shown faithfully (see the module docs).
pub(crate) fn aligned_rows(lines: &[&str]) -> Result<String, TableError> {
    let Some((first, rest)) = lines.split_first() else {
        return Ok(String::new());
    };
    let header = cells(first);
    let aligns = rest
        .first()
        .and_then(|d| delimiter_row(d))
        .unwrap_or_default();
    let columns = header.len();
    let mut rows = vec![header];
    for line in rest.iter().skip(1) {
        let mut row = cells(line);
        if row.len() > columns {
            return Err(TableError::Ragged);
        }
        row.resize(columns, String::new());
        rows.push(row);
    }
    let mut widths = vec![0usize; columns];
    for row in &rows {
        for (column, cell) in row.iter().enumerate() {
            if cell.contains("```") || cell.contains("~~~") {
                return Err(TableError::Fence);
            }
            widths[column] = widths[column].max(width(cell)?);
        }
    }
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            if column > 0 {
                line.push_str(" | ");
            }
            let pad = widths[column] - width(cell)?;
            let (before, after) = match aligns.get(column).copied().unwrap_or(Align::Left) {
                Align::Left => (0, pad),
                Align::Right => (pad, 0),
                Align::Center => (pad / 2, pad - pad / 2),
            };
            line.extend(std::iter::repeat_n(' ', before));
            line.push_str(cell);
            line.extend(std::iter::repeat_n(' ', after));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat((*w).max(1))).collect();
            out.push_str(&rule.join("-+-"));
            out.push('\n');
        }
    }
    Ok(out)
}

/// The columns `text` takes in a monospace font: two for wide (East Asian, emoji) characters,
/// one for others, and an error for characters without a fixed width.
fn width(text: &str) -> Result<usize, TableError> {
    let mut total = 0usize;
    for c in text.chars() {
        let code = u32::from(c);
        let unknown = c.is_control()
            || matches!(code,
                0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05BD | 0x0610..=0x061A
                | 0x064B..=0x065F | 0x0E31 | 0x0E34..=0x0E3A | 0x1AB0..=0x1AFF
                | 0x1DC0..=0x1DFF | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064
                | 0x20D0..=0x20FF | 0xFE00..=0xFE0F | 0xFE20..=0xFE2F | 0xFEFF
                | 0x1F3FB..=0x1F3FF | 0xE0000..=0xE007F);
        if unknown {
            return Err(TableError::Width);
        }
        let wide = matches!(code,
            0x1100..=0x115F | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF | 0xA000..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x1F300..=0x1F64F
            | 0x1F900..=0x1F9FF | 0x1FA70..=0x1FAFF | 0x20000..=0x3FFFD);
        total += if wide { 2 } else { 1 };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(input: &str, expect: Expect) {
        let shown = match align_tables(input, 4_000) {
            Ok(text) => text.into_owned(),
            Err(error) => format!("error: {error}"),
        };
        expect.assert_eq(&shown);
    }

    #[test]
    fn a_table_becomes_an_aligned_block_with_its_alignments() {
        check(
            "Fruit:\n\n| Name | Qty | Note |\n|:-----|----:|:----:|\n| apple | 3 | red |\n| kiwi | 12 | |\n\nDone.",
            expect![[r#"
                Fruit:

                ```
                Name  | Qty | Note
                ------+-----+-----
                apple |   3 | red
                kiwi  |  12 |
                ```

                Done."#]],
        );
    }

    #[test]
    fn tables_inside_code_fences_and_lookalikes_stay_as_they_are() {
        check(
            "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\na | b\nno delimiter",
            expect![[r#"
                ```
                | a | b |
                |---|---|
                | 1 | 2 |
                ```
                a | b
                no delimiter"#]],
        );
    }

    #[test]
    fn cells_keep_escaped_pipes_markup_and_wide_characters() {
        check(
            "a | b\n--|--\n`x\\|y` | **bold**\n日本 | 😀\n",
            expect![[r#"
                ```
                a     | b
                ------+---------
                `x|y` | **bold**
                日本  | 😀
                ```
            "#]],
        );
    }

    #[test]
    fn tables_that_cannot_be_shown_faithfully_are_reported() {
        check(
            "| a |\n|---|\n| x | extra |",
            expect!["error: a table row has more cells than its header"],
        );
        check(
            "| a |\n|---|\n| ```rust |",
            expect!["error: a table cell holds a code fence"],
        );
        check(
            "| a |\n|---|\n| e\u{301} |",
            expect!["error: a table cell holds characters of unknown width"],
        );
        let wide = format!("| a | b |\n|---|---|\n| {} | x |\n", "y".repeat(30));
        assert_eq!(align_tables(&wide, 40), Err(TableError::TooWide));
        assert!(align_tables(&wide, 4_000).is_ok());
    }

    #[test]
    fn text_without_tables_is_borrowed_unchanged() {
        let text = "plain | text\nwith a pipe";
        assert!(matches!(align_tables(text, 10), Ok(Cow::Borrowed(t)) if t == text));
    }

    #[test]
    fn many_table_lines_are_handled_in_linear_time() {
        let mut text = String::from("| a | b |\n|---|---|\n");
        for n in 0..20_000 {
            text.push_str(&format!("| {n} | x |\n"));
        }
        let out = align_tables(&text, usize::MAX).expect("converts");
        assert_eq!(out.lines().count(), 20_000 + 4);
        // Many lone pipes and delimiter lookalikes are no slower.
        let noise = "|\n-|\n".repeat(50_000);
        assert!(align_tables(&noise, usize::MAX).is_ok());
    }
}
