//! Markdown tables as aligned plain text, for platforms whose markup has no tables (Slack
//! shows the result in a code block). Kept apart from the rest of the conversion because it
//! is the one part another platform may share.

/// Whether `line` is a table's separator row, such as `|---|:--:|` or `--- | ---`.
#[must_use]
pub fn is_separator(line: &str) -> bool {
    let cells = cells(line);
    !cells.is_empty()
        && cells.iter().all(|cell| {
            let core = cell.trim_start_matches(':').trim_end_matches(':');
            !core.is_empty() && core.chars().all(|c| c == '-')
        })
}

/// The rows of a Markdown table (header, separator, body) as aligned text: columns padded
/// to their widest cell (in characters), aligned as the separator says, with `|` between
/// columns and a `-+-` rule under the header. Inline code and bold markers are dropped,
/// since the result is shown as code.
#[must_use]
pub fn aligned(rows: &[&str]) -> String {
    let align: Vec<Align> = rows
        .get(1)
        .map(|sep| cells(sep).iter().map(|c| Align::of(c)).collect())
        .unwrap_or_default();
    let table: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, row)| cells(row).iter().map(|c| plain(c)).collect())
        .collect();
    let columns = table.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for row in &table {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = Vec::with_capacity(table.len() + 1);
    for (n, row) in table.iter().enumerate() {
        let mut line = String::new();
        for (i, width) in widths.iter().enumerate() {
            if i > 0 {
                line.push_str(" | ");
            }
            let cell = row.get(i).map_or("", String::as_str);
            let pad = width - cell.chars().count();
            let (left, right) = match align.get(i).copied().unwrap_or(Align::Left) {
                Align::Left => (0, pad),
                Align::Right => (pad, 0),
                Align::Center => (pad / 2, pad - pad / 2),
            };
            line.push_str(&" ".repeat(left));
            line.push_str(cell);
            line.push_str(&" ".repeat(right));
        }
        out.push(line.trim_end().to_owned());
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push(rule.join("-+-"));
        }
    }
    out.join("\n")
}

#[derive(Debug, Clone, Copy)]
enum Align {
    Left,
    Right,
    Center,
}

impl Align {
    fn of(separator_cell: &str) -> Self {
        match (
            separator_cell.starts_with(':'),
            separator_cell.ends_with(':'),
        ) {
            (true, true) => Self::Center,
            (false, true) => Self::Right,
            _ => Self::Left,
        }
    }
}

/// A row's cells: split at `|` (not at `\|`), outer pipes dropped, each trimmed.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

fn plain(cell: &str) -> String {
    cell.replace("**", "").replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_as_the_separator_says() {
        let rows = [
            "| Item | Price | Note |",
            "|:-----|------:|:----:|",
            "| **tea** | 3 | hot |",
            "| `coffee` | 12.50 | x |",
            "| a \\| b |",
        ];
        assert_eq!(
            aligned(&rows),
            "Item   | Price | Note\n-------+-------+-----\ntea    |     3 | hot\ncoffee | 12.50 |  x\na | b  |       |"
        );
        assert!(is_separator("|---|:--:|"));
        assert!(is_separator("--- | ---"));
        assert!(!is_separator("| a | b |"));
        assert!(!is_separator("|  |"));
    }
}
