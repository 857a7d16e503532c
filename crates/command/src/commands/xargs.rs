//! `xargs` and `repeat`: commands that run another command several times, as generated
//! commands, each with its own input, and collect the results in order.

use futures_util::StreamExt;
use yetibot_json_util::Value;

use futures_util::future::BoxFuture;

use crate::limits::{MAX_REPEAT, MAX_XARGS_ITEMS, XARGS_PARALLELISM};
use crate::registry::{Call, Category, CommandSpec, Handler, Hints};
use crate::value::{self, Outcome, Piped};

/// `xargs` and `repeat` run whatever command they are given, so running them again may cost
/// whatever that command costs.
const RUNS_COMMANDS: Hints = Hints {
    live_progress: false,
    interim_replies: false,
    opens_thread: None,
    may_cost: true,
};

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![
        CommandSpec::new("xargs", &[Category::UTIL, Category::COLLECTION])
            .hints(RUNS_COMMANDS)
            .route(
                None,
                "xargs <cmd> # run <cmd> once for every piped item (with %s, or the item appended); each run gets its item's record as data",
                Xargs,
            ),
        CommandSpec::new("repeat", &[Category::UTIL]).hints(RUNS_COMMANDS).route(
            Some(r"^(\d+)\s(.+)$"),
            "repeat <n> <cmd> # run <cmd> <n> times (at most 10)",
            Repeat,
        ),
    ]
}

struct Xargs;

impl Handler for Xargs {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(xargs(call))
    }
}

async fn xargs(call: Call<'_>) -> Outcome {
    let records = call.records;
    if call.args.trim().is_empty() {
        // Without a command the input passes through, data and records as they were.
        return Outcome::Value(call.raw.clone());
    }
    let Some(items) = call.items.as_deref().or(records) else {
        return Outcome::error("Expected a collection");
    };
    if items.len() > MAX_XARGS_ITEMS {
        return Outcome::error(format!(
            "xargs runs at most {MAX_XARGS_ITEMS} items and got {}; select fewer first (head {MAX_XARGS_ITEMS})",
            items.len()
        ));
    }
    // Collected first: each run is a future that has not started yet.
    let runs: Vec<_> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            // Each run's data is its item's record, or the item itself when the rows have no
            // records (as a stage's data is its previous value when there is no other).
            let record = records.and_then(|r| r.get(i)).unwrap_or(item).clone();
            let record = Some(record);
            let (line, input) = match item {
                collection @ Value::Array(_) => (
                    call.args.to_owned(),
                    Piped {
                        value: collection.clone(),
                        data: record,
                        records_at: None,
                        meta: None,
                        notes: Vec::new(),
                    },
                ),
                scalar => {
                    let text = value::to_text(scalar, " ");
                    let copies = call.args.matches("%s").count().max(1);
                    let line = if call.args.len() + copies.saturating_mul(text.len())
                        > value::MAX_VALUE_BYTES
                    {
                        // Too long to build: the run fails (an empty item) without building it.
                        String::new()
                    } else if call.args.contains("%s") {
                        call.args.replace("%s", &text)
                    } else {
                        format!("{} {text}", call.args)
                    };
                    (
                        line,
                        Piped {
                            value: Value::String(String::new()),
                            data: record,
                            records_at: None,
                            meta: None,
                            notes: Vec::new(),
                        },
                    )
                }
            };
            call.runner.run_stage(line, input)
        })
        .collect();
    let results: Vec<Result<Piped, crate::error::Stopped>> = futures_util::stream::iter(runs)
        .buffered(XARGS_PARALLELISM)
        .collect()
        .await;
    let mut values = Vec::with_capacity(results.len());
    let mut datas = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(piped) => {
                values.push(piped.value);
                datas.push(piped.data.unwrap_or(Value::Null));
            }
            // A failing item becomes an empty item, as upstream does.
            Err(_) => {
                values.push(Value::String(String::new()));
                datas.push(Value::Null);
            }
        }
    }
    Outcome::with_records(Value::Array(values), Some(datas))
}

struct Repeat;

impl Handler for Repeat {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(repeat(call))
    }
}

async fn repeat(call: Call<'_>) -> Outcome {
    let times = call
        .group(1)
        .parse::<usize>()
        .unwrap_or(MAX_REPEAT)
        .min(MAX_REPEAT);
    let line = call.group(2).to_owned();
    let value = call.items.as_deref().map_or_else(
        || Value::String(String::new()),
        |items| Value::Array(items.to_vec()),
    );
    let input = match call.records {
        Some(records) => Piped::with_records(value, Some(records.to_vec())),
        None => Piped {
            value,
            data: call.data.cloned(),
            records_at: None,
            meta: None,
            notes: Vec::new(),
        },
    };
    let mut values = Vec::with_capacity(times);
    let mut datas = Vec::with_capacity(times);
    for _ in 0..times {
        match call.runner.run_stage(line.clone(), input.clone()).await {
            Ok(piped) => {
                values.push(piped.value);
                datas.push(piped.data.unwrap_or(Value::Null));
            }
            Err(error) => {
                values.push(Value::String(error.into_message()));
                datas.push(Value::Null);
            }
        }
    }
    Outcome::with_records(Value::Array(values), Some(datas))
}
