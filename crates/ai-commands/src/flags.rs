//! The options of the AI commands: `--provider`, `--model`, `--toolset`, `--no-tools`,
//! `--max-tool-calls N`, Grok's `--no-thread`, and `--` to end them. They come before the
//! prompt, in any order; everything after them is the prompt, spaces kept. Every problem is
//! found here, before any credential, catalog or network work.

/// Which command the options are for: it decides which options are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `ai`: every shared option.
    Ai,
    /// `grok`: pinned to its provider, so no `--provider`; adds `--no-thread`.
    Grok,
    /// `zen` and `cf`: pinned (so no `--provider`) and text-only (no tools, so no
    /// `--max-tool-calls` or `--no-tools` effect beyond what they already do).
    TextOnly,
}

/// The options of one AI command and its prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    /// `--provider NAME`.
    pub provider: Option<String>,
    /// `--model ID`.
    pub model: Option<String>,
    /// `--toolset NAME`.
    pub toolset: Option<String>,
    /// `--no-tools`.
    pub no_tools: bool,
    /// `--max-tool-calls N`, as typed (checked by the tool policy's budget rules).
    pub max_tool_calls: Vec<String>,
    /// `--no-thread` (Grok only): answer in the channel rather than a new thread.
    pub no_thread: bool,
    /// The prompt: everything after the options, spaces kept.
    pub prompt: String,
}

/// Why the options could not be read. The messages name the option, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// An option that takes a value was last on the line.
    #[error("{0} needs a value")]
    MissingValue(&'static str),
    /// An option was given twice.
    #[error("{0} may be given only once")]
    Repeated(&'static str),
    /// An option this command does not take.
    #[error("{option} is not an option of {command}; put -- before a prompt that starts with --")]
    Unknown {
        /// The option as typed (cut to 40 characters).
        option: String,
        /// The command.
        command: &'static str,
    },
    /// `--provider` on a command pinned to its provider.
    #[error("this command always uses its own provider; use `ai --provider NAME` for another one")]
    PinnedProvider,
}

/// Reads the options at the start of `args`.
///
/// # Errors
///
/// A [`FlagError`] for a missing value, a repeated option or one the command does not take.
pub fn parse(args: &str, command: Command) -> Result<Options, FlagError> {
    let mut options = Options::default();
    let mut rest = args.trim_start();
    loop {
        let (word, after) = split_word(rest);
        if !word.starts_with("--") {
            break;
        }
        match word {
            "--" => {
                rest = after.strip_prefix(' ').unwrap_or(after);
                options.prompt = rest.to_owned();
                return Ok(options);
            }
            "--provider" if command != Command::Ai => return Err(FlagError::PinnedProvider),
            "--provider" | "--model" | "--toolset" => {
                let name = match word {
                    "--provider" => "--provider",
                    "--model" => "--model",
                    _ => "--toolset",
                };
                let (value, after) = split_word(after.trim_start());
                if value.is_empty() || value.starts_with("--") {
                    return Err(FlagError::MissingValue(name));
                }
                let slot = match name {
                    "--provider" => &mut options.provider,
                    "--model" => &mut options.model,
                    _ => &mut options.toolset,
                };
                if slot.replace(value.to_owned()).is_some() {
                    return Err(FlagError::Repeated(name));
                }
                rest = after.trim_start();
            }
            "--max-tool-calls" => {
                let (value, after) = split_word(after.trim_start());
                if value.is_empty() {
                    return Err(FlagError::MissingValue("--max-tool-calls"));
                }
                options.max_tool_calls.push(value.to_owned());
                rest = after.trim_start();
            }
            "--no-tools" => {
                if std::mem::replace(&mut options.no_tools, true) {
                    return Err(FlagError::Repeated("--no-tools"));
                }
                rest = after.trim_start();
            }
            "--no-thread" if command == Command::Grok => {
                if std::mem::replace(&mut options.no_thread, true) {
                    return Err(FlagError::Repeated("--no-thread"));
                }
                rest = after.trim_start();
            }
            other => {
                return Err(FlagError::Unknown {
                    option: other.chars().take(40).collect(),
                    command: match command {
                        Command::Ai => "ai",
                        Command::Grok => "grok",
                        Command::TextOnly => "this command",
                    },
                });
            }
        }
    }
    options.prompt = rest.to_owned();
    Ok(options)
}

/// The first whitespace-separated word of `text` and what follows it (untrimmed).
fn split_word(text: &str) -> (&str, &str) {
    match text.find(char::is_whitespace) {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ai(args: &str) -> Result<Options, FlagError> {
        parse(args, Command::Ai)
    }

    #[test]
    fn options_come_first_in_any_order_and_the_prompt_keeps_its_spaces() {
        let options = ai("--model m1 --provider local  Write a  poem.").expect("parses");
        assert_eq!(options.provider.as_deref(), Some("local"));
        assert_eq!(options.model.as_deref(), Some("m1"));
        assert_eq!(options.prompt, "Write a  poem.");
        let options = ai("--no-tools --toolset search --max-tool-calls 3 hi").expect("parses");
        assert!(options.no_tools);
        assert_eq!(options.toolset.as_deref(), Some("search"));
        assert_eq!(options.max_tool_calls, ["3"]);
        assert_eq!(options.prompt, "hi");
    }

    #[test]
    fn double_dash_makes_the_rest_literal() {
        let options = ai("-- --provider is literal text").expect("parses");
        assert_eq!(options.provider, None);
        assert_eq!(options.prompt, "--provider is literal text");
        let options = ai("--model m -- --x").expect("parses");
        assert_eq!(options.prompt, "--x");
        // Options end at the first word that is not one.
        assert_eq!(ai("say --model m").expect("parses").prompt, "say --model m");
    }

    #[test]
    fn problems_are_caught_before_anything_runs() {
        assert_eq!(ai("--model"), Err(FlagError::MissingValue("--model")));
        assert_eq!(
            ai("--model --no-tools x"),
            Err(FlagError::MissingValue("--model"))
        );
        assert_eq!(
            ai("--model a --model b x"),
            Err(FlagError::Repeated("--model"))
        );
        assert_eq!(
            ai("--no-tools --no-tools x"),
            Err(FlagError::Repeated("--no-tools"))
        );
        assert!(matches!(
            ai("--frobnicate x"),
            Err(FlagError::Unknown { .. })
        ));
        assert!(matches!(
            ai("--no-thread x"),
            Err(FlagError::Unknown { .. })
        ));
        assert_eq!(
            parse("--provider x hi", Command::Grok),
            Err(FlagError::PinnedProvider)
        );
        assert_eq!(
            parse("--provider x hi", Command::TextOnly),
            Err(FlagError::PinnedProvider)
        );
        assert!(matches!(
            parse("--no-thread hi", Command::TextOnly),
            Err(FlagError::Unknown { .. })
        ));
        let grok = parse("--no-thread --model g hi", Command::Grok).expect("parses");
        assert!(grok.no_thread);
        // Repeated budgets are the tool policy's to refuse, with its own message.
        assert_eq!(
            ai("--max-tool-calls 3 --max-tool-calls 4 x")
                .expect("parses")
                .max_tool_calls,
            ["3", "4"]
        );
    }
}
