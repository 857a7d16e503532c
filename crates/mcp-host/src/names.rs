//! Tool names: the MCP naming rule and an unambiguous display of names that break it. The
//! wire-safe function name a model calls a tool by is `yetibot-conversation`'s
//! `function_name`.

use yetibot_conversation::limits::MAX_TOOL_NAME_CHARS;

/// How many characters of a rejected name are shown.
const SHOWN_NAME_CHARS: usize = 64;

/// Whether `name` follows the MCP tool naming rule: 1 to [`MAX_TOOL_NAME_CHARS`] characters,
/// each an ASCII letter, digit, `_`, `.` or `-`. Lookalike letters from other scripts,
/// whitespace, control, zero-width and bidirectional characters all break it.
#[must_use]
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A name that broke the naming rule, made safe and unambiguous to show: characters outside
/// the rule's set are written as `\u{…}` escapes (so a lookalike or an invisible character
/// cannot pass for a real name), and the result is cut to 64 characters plus `…`.
pub(crate) fn shown_name(name: &str) -> String {
    let mut shown = String::new();
    for (count, c) in name.chars().enumerate() {
        if count == SHOWN_NAME_CHARS {
            shown.push('…');
            break;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
            shown.push(c);
        } else {
            shown.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_naming_rule() {
        for good in ["echo", "a", "web_search-exa.v2", &"n".repeat(128)] {
            assert!(is_valid_tool_name(good), "{good}");
        }
        for bad in [
            "",
            "\u{435}cho",
            "ec\u{200b}ho",
            "echo\u{202e}",
            "\u{1b}[31mred",
            "two\nlines",
            "with space",
            "a/b",
            "é",
            &"n".repeat(129),
        ] {
            assert!(!is_valid_tool_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn rejected_names_are_shown_escaped_and_bounded() {
        assert_eq!(shown_name("ec\u{200b}ho"), "ec\\u{200b}ho");
        assert_eq!(shown_name("\u{435}cho"), "\\u{435}cho");
        assert_eq!(shown_name("a\nb"), "a\\u{a}b");
        assert_eq!(
            shown_name(&"n".repeat(5_000)),
            format!("{}…", "n".repeat(64))
        );
    }

    proptest! {
        #[test]
        fn shown_names_are_plain_ascii(name in "\\PC{0,300}") {
            let shown = shown_name(&name);
            prop_assert!(shown.chars().all(|c| c == '…' || (c.is_ascii_graphic())));
            prop_assert!(shown.chars().count() <= 64 * 10 + 1);
        }
    }
}
