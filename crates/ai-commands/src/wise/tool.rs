//! The `wise` native tool: read-only balances, statement lines and period totals of the
//! configured Wise balances, only from the chats Wise's policy allows. Its result is bounded
//! like the other native results; amounts are exact decimal strings with their currency.

use serde_json::{Value, json};
use yetibot_command::Caller;
use yetibot_tool_policy::Execution;

use super::Query;
use crate::args::ToolArgs;
use crate::services::AiServices;

/// What the model is told.
pub(crate) const DESCRIPTION: &str = "Read-only Wise: `balances` (current amounts), \
`transactions` (statement lines from `from` to `to`, newest first) or `totals` (money in, out \
and net for the range) of the configured balances; `balance` picks one by name, ID or \
currency. Dates are YYYY-MM-DD, at most 366 days. It cannot move money.";

/// The longest result, as JSON text, in characters.
pub(crate) const MAX_RESULT_CHARS: usize = 12_000;
/// The most statement lines one call returns.
pub(crate) const MAX_LIMIT: u32 = 50;

/// The argument schema.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["balances", "transactions", "totals"]},
            "balance": {"type": "string", "maxLength": 32, "description": "A configured balance's name, ID or currency; all when left out."},
            "from": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "description": "transactions and totals: the first day."},
            "to": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "description": "transactions and totals: the last day."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "transactions: the most lines (default 20)."}
        },
        "required": ["action"],
        "additionalProperties": false
    })
}

/// Reads and checks a call; no I/O.
pub(crate) fn read(arguments: &str) -> Result<Query, &'static str> {
    let args = ToolArgs::parse(arguments)?;
    args.only(
        &["action", "balance", "from", "to", "limit"],
        "only action, balance, from, to and limit are accepted",
    )?;
    let wanted = args.text("balance", 1..=32, "balance must be 1-32 characters")?;
    let dates = || -> Result<(String, String), &'static str> {
        let from = args
            .text("from", 10..=10, "from must be YYYY-MM-DD")?
            .ok_or("from is required")?;
        let to = args
            .text("to", 10..=10, "to must be YYYY-MM-DD")?
            .ok_or("to is required")?;
        super::range(&from, &to)
            .map_err(|_| "from and to must be dates, in order, at most 366 days apart")
    };
    let action = args.text(
        "action",
        1..=16,
        "action must be balances, transactions or totals",
    )?;
    match action.as_deref() {
        Some("balances") => {
            if ["from", "to", "limit"]
                .iter()
                .any(|k| args.get(k).is_some())
            {
                return Err("balances takes only balance");
            }
            Ok(Query::Balances { wanted })
        }
        Some("transactions") => {
            let (from, to) = dates()?;
            let limit = args.integer("limit", 1..=MAX_LIMIT, 20, "limit must be 1-50")?;
            Ok(Query::Transactions {
                wanted,
                from,
                to,
                limit: limit as usize,
            })
        }
        Some("totals") => {
            if args.get("limit").is_some() {
                return Err("totals takes no limit");
            }
            let (from, to) = dates()?;
            Ok(Query::Totals { wanted, from, to })
        }
        _ => Err("action must be balances, transactions or totals"),
    }
}

/// Runs one call for `caller`.
pub(crate) async fn run(services: &AiServices, caller: &Caller, arguments: &str) -> Execution {
    let query = match read(arguments) {
        Ok(query) => query,
        Err(problem) => return Execution::ToolError(format!("invalid arguments: {problem}")),
    };
    match super::read(services, caller, &query).await {
        Ok(report) => {
            let mut records = report.records;
            let mut truncated = report.truncated;
            // Bounded like the other native results: whole records are dropped from the end.
            loop {
                let result = json!({"records": records, "truncated": truncated});
                let text = result.to_string();
                if text.chars().count() <= MAX_RESULT_CHARS || records.is_empty() {
                    return Execution::Success(text);
                }
                records.pop();
                truncated = true;
            }
        }
        Err(message) => Execution::ToolError(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_checked_whole() {
        assert_eq!(
            read(r#"{"action":"balances"}"#),
            Ok(Query::Balances { wanted: None })
        );
        assert_eq!(
            read(
                r#"{"action":"transactions","from":"2026-11-01","to":"2026-11-30","balance":"ops"}"#
            ),
            Ok(Query::Transactions {
                wanted: Some("ops".into()),
                from: "2026-11-01".into(),
                to: "2026-11-30".into(),
                limit: 20
            })
        );
        for bad in [
            r#"{"action":"transfer","amount":10}"#,
            r#"{"action":"balances","from":"2026-11-01"}"#,
            r#"{"action":"transactions","from":"2026-11-30","to":"2026-11-01"}"#,
            r#"{"action":"transactions","from":"2024-01-01","to":"2025-06-01"}"#,
            r#"{"action":"transactions","from":"2026-11-01","to":"2026-11-30","limit":51}"#,
            r#"{"action":"totals","from":"2026-11-01","to":"2026-11-30","limit":5}"#,
            r#"{"action":"totals","from":"2026-11-01"}"#,
            r#"{"action":"balances","profile":1}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}
