//! The command language's syntax: a pure parser from one line to a tree, and the printer
//! that turns a tree back into the same line. No evaluation and no I/O happen here.
//!
//! The rules are upstream Yetibot's:
//! - An expression is stages joined by ` | `: the pipe needs one space on each side, and
//!   those two spaces belong to the pipe; any others stay with the stage as typed. A `|`
//!   with no space on either side is an ordinary character (`grep a|b`); one with a space on
//!   one side only is an error.
//! - `` `expr` `` and `$(expr)` are sub-expressions. Only `$()` nests: inside backticks the
//!   next backtick closes them. A `$` not followed by `(` is an ordinary character, and so
//!   are parentheses outside `$(...)`.
//! - Quoted text is literal: a `"` or `'` that starts a word opens a quote that runs to the
//!   next same quote, and pipes, backticks and `$(` inside it are plain characters. The
//!   quotes themselves stay in the text (commands such as `alias` remove them). An apostrophe
//!   inside a word (`don't`) is just a character, and so is a quote that is never closed.
//! - Whitespace is kept exactly as typed.

use crate::limits::{MAX_LINE_BYTES, MAX_NESTING, MAX_STAGES};
use std::fmt;

/// A parsed expression: one or more stages, piped left to right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// The stages, in order; never empty.
    pub stages: Vec<Stage>,
}

/// One stage of a pipeline: text as typed, interleaved with sub-expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The pieces, in order. Adjacent text is always merged into one piece.
    pub parts: Vec<Part>,
}

/// A piece of a stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text exactly as typed, quotes included.
    Text(String),
    /// A sub-expression, evaluated when its stage is reached.
    Sub(Sub),
}

/// A sub-expression and how it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sub {
    /// Backticks or `$(...)`.
    pub style: SubStyle,
    /// What it contains.
    pub expr: Expr,
}

/// The two ways to write a sub-expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubStyle {
    /// `` `expr` ``: cannot contain another backtick sub-expression.
    Backtick,
    /// `$(expr)`: nests.
    Dollar,
}

/// Why a line could not be parsed. `at` is the byte offset of the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The line is longer than [`MAX_LINE_BYTES`].
    #[error("the command is longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    /// The line, or a stage of it, has nothing to run.
    #[error("there is no command {}", place(*.at))]
    EmptyStage {
        /// Where the empty stage is.
        at: usize,
    },
    /// A `|` has a space on one side only.
    #[error("a pipe needs one space on each side ({})", place(*.at))]
    LopsidedPipe {
        /// Where the pipe is.
        at: usize,
    },
    /// A `$(` is never closed.
    #[error("`$(` is never closed ({})", place(*.at))]
    UnclosedDollar {
        /// Where it opens.
        at: usize,
    },
    /// A backtick is never closed.
    #[error("a backtick is never closed ({})", place(*.at))]
    UnclosedBacktick {
        /// Where it opens.
        at: usize,
    },
    /// Sub-expressions nest deeper than [`MAX_NESTING`].
    #[error("sub-expressions nest more than {MAX_NESTING} deep ({})", place(*.at))]
    TooDeep {
        /// Where the innermost one opens.
        at: usize,
    },
    /// More than [`MAX_STAGES`] stages in one expression.
    #[error("a pipeline may have at most {MAX_STAGES} stages ({})", place(*.at))]
    TooManyStages {
        /// Where the stage past the limit starts.
        at: usize,
    },
}

fn place(at: usize) -> String {
    format!("at character {}", at + 1)
}

/// Parses one expression (without the command prefix).
///
/// # Errors
///
/// A [`ParseError`] saying what is wrong and where. Parsing is linear in the length of the
/// line and never panics.
pub fn parse(line: &str) -> Result<Expr, ParseError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ParseError::TooLong);
    }
    let mut parser = Parser {
        text: line,
        bytes: line.as_bytes(),
        pos: 0,
        no_quote_after: [None, None],
    };
    parser.expr(Close::End, 0, 0, false)
}

impl Expr {
    /// Prints the expression back as a line that parses to the same tree.
    #[must_use]
    pub fn to_line(&self) -> String {
        self.to_string()
    }

    /// The first stage's text before any sub-expression, which names the command.
    #[must_use]
    pub fn first_word(&self) -> Option<&str> {
        self.stages.first()?.first_word()
    }
}

