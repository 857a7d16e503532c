//! `history`: the channel's stored chat, with the upstream push-down: the collection stages
//! that follow it (`grep <pattern>`, then one of `head [n]`, `tail [n]`, `count`,
//! `random`) become one database query instead of filtering fetched rows in memory. Alone,
//! it shows the latest 30 messages. Its own `history` command lines are left out, so that
//! it never reads itself.

use yetibot_json_util::{Object, Value};

use crate::commands::collections::{TOO_MANY_ROWS, compile, count_of, grep_plain_pattern};
use futures_util::future::BoxFuture;

use crate::limits::HISTORY_DEFAULT_ROWS;
use crate::registry::{Call, Category, CommandSpec, Handler};
use crate::value::{self, MAX_ROWS, Outcome};
use yetibot_history::{
    HistoryFilter, HistoryOrder, HistoryQuery, HistoryRow, HistoryScope, HistoryStore, TextMatch,
};

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![
        CommandSpec::new("history", &[Category::UTIL]).route(
            Some(r"^\s*$"),
            "history # the latest 30 messages of this channel; `history | grep <pattern>`, `| head <n>`, `| tail <n>`, `| count` and `| random` run in the database",
            HistoryCommand,
        ),
    ]
}

struct HistoryCommand;

impl Handler for HistoryCommand {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { history(&call).await })
    }
}

/// What the stage after `history` (and after its `grep`) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    /// `head`: the oldest `n`; one row as text when `n` is `None` or 1.
    Head(Option<usize>),
    /// `tail`: the newest `n`.
    Tail(Option<usize>),
    /// `count`.
    Count,
    /// `random`: one row.
    Random,
}

async fn history(call: &Call<'_>) -> Outcome {
    let Some(store) = call.runner.history() else {
        return Outcome::error("history is not enabled: this bot has no history store");
    };
    let caller = call.runner.caller();
    if !caller.trusted {
        return Outcome::error("history reads need a chat event from the platform");
    }
    let scope = caller.history_scope();
    let mut filter = HistoryFilter {
        text: None,
        skip_commands_starting_with: Some(format!("{}history", call.runner.prefix())),
    };
    let mut consumed = 0;
    if let Some(pattern) = call.following.first().and_then(|stage| grep_of(stage)) {
        filter.text = Some(TextMatch::Pattern(pattern.to_owned()));
        consumed = 1;
    }
    let take = call
        .following
        .get(consumed)
        .and_then(|stage| take_of(stage));
    if take.is_some() {
        consumed += 1;
    }
    let outcome = match take {
        Some(Take::Count) => match store.count(&scope, &filter).await {
            Ok(n) => Outcome::Value(value::count(usize::try_from(n).unwrap_or(usize::MAX))),
            Err(error) => Outcome::error(error.to_string()),
        },
        Some(Take::Random) => random(call, store, &scope, filter).await,
        Some(Take::Head(n)) => rows(store, &scope, filter, HistoryOrder::OldestFirst, n).await,
        Some(Take::Tail(n)) => rows(store, &scope, filter, HistoryOrder::NewestFirst, n).await,
        None if consumed > 0 => {
            rows(
                store,
                &scope,
                filter,
                HistoryOrder::NewestFirst,
                Some(MAX_ROWS + 1),
            )
            .await
        }
        None => {
            let latest = usize::try_from(HISTORY_DEFAULT_ROWS).unwrap_or(MAX_ROWS);
            rows(
                store,
                &scope,
                filter,
                HistoryOrder::NewestFirst,
                Some(latest),
            )
            .await
        }
    };
    if consumed == 0 {
        outcome
    } else {
        Outcome::Consumed {
            stages: consumed,
            outcome: Box::new(outcome),
        }
    }
}

/// The pattern of a `grep <pattern>` stage that history can run in the database: the plain
/// form with a pattern the `regex` crate accepts. `grep -v`, `grep -C` and patterns that do
/// not compile are left to `grep` itself.
fn grep_of(stage: &str) -> Option<&str> {
    let (word, args) = split_stage(stage);
    if word != "grep" {
        return None;
    }
    let pattern = grep_plain_pattern(args)?;
    compile(pattern, true).ok()?;
    Some(pattern)
}

/// The `head`, `tail`, `count` or `random` stage history can do itself, read as those
/// commands read their arguments.
fn take_of(stage: &str) -> Option<Take> {
    let (word, args) = split_stage(stage);
    let n = || {
        let digits: String = args
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(char::is_ascii_digit)
            .collect();
        (!digits.is_empty()).then(|| count_of(&digits))
    };
    match word {
        "head" => Some(Take::Head(n())),
        "tail" => Some(Take::Tail(n())),
        "count" => Some(Take::Count),
        "random" => Some(Take::Random),
        _ => None,
    }
}

