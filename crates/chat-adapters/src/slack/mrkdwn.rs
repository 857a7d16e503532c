//! Markdown, as models and commands write it, turned into Slack's own markup (`mrkdwn`):
//! bold, italics, strikethrough, links, code, headings, lists, quotes, and tables as
//! aligned code blocks (the same alignment as Discord's; a table that cannot be aligned
//! faithfully is shown in a code block as it was written).
//!
//! Every `&`, `<` and `>` that is text is escaped, so nothing a model writes can form
//! Slack's control sequences: `<!channel>`, `<!here>`, `<@U123>` and `<#C123>` arrive as
//! visible text and never ping anyone. The only `<...>` sequences in the output are the
//! links this module writes itself, to `http`, `https` and `mailto` targets.
//!
//! The cost is linear in the text: each line is scanned once per nesting level (at most
//! [`MAX_DEPTH`]), and every closing delimiter is found through tables computed in one pass
//! from the end of the line, so an unmatched `*` never rescans the rest of the line.

/// How deeply emphasis may nest before further delimiters are shown as they are.
pub(crate) const MAX_DEPTH: usize = 4;

/// `markdown` in Slack's markup.
#[must_use]
pub fn to_mrkdwn(markdown: &str) -> String {
    let lines: Vec<&str> = markdown.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut fence: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end_matches('\r');
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) && trimmed.trim_start_matches(marker).trim().is_empty() {
                fence = None;
                out.push("```".to_owned());
            } else {
                out.push(escape(line));
            }
            i += 1;
            continue;
        }
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            // Slack shows a language tag as text, so it is dropped.
            fence = Some(marker);
            out.push("```".to_owned());
            i += 1;
            continue;
        }
        if let Some(rows) = crate::tables::table_at(&lines, i) {
            let end = i + rows;
            let table = &lines[i..end];
            out.push("```".to_owned());
            match crate::tables::aligned_rows(table) {
                Ok(aligned) => out.push(escape(aligned.trim_end_matches('\n'))),
                Err(_) => out.extend(table.iter().map(|l| escape(l.trim_end_matches('\r')))),
            }
            out.push("```".to_owned());
            i = end;
            continue;
        }
        out.push(block_line(line));
        i += 1;
    }
    if fence.is_some() {
        out.push("```".to_owned());
    }
    out.join("\n")
}

/// `text` with Slack's three control characters escaped, for text shown as it is.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        c => out.push(c),
    }
}

/// One line outside code: headings, list items, quotes and rules, then inline markup.
fn block_line(line: &str) -> String {
    let indent_len = line.len() - line.trim_start().len();
    let (indent, rest) = line.split_at(indent_len);
    let hashes = rest.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && rest[hashes..].starts_with(' ') {
        let title = rest[hashes..].trim();
        return format!("{indent}*{}*", inline(title));
    }
    if let Some(item) = ["- ", "* ", "+ "]
        .iter()
        .find_map(|bullet| rest.strip_prefix(bullet))
    {
        if is_rule(rest) {
            return "──────────".to_owned();
        }
        return format!("{indent}• {}", inline(item));
    }
    if is_rule(rest) {
        return "──────────".to_owned();
    }
    if let Some(quote) = rest.strip_prefix('>') {
        // A quote marker is the one `>` left as it is: it cannot start a control sequence.
        return format!("{indent}> {}", inline(quote.trim_start()));
    }
    format!("{indent}{}", inline(rest))
}

fn is_rule(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| compact.chars().all(|c| c.to_string() == *m))
}

/// Inline markup of one line.
fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let scan = Scan::new(&chars);
    let mut out = String::with_capacity(text.len() + 8);
    scan.run(0, chars.len(), 0, &mut out);
    out
}

/// One line's characters with, for each position, where the next of each delimiter is.
struct Scan<'a> {
    chars: &'a [char],
    next: [Vec<usize>; DELIMITERS.len()],
    next_double: [Vec<usize>; 3],
}

/// The single characters whose next position is kept.
const DELIMITERS: [char; 6] = ['`', '*', '_', ']', ')', '>'];
/// The doubled delimiters whose next position is kept: `**`, `__`, `~~`.
const DOUBLED: [char; 3] = ['*', '_', '~'];