impl Stage {
    /// The command word, when the stage starts with literal text.
    #[must_use]
    pub fn first_word(&self) -> Option<&str> {
        match self.parts.first()? {
            Part::Text(text) => text.split_whitespace().next(),
            Part::Sub(_) => None,
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, stage) in self.stages.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{stage}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Text(text) => f.write_str(text)?,
                Part::Sub(sub) => write!(f, "{sub}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Sub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.style {
            SubStyle::Backtick => write!(f, "`{}`", self.expr),
            SubStyle::Dollar => write!(f, "$({})", self.expr),
        }
    }
}

/// What ends the expression being parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// The end of the line.
    End,
    /// A backtick.
    Backtick,
    /// The `)` that matches a `$(`.
    Paren,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// For `"` and `'`: a position after which the line has no such quote, once a search
    /// found none, so that unclosed quotes never make parsing quadratic.
    no_quote_after: [Option<usize>; 2],
}

impl Parser<'_> {
    /// Parses stages until `close` (consumed) or the end of the line. `depth` is the
    /// nesting level, `opened` where this sub-expression opened, and `within_backtick`
    /// whether any enclosing sub-expression is a backtick one (then a backtick closes it).
    fn expr(
        &mut self,
        close: Close,
        depth: usize,
        opened: usize,
        within_backtick: bool,
    ) -> Result<Expr, ParseError> {
        let mut stages = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        let mut text_start = self.pos;
        let mut stage_start = self.pos;
        let mut parens = 0usize;
        loop {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return match close {
                    Close::End => {
                        push_text(&mut parts, &self.text[text_start..self.pos]);
                        finish_stage(&mut stages, parts, stage_start)?;
                        Ok(Expr { stages })
                    }
                    Close::Backtick => Err(ParseError::UnclosedBacktick { at: opened }),
                    Close::Paren => Err(ParseError::UnclosedDollar { at: opened }),
                };
            };
            match byte {
                b'`' => {
                    push_text(&mut parts, &self.text[text_start..self.pos]);
                    match close {
                        Close::Backtick => {
                            self.pos += 1;
                            finish_stage(&mut stages, parts, stage_start)?;
                            return Ok(Expr { stages });
                        }
                        // A backtick cannot close the backticks around a `$(` still open.
                        Close::Paren if within_backtick => {
                            return Err(ParseError::UnclosedDollar { at: opened });
                        }
                        Close::Paren | Close::End => {}
                    }
                    let at = self.pos;
                    self.pos += 1;
                    let expr = self.nested(Close::Backtick, depth, at, true)?;
                    parts.push(Part::Sub(Sub {
                        style: SubStyle::Backtick,
                        expr,
                    }));
                    text_start = self.pos;
                }
                b'$' if self.bytes.get(self.pos + 1) == Some(&b'(') => {
                    push_text(&mut parts, &self.text[text_start..self.pos]);
                    let at = self.pos;
                    self.pos += 2;
                    let expr = self.nested(Close::Paren, depth, at, within_backtick)?;
                    parts.push(Part::Sub(Sub {
                        style: SubStyle::Dollar,
                        expr,
                    }));
                    text_start = self.pos;
                }
                b'(' => {
                    parens += 1;
                    self.pos += 1;
                }
                b')' if close == Close::Paren && parens == 0 => {
                    push_text(&mut parts, &self.text[text_start..self.pos]);
                    self.pos += 1;
                    finish_stage(&mut stages, parts, stage_start)?;
                    return Ok(Expr { stages });
                }
                b')' => {
                    parens = parens.saturating_sub(1);
                    self.pos += 1;
                }
                b'"' | b'\'' if self.word_start() => {
                    self.pos = self.quote_end(byte).unwrap_or(self.pos + 1);
                }
                b'|' => {
                    let before = self.pos.checked_sub(1).map(|i| self.bytes[i]);
                    let after = self.bytes.get(self.pos + 1).copied();
                    match (before == Some(b' '), after == Some(b' ')) {
                        (true, true) => {
                            // The spaces on either side belong to the pipe.
                            let end = (self.pos - 1).max(text_start);
                            push_text(&mut parts, &self.text[text_start..end]);
                            finish_stage(&mut stages, std::mem::take(&mut parts), stage_start)?;
                            if stages.len() >= MAX_STAGES {
                                return Err(ParseError::TooManyStages { at: self.pos + 2 });
                            }
                            self.pos += 2;
                            text_start = self.pos;
                            stage_start = self.pos;
                        }
                        (false, false) if before.is_some() && after.is_some() => self.pos += 1,
                        _ => return Err(ParseError::LopsidedPipe { at: self.pos }),
                    }
                }
                _ => self.pos += 1,
            }
        }
    }

    fn nested(
        &mut self,
        close: Close,
        depth: usize,
        at: usize,
        within_backtick: bool,
    ) -> Result<Expr, ParseError> {
        if depth + 1 > MAX_NESTING {
            return Err(ParseError::TooDeep { at });
        }
        self.expr(close, depth + 1, at, within_backtick)
    }

    /// Whether the character at `pos` starts a word.
    fn word_start(&self) -> bool {
        match self.pos.checked_sub(1).map(|i| self.bytes[i]) {
            None => true,
            Some(b) => b.is_ascii_whitespace() || b == b'(' || b == b'`',
        }
    }

    /// The position just after the quote that closes the one at `pos`, if any.
    fn quote_end(&mut self, quote: u8) -> Option<usize> {
        let slot = usize::from(quote == b'\'');
        if self.no_quote_after[slot].is_some_and(|after| self.pos >= after) {
            return None;
        }
        let from = self.pos + 1;
        match memchr::memchr(quote, self.bytes.get(from..).unwrap_or_default()) {
            Some(offset) => Some(from + offset + 1),
            None => {
                self.no_quote_after[slot] = Some(self.pos);
                None
            }
        }
    }
}

