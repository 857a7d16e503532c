//! The `wise` command for operators: `wise balances [<balance>]`, `wise transactions <from>
//! <to> [<balance>]` and `wise totals <from> <to> [<balance>]`, in the chats Wise's policy
//! allows and for the balances it lists. Rows are readable lines; each is paired with its
//! record (amounts as exact decimal strings with their currency).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use yetibot_command::{Call, Category, CommandSpec, Handler, Outcome, PathStep};
use yetibot_json_util::Value;

use super::Query;
use crate::services::AiServices;

const BALANCES_USAGE: &str = "wise balances [<balance>] # the configured Wise balances (read-only)";
const TRANSACTIONS_USAGE: &str = "wise transactions <YYYY-MM-DD> <YYYY-MM-DD> [<balance>] # statement lines in the range, newest first";
const TOTALS_USAGE: &str =
    "wise totals <YYYY-MM-DD> <YYYY-MM-DD> [<balance>] # money in, out and net for the range";

/// The most statement lines the command shows.
const MAX_ROWS: usize = 100;

const CATEGORIES: &[Category] = &[Category::new("finance")];

/// The `wise` command over these services.
pub(crate) fn spec(services: &Arc<AiServices>) -> CommandSpec {
    let form = |form| Wise {
        services: Arc::clone(services),
        form,
    };
    CommandSpec::new("wise", CATEGORIES)
        .route(
            Some(r"^\s*balances(?:\s+(\S.*?))?\s*$"),
            BALANCES_USAGE,
            form(Form::Balances),
        )
        .route(
            Some(r"^\s*transactions\s+(\S+)\s+(\S+)(?:\s+(\S.*?))?\s*$"),
            TRANSACTIONS_USAGE,
            form(Form::Transactions),
        )
        .route(
            Some(r"^\s*totals\s+(\S+)\s+(\S+)(?:\s+(\S.*?))?\s*$"),
            TOTALS_USAGE,
            form(Form::Totals),
        )
}

#[derive(Clone, Copy)]
enum Form {
    Balances,
    Transactions,
    Totals,
}

struct Wise {
    services: Arc<AiServices>,
    form: Form,
}

impl Handler for Wise {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let group = |n| {
                let text = call.group(n).trim();
                (!text.is_empty()).then(|| text.to_owned())
            };
            let query = match self.form {
                Form::Balances => Query::Balances { wanted: group(1) },
                Form::Transactions => Query::Transactions {
                    wanted: group(3),
                    from: call.group(1).to_owned(),
                    to: call.group(2).to_owned(),
                    limit: MAX_ROWS,
                },
                Form::Totals => Query::Totals {
                    wanted: group(3),
                    from: call.group(1).to_owned(),
                    to: call.group(2).to_owned(),
                },
            };
            let report = match super::read(&self.services, call.runner.caller(), &query).await {
                Ok(report) => report,
                Err(message) => return Outcome::error(message),
            };
            if report.rows.is_empty() {
                return Outcome::text("No transactions in that range.");
            }
            let notes = if report.truncated {
                vec![format!("only the newest {MAX_ROWS} lines are shown")]
            } else {
                Vec::new()
            };
            let data =
                serde_json::json!({"records": report.records, "truncated": report.truncated});
            Outcome::Data {
                value: Value::Array(report.rows.into_iter().map(Value::String).collect()),
                data: crate::args::pipeline_data(&data),
                path: Some(vec![PathStep::Key("records".to_owned())]),
            }
            .with_notes(notes)
        })
    }
}