/// A stage's command word and its arguments, split as the interpreter splits them.
fn split_stage(stage: &str) -> (&str, &str) {
    let text = stage.trim_start();
    match text.find(char::is_whitespace) {
        Some(at) => {
            let space = text[at..].chars().next().map_or(1, char::len_utf8);
            (&text[..at], &text[at + space..])
        }
        None => (text, ""),
    }
}

/// `n` rows in `order`, shown oldest first; `None` or 1 gives one row as text with its
/// record as the data.
async fn rows(
    store: &dyn HistoryStore,
    scope: &HistoryScope,
    filter: HistoryFilter,
    order: HistoryOrder,
    n: Option<usize>,
) -> Outcome {
    let one = matches!(n, None | Some(1));
    let wanted = n.unwrap_or(1);
    let query = HistoryQuery {
        filter,
        before_id: None,
        order,
        offset: 0,
        limit: u32::try_from(wanted.min(MAX_ROWS + 1)).unwrap_or(u32::MAX),
    };
    let mut found = match store.rows(scope, &query).await {
        Ok(found) => found,
        Err(error) => return Outcome::error(error.to_string()),
    };
    if found.len() > MAX_ROWS {
        return Outcome::error(TOO_MANY_ROWS);
    }
    if order == HistoryOrder::NewestFirst {
        found.reverse();
    }
    if one {
        return single(scope, found.into_iter().next());
    }
    many(scope, found)
}

/// One random row: the matching rows are counted, then the one at a random place fetched.
async fn random(
    call: &Call<'_>,
    store: &dyn HistoryStore,
    scope: &HistoryScope,
    filter: HistoryFilter,
) -> Outcome {
    let total = match store.count(scope, &filter).await {
        Ok(0) => return single(scope, None),
        Ok(total) => total,
        Err(error) => return Outcome::error(error.to_string()),
    };
    let bound = usize::try_from(total).unwrap_or(usize::MAX);
    let offset = u64::try_from(call.runner.random_index(bound)).unwrap_or_default();
    let query = HistoryQuery {
        filter,
        before_id: None,
        order: HistoryOrder::NewestFirst,
        offset,
        limit: 1,
    };
    match store.rows(scope, &query).await {
        Ok(found) => single(scope, found.into_iter().next()),
        Err(error) => Outcome::error(error.to_string()),
    }
}

fn single(scope: &HistoryScope, row: Option<HistoryRow>) -> Outcome {
    match row {
        Some(row) => Outcome::Data {
            value: Value::String(line(scope, &row)),
            data: Some(record(&row)),
            path: None,
        },
        None => Outcome::Data {
            value: Value::String(String::new()),
            data: None,
            path: None,
        },
    }
}

fn many(scope: &HistoryScope, rows: Vec<HistoryRow>) -> Outcome {
    let lines = rows
        .iter()
        .map(|row| Value::String(line(scope, row)))
        .collect();
    let records = rows.iter().map(record).collect();
    Outcome::with_records(Value::Array(lines), Some(records))
}

/// A row as upstream shows it: `<user> in <room> at <time>: <body>`, the time to the minute.
fn line(scope: &HistoryScope, row: &HistoryRow) -> String {
    let time: String = row
        .created_at
        .chars()
        .take(16)
        .map(|c| if c == 'T' { ' ' } else { c })
        .collect();
    let more = if row.truncated.body { "…" } else { "" };
    format!(
        "{} in {} at {time}: {}{more}",
        row.user_name,
        scope.room(),
        row.body
    )
}

/// A row's record, paired with its line.
fn record(row: &HistoryRow) -> Value {
    let mut object = Object::new();
    let fields = [
        ("id", Value::Integer(row.id.into())),
        ("created_at", Value::String(row.created_at.clone())),
        ("user_id", Value::String(row.user_id.clone())),
        ("user_name", Value::String(row.user_name.clone())),
        ("body", Value::String(row.body.clone())),
        ("is_yetibot", Value::Bool(row.is_yetibot)),
        ("is_command", Value::Bool(row.is_command)),
        ("is_error", Value::Bool(row.is_error)),
        ("truncated", Value::Bool(row.truncated.any())),
    ];
    for (key, value) in fields {
        // The keys above are distinct, so no insert can fail.
        let _ = object.insert(key, value);
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn following_stages_are_read_as_their_commands_read_them() {
        assert_eq!(take_of("head 5"), Some(Take::Head(Some(5))));
        assert_eq!(take_of("head"), Some(Take::Head(None)));
        assert_eq!(take_of("tail x 12 y"), Some(Take::Tail(Some(12))));
        assert_eq!(take_of("count"), Some(Take::Count));
        assert_eq!(take_of("random"), Some(Take::Random));
        assert_eq!(take_of("sort"), None);
        assert_eq!(grep_of("grep foo bar"), Some("foo bar"));
        assert_eq!(grep_of("grep -v foo"), None);
        assert_eq!(grep_of("grep -C 2 foo"), None);
        assert_eq!(
            grep_of("grep ("),
            None,
            "an invalid pattern is left to grep"
        );
        assert_eq!(grep_of("grep"), None);
    }
}