impl<'a> Scan<'a> {
    fn new(chars: &'a [char]) -> Self {
        let n = chars.len();
        let next = DELIMITERS.map(|d| {
            let mut v = vec![n; n + 1];
            for i in (0..n).rev() {
                v[i] = if chars[i] == d { i } else { v[i + 1] };
            }
            v
        });
        let next_double = DOUBLED.map(|d| {
            let mut v = vec![n; n + 1];
            for i in (0..n).rev() {
                v[i] = if chars[i] == d && chars.get(i + 1) == Some(&d) {
                    i
                } else {
                    v[i + 1]
                };
            }
            v
        });
        Self {
            chars,
            next,
            next_double,
        }
    }

    fn next_of(&self, c: char, from: usize) -> usize {
        let i = DELIMITERS.iter().position(|&d| d == c).unwrap_or(0);
        self.next[i].get(from).copied().unwrap_or(self.chars.len())
    }

    fn next_double_of(&self, c: char, from: usize) -> usize {
        let i = DOUBLED.iter().position(|&d| d == c).unwrap_or(0);
        self.next_double[i]
            .get(from)
            .copied()
            .unwrap_or(self.chars.len())
    }

    fn is_space(&self, i: usize) -> bool {
        self.chars.get(i).is_none_or(|c| c.is_whitespace())
    }

    fn is_word(&self, i: Option<usize>) -> bool {
        i.and_then(|i| self.chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    }

    /// Converts `chars[start..end]` into `out`.
    fn run(&self, start: usize, end: usize, depth: usize, out: &mut String) {
        let c = self.chars;
        let mut i = start;
        while i < end {
            let ch = c[i];
            // Code spans: their text is escaped and nothing else.
            if ch == '`' {
                let close = self.next_of('`', i + 1);
                if close < end && close > i + 1 {
                    out.push('`');
                    for &x in &c[i + 1..close] {
                        push_escaped(out, x);
                    }
                    out.push('`');
                    i = close + 1;
                    continue;
                }
            }
            if depth < MAX_DEPTH {
                // Bold (`**`, `__`) and strikethrough (`~~`).
                if DOUBLED.contains(&ch) && c.get(i + 1) == Some(&ch) {
                    let mut close = self.next_double_of(ch, i + 2);
                    // In a run of three (`***x***`) the bold ends at the last two.
                    if close + 2 < end && c[close + 2] == ch {
                        close += 1;
                    }
                    let boundary = ch != '_'
                        || (!self.is_word(i.checked_sub(1)) && !self.is_word(Some(close + 2)));
                    if close < end
                        && close + 1 < end
                        && close > i + 2
                        && !self.is_space(i + 2)
                        && !self.is_space(close - 1)
                        && boundary
                    {
                        let mark = if ch == '~' { '~' } else { '*' };
                        out.push(mark);
                        self.run(i + 2, close, depth + 1, out);
                        out.push(mark);
                        i = close + 2;
                        continue;
                    }
                }
                // Italics (`*x*`, `_x_`); an underscore only at word boundaries, so
                // snake_case names stay as they are.
                if ch == '*' || ch == '_' {
                    let close = self.next_of(ch, i + 1);
                    let boundary = ch == '*'
                        || (!self.is_word(i.checked_sub(1)) && !self.is_word(Some(close + 1)));
                    if close < end
                        && close > i + 1
                        && (close + 1 >= end || c[close + 1] != ch)
                        && !self.is_space(i + 1)
                        && !self.is_space(close - 1)
                        && boundary
                    {
                        out.push('_');
                        self.run(i + 1, close, depth + 1, out);
                        out.push('_');
                        i = close + 1;
                        continue;
                    }
                }
            }
            // Links: `[label](target)`.
            if ch == '[' {
                let bracket = self.next_of(']', i + 1);
                if bracket + 1 < end && c[bracket + 1] == '(' {
                    let paren = self.next_of(')', bracket + 2);
                    if paren < end {
                        let label: String = c[i + 1..bracket].iter().collect();
                        let target: String = c[bracket + 2..paren].iter().collect();
                        link(out, target.trim(), &label);
                        i = paren + 1;
                        continue;
                    }
                }
            }
            // Autolinks: `<https://...>`.
            if ch == '<' {
                let close = self.next_of('>', i + 1);
                if close < end {
                    let target: String = c[i + 1..close].iter().collect();
                    if is_link_target(&target) {
                        link(out, &target, "");
                        i = close + 1;
                        continue;
                    }
                }
            }
            push_escaped(out, ch);
            i += 1;
        }
    }
}

/// Whether Slack may be handed `target` as a link: web and mail addresses only, without
/// the characters that end a link sequence or spaces.
fn is_link_target(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://") || lower.starts_with("mailto:"))
        && target.len() > "http://".len()
        && !target
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '|'))
}

