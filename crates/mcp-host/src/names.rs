//! Tool names: the MCP naming rule, the wire-safe function name a model calls a tool by, and
//! an unambiguous display of names that break the rule.

/// The longest tool name accepted, in characters (the MCP naming rule).
pub const MAX_TOOL_NAME_CHARS: usize = 128;
/// The longest function name the Chat Completions and Responses APIs accept, in bytes.
pub const MAX_FUNCTION_NAME_BYTES: usize = 64;
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

/// The function name a model calls the tool `name` of `source` by: `source__name`, every
/// character outside `[A-Za-z0-9_-]` replaced by `_`, cut to [`MAX_FUNCTION_NAME_BYTES`].
/// Two tools with the same function name cannot both be offered; the catalog refuses both.
#[must_use]
pub fn function_name(source: &str, name: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut wire = format!("{}__{}", clean(source), clean(name));
    // Every character is ASCII now, so any byte index is a character boundary.
    wire.truncate(MAX_FUNCTION_NAME_BYTES);
    wire
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
    fn function_names_are_wire_safe() {
        assert_eq!(
            function_name("tavily", "tavily-search"),
            "tavily__tavily-search"
        );
        assert_eq!(function_name("a.b", "c"), function_name("a_b", "c"));
        assert_eq!(function_name("srv", "wire.name"), "srv__wire_name");
        assert_eq!(function_name("é", "x"), "___x");
        assert_eq!(function_name("s", &"x".repeat(200)).len(), 64);
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
        fn function_names_match_the_wire_rule(source in "\\PC{0,40}", name in "\\PC{0,140}") {
            let wire = function_name(&source, &name);
            prop_assert!(wire.len() <= MAX_FUNCTION_NAME_BYTES);
            prop_assert!(wire.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        }

        #[test]
        fn shown_names_are_plain_ascii(name in "\\PC{0,300}") {
            let shown = shown_name(&name);
            prop_assert!(shown.chars().all(|c| c == '…' || (c.is_ascii_graphic())));
            prop_assert!(shown.chars().count() <= 64 * 10 + 1);
        }
    }
}
