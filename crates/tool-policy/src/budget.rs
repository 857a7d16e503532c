//! The tool-call budget of one explicit command: how it is chosen and how it is spent.

use crate::config::{FALLBACK_TOOL_CALLS, MAX_TOOL_CALLS};
use crate::error::Error;

/// Why a request's budget flags were refused. Checked before any provider, credential or
/// discovery work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagProblem {
    /// `--max-tool-calls` was given more than once.
    Duplicate,
    /// The value is not a plain integer from 1 to 20.
    Invalid,
    /// `--max-tool-calls` together with `--no-tools`.
    ConflictsWithNoTools,
    /// `--max-tool-calls` on a text-only command (such as `cf`), which calls no tools.
    TextOnlyCommand,
    /// `--toolset` together with `--no-tools`.
    ToolsetWithNoTools,
}

impl FlagProblem {
    /// A short explanation for the chat user.
    #[must_use]
    pub fn user_message(self) -> &'static str {
        match self {
            Self::Duplicate => "--max-tool-calls may be given only once",
            Self::Invalid => "--max-tool-calls takes a whole number from 1 to 20",
            Self::ConflictsWithNoTools => "--max-tool-calls cannot be combined with --no-tools",
            Self::TextOnlyCommand => {
                "this command makes no tool calls, so it takes no --max-tool-calls"
            }
            Self::ToolsetWithNoTools => "--toolset and --no-tools cannot be combined",
        }
    }
}

/// The tool-related flags of one command, as the command layer found them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolFlags<'a> {
    /// Every value given with `--max-tool-calls`, in order.
    pub max_tool_calls: &'a [&'a str],
    /// Whether `--no-tools` was given.
    pub no_tools: bool,
    /// Whether `--toolset` was given.
    pub toolset: bool,
    /// Whether the command is text-only (`cf`, `zen`) and never calls tools.
    pub text_only: bool,
}

/// The budget of one explicit command, across all servers, native tools, batches and turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBudget {
    total: u8,
    used: u8,
}

impl CallBudget {
    /// Chooses the budget. A configured cap is the operator's ceiling: the request may ask
    /// for less, never more. Without a cap the request may choose up to the host ceiling of
    /// 20. Without either the fallback is 6.
    ///
    /// # Errors
    ///
    /// [`Error::Flag`] for a repeated, malformed or conflicting `--max-tool-calls`, or for
    /// `--toolset` with `--no-tools`.
    pub fn choose(configured_cap: Option<u8>, flags: &ToolFlags<'_>) -> Result<Self, Error> {
        if flags.toolset && flags.no_tools {
            return Err(Error::Flag(FlagProblem::ToolsetWithNoTools));
        }
        let requested = match flags.max_tool_calls {
            [] => None,
            [_, _, ..] => return Err(Error::Flag(FlagProblem::Duplicate)),
            [value] => {
                if flags.no_tools {
                    return Err(Error::Flag(FlagProblem::ConflictsWithNoTools));
                }
                if flags.text_only {
                    return Err(Error::Flag(FlagProblem::TextOnlyCommand));
                }
                Some(parse_count(value).ok_or(Error::Flag(FlagProblem::Invalid))?)
            }
        };
        let cap = configured_cap.map(|c| c.clamp(1, MAX_TOOL_CALLS));
        let total = match (cap, requested) {
            (Some(cap), Some(requested)) => cap.min(requested),
            (Some(cap), None) => cap,
            (None, Some(requested)) => requested,
            (None, None) => FALLBACK_TOOL_CALLS,
        };
        Ok(Self { total, used: 0 })
    }

    /// A budget of exactly `total` calls (clamped to 0–20), for callers that chose it already.
    #[must_use]
    pub fn with_total(total: u8) -> Self {
        Self {
            total: total.min(MAX_TOOL_CALLS),
            used: 0,
        }
    }

    /// Calls allowed in total.
    #[must_use]
    pub fn total(&self) -> u8 {
        self.total
    }

    /// Calls attempted so far.
    #[must_use]
    pub fn used(&self) -> u8 {
        self.used
    }

    /// Calls still allowed.
    #[must_use]
    pub fn remaining(&self) -> u8 {
        self.total - self.used
    }

    /// Records one attempted call. Refused and skipped calls are never spent.
    pub(crate) fn spend(&mut self) {
        self.used = (self.used + 1).min(self.total);
    }
}

/// A strict count: ASCII digits only, no sign or leading zero, 1 to 20.
fn parse_count(value: &str) -> Option<u8> {
    if value.is_empty()
        || value.len() > 2
        || value.starts_with('0')
        || !value.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    value
        .parse::<u8>()
        .ok()
        .filter(|n| (1..=MAX_TOOL_CALLS).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(cap: Option<u8>, flags: &[&str], expect: Result<u8, FlagProblem>) {
        let flags = ToolFlags {
            max_tool_calls: flags,
            ..ToolFlags::default()
        };
        let got = CallBudget::choose(cap, &flags)
            .map(|b| b.total())
            .map_err(|e| match e {
                Error::Flag(problem) => problem,
                other => panic!("unexpected {other}"),
            });
        assert_eq!(got, expect, "cap {cap:?}, flags {flags:?}");
    }

    #[test]
    fn choosing_the_budget() {
        check(None, &[], Ok(6));
        check(Some(3), &[], Ok(3));
        check(None, &["12"], Ok(12));
        check(None, &["20"], Ok(20));
        check(Some(8), &["12"], Ok(8));
        check(Some(8), &["2"], Ok(2));
        for bad in ["0", "21", "-1", "+3", "03", "1.5", "", "six", " 4", "100"] {
            check(None, &[bad], Err(FlagProblem::Invalid));
        }
        check(None, &["3", "3"], Err(FlagProblem::Duplicate));
    }

    #[test]
    fn conflicting_flags_are_refused() {
        let refused = |flags: ToolFlags<'_>| match CallBudget::choose(None, &flags) {
            Err(Error::Flag(problem)) => Some(problem),
            _ => None,
        };
        let three: &[&str] = &["3"];
        let budget_without_tools = ToolFlags {
            max_tool_calls: three,
            no_tools: true,
            ..ToolFlags::default()
        };
        assert_eq!(
            refused(budget_without_tools),
            Some(FlagProblem::ConflictsWithNoTools)
        );
        let budget_on_text_only = ToolFlags {
            max_tool_calls: three,
            text_only: true,
            ..ToolFlags::default()
        };
        assert_eq!(
            refused(budget_on_text_only),
            Some(FlagProblem::TextOnlyCommand)
        );
        let toolset_without_tools = ToolFlags {
            toolset: true,
            no_tools: true,
            ..ToolFlags::default()
        };
        assert_eq!(
            refused(toolset_without_tools),
            Some(FlagProblem::ToolsetWithNoTools)
        );
        let plain_no_tools = ToolFlags {
            no_tools: true,
            ..ToolFlags::default()
        };
        assert_eq!(refused(plain_no_tools), None);
    }

    #[test]
    fn spending_stops_at_the_total() {
        let mut budget = CallBudget::with_total(2);
        budget.spend();
        assert_eq!((budget.used(), budget.remaining()), (1, 1));
        budget.spend();
        budget.spend();
        assert_eq!((budget.used(), budget.remaining()), (2, 0));
    }
}