/// Writes a link, or the label and the target as text when the target is not linkable.
fn link(out: &mut String, target: &str, label: &str) {
    if !is_link_target(target) {
        out.push_str(&escape(label));
        if !target.is_empty() {
            out.push_str(" (");
            out.push_str(&escape(target));
            out.push(')');
        }
        return;
    }
    out.push('<');
    out.push_str(&escape(target));
    let label = label.trim();
    if !label.is_empty() && label != target {
        out.push('|');
        // A `|` or `>` would end the label early; `>` is escaped, `|` replaced.
        out.push_str(&escape(&label.replace('|', "¦")));
    }
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(markdown: &str, expect: &str) {
        assert_eq!(to_mrkdwn(markdown), expect, "{markdown:?}");
    }

    #[test]
    fn emphasis_links_and_code() {
        check("**bold** and *it* and _it_", "*bold* and _it_ and _it_");
        check("__bold__ ~~gone~~", "*bold* ~gone~");
        check("***both***", "*_both_*");
        check("snake_case_name and 2*3*4", "snake_case_name and 2_3_4");
        check("a * b * c", "a * b * c");
        check(
            "[the docs](https://x.test/a?b=1&c=2)",
            "<https://x.test/a?b=1&amp;c=2|the docs>",
        );
        check("<https://x.test>", "<https://x.test>");
        check("[x](javascript:alert(1))", "x (javascript:alert(1))");
        check("`a < b && **c**`", "`a &lt; b &amp;&amp; **c**`");
    }

    #[test]
    fn blocks() {
        check("# Title\n## Sub", "*Title*\n*Sub*");
        check("- one\n  * two\n3. three", "• one\n  • two\n3. three");
        check("> quoted **bit**", "> quoted *bit*");
        check("---", "──────────");
        check(
            "```rust\nfn x() -> u8 { 1 < 2 }\n```\nafter",
            "```\nfn x() -&gt; u8 { 1 &lt; 2 }\n```\nafter",
        );
        check("```\nopen fence", "```\nopen fence\n```");
    }

    #[test]
    fn tables_become_aligned_code_blocks() {
        check(
            "| Name | Qty |\n|:--|--:|\n| apple | 3 |\n| kiwi | 12 |\nafter",
            "```\nName  | Qty\n------+----\napple |   3\nkiwi  |  12\n```\nafter",
        );
        // Cells keep their text, markup included, as on Discord.
        check(
            "| a | b |\n|---|---|\n| **x** | `y` |",
            "```\na     | b\n------+----\n**x** | `y`\n```",
        );
    }

    #[test]
    fn a_table_that_cannot_be_aligned_is_shown_as_written() {
        // A row with more cells than the header, and a cell of unknown display width: no
        // cell is dropped and nothing is misaligned, the rows stay as the model wrote them.
        check(
            "| a | b |\n|---|---|\n| 1 | 2 | 3 |",
            "```\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n```",
        );
        check(
            "| a |\n|---|\n| e\u{301} < f |",
            "```\n| a |\n|---|\n| e\u{301} &lt; f |\n```",
        );
    }

    #[test]
    fn mentions_and_control_sequences_are_never_formed() {
        for text in [
            "<!channel> hello",
            "<!here|here>",
            "<@U123> and <#C1>",
            "[<!channel>](https://x.test)",
            "[x](https://x.test/<!channel>)",
            "`<!everyone>`",
            "```\n<!channel>\n```",
            "| a | <@U1> |\n|---|---|\n| <!here> | b |",
        ] {
            let out = to_mrkdwn(text);
            assert!(!out.contains("<!"), "{text:?} → {out:?}");
            assert!(!out.contains("<@"), "{text:?} → {out:?}");
            assert!(!out.contains("<#"), "{text:?} → {out:?}");
        }
    }

    #[test]
    fn unmatched_delimiters_cost_linear_time() {
        // 200,000 unmatched openers on one line: a rescan per opener would not finish.
        let text = "[_a(".repeat(50_000);
        let out = to_mrkdwn(&text);
        assert_eq!(out, text);
    }

    proptest! {
        #[test]
        fn no_input_forms_a_control_sequence(text in "[<!@#&>*_`\\[\\]()a-c |\n-]{0,200}") {
            let out = to_mrkdwn(&text);
            // Every `<` we write opens a link to an allowed target.
            for (i, _) in out.match_indices('<') {
                let rest = &out[i + 1..];
                prop_assert!(
                    rest.starts_with("http://") || rest.starts_with("https://") || rest.starts_with("mailto:"),
                    "{out:?}"
                );
            }
        }
    }
}