fn push_text(parts: &mut Vec<Part>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Part::Text(last)) = parts.last_mut() {
        last.push_str(text);
    } else {
        parts.push(Part::Text(text.to_owned()));
    }
}

fn finish_stage(stages: &mut Vec<Stage>, parts: Vec<Part>, start: usize) -> Result<(), ParseError> {
    let blank = parts.iter().all(|part| match part {
        Part::Text(text) => text.trim().is_empty(),
        Part::Sub(_) => false,
    });
    if blank {
        return Err(ParseError::EmptyStage { at: start });
    }
    stages.push(Stage { parts });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Part {
        Part::Text(s.to_owned())
    }

    fn stage(parts: Vec<Part>) -> Stage {
        Stage { parts }
    }

    fn stages(line: &str) -> Vec<String> {
        parse(line)
            .expect("parses")
            .stages
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn pipes_need_a_space_on_each_side_and_keep_the_rest() {
        assert_eq!(stages("echo 1 | echo 2"), ["echo 1", "echo 2"]);
        assert_eq!(stages("echo a  | echo b"), ["echo a ", "echo b"]);
        assert_eq!(stages("echo a |  echo b"), ["echo a", " echo b"]);
        assert_eq!(stages("grep foo|bar"), ["grep foo|bar"]);
        assert_eq!(stages("grep a||b"), ["grep a||b"]);
        for bad in [
            "echo a |echo b",
            "echo a| echo b",
            "echo a |",
            "| echo",
            "echo |",
        ] {
            assert!(
                matches!(
                    parse(bad),
                    Err(ParseError::LopsidedPipe { .. } | ParseError::EmptyStage { .. })
                ),
                "{bad}: {:?}",
                parse(bad)
            );
        }
        assert_eq!(parse("echo a | "), Err(ParseError::EmptyStage { at: 9 }));
        assert_eq!(
            parse("echo a |  | b"),
            Err(ParseError::EmptyStage { at: 9 })
        );
    }

    #[test]
    fn quotes_keep_pipes_and_sub_expressions_literal() {
        assert_eq!(
            stages(r#"alias x = "echo a | echo `b`""#),
            [r#"alias x = "echo a | echo `b`""#]
        );
        assert_eq!(stages("echo 'a | b' | echo c"), ["echo 'a | b'", "echo c"]);
        assert_eq!(
            stages("echo don't | echo it's"),
            ["echo don't", "echo it's"]
        );
        assert_eq!(
            stages(r#"echo "open | echo x"#),
            [r#"echo "open"#, "echo x"]
        );
    }

    #[test]
    fn sub_expressions_nest_only_with_dollar() {
        let expr = parse("echo `echo a` $(echo $(echo b) | echo c) (x)").expect("parses");
        assert_eq!(expr.stages.len(), 1);
        let parts = &expr.stages[0].parts;
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[0], text("echo "));
        assert!(matches!(
            &parts[1],
            Part::Sub(Sub {
                style: SubStyle::Backtick,
                ..
            })
        ));
        assert_eq!(parts[4], text(" (x)"));
        let Part::Sub(dollar) = &parts[3] else {
            panic!("expected $()")
        };
        assert_eq!(dollar.expr.stages.len(), 2);
        assert_eq!(dollar.to_string(), "$(echo $(echo b) | echo c)");
        // Inside backticks the next backtick closes: no nesting.
        let expr = parse("echo `echo a `echo b` c`").expect("parses");
        assert_eq!(expr.stages[0].parts.len(), 4);
        assert_eq!(
            parse("echo $(echo (a) b)").expect("parses").to_line(),
            "echo $(echo (a) b)"
        );
    }

    #[test]
    fn unclosed_sub_expressions_are_errors() {
        assert_eq!(
            parse("echo $(echo a"),
            Err(ParseError::UnclosedDollar { at: 5 })
        );
        assert_eq!(
            parse("echo `a"),
            Err(ParseError::UnclosedBacktick { at: 5 })
        );
        assert_eq!(
            parse("echo $"),
            Ok(Expr {
                stages: vec![stage(vec![text("echo $")])]
            })
        );
        assert_eq!(parse("`$(a`"), Err(ParseError::UnclosedDollar { at: 1 }));
    }

    #[test]
    fn bounds_are_errors() {
        let deep = format!("{}x{}", "$(".repeat(9), ")".repeat(9));
        assert!(matches!(parse(&deep), Err(ParseError::TooDeep { .. })));
        let ok = format!("{}x{}", "$(".repeat(8), ")".repeat(8));
        assert!(parse(&ok).is_ok());
        let many = vec!["echo"; 33].join(" | ");
        assert!(matches!(
            parse(&many),
            Err(ParseError::TooManyStages { .. })
        ));
        assert!(parse(&vec!["echo"; 32].join(" | ")).is_ok());
        assert_eq!(
            parse(&"x".repeat(MAX_LINE_BYTES + 1)),
            Err(ParseError::TooLong)
        );
        assert!(parse(&"x".repeat(MAX_LINE_BYTES)).is_ok());
        // Many unclosed quotes stay linear: every search after the first failure is skipped.
        let quotes = " \"a".repeat(5000);
        assert!(parse(&quotes).is_ok());
    }

    #[test]
    fn blank_lines_are_errors() {
        assert_eq!(parse(""), Err(ParseError::EmptyStage { at: 0 }));
        assert_eq!(parse("   "), Err(ParseError::EmptyStage { at: 0 }));
        assert_eq!(parse("echo `  `"), Err(ParseError::EmptyStage { at: 6 }));
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        fn line() -> impl Strategy<Value = String> {
            let piece = prop_oneof![
                "[a-z0-9 ]{1,6}",
                Just(" | ".to_owned()),
                Just("|".to_owned()),
                Just("`".to_owned()),
                Just("$(".to_owned()),
                Just(")".to_owned()),
                Just("(".to_owned()),
                Just("\"".to_owned()),
                Just("'".to_owned()),
                Just("%s".to_owned()),
                Just("é".to_owned()),
            ];
            prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn the_parser_never_panics_and_respects_the_bounds(text in "\\PC{0,300}") {
                if let Ok(expr) = parse(&text) {
                    prop_assert!(expr.stages.len() <= MAX_STAGES);
                    prop_assert!(!expr.stages.is_empty());
                }
            }

            #[test]
            fn printing_a_tree_and_parsing_it_again_gives_the_same_tree(text in line()) {
                if let Ok(expr) = parse(&text) {
                    let printed = expr.to_line();
                    prop_assert_eq!(parse(&printed), Ok(expr));
                }
            }

            #[test]
            fn printing_gives_back_the_line_as_typed(text in line()) {
                if let Ok(expr) = parse(&text) {
                    prop_assert_eq!(expr.to_line(), text);
                }
            }
        }
    }
}
