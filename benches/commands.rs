//! The command language's own cost: parsing and dispatching a typical one-stage command,
//! and a 1,000-row collection with a record per row through five collection stages, beside
//! the same work done directly with `yetibot-json-util`'s operations (the pipeline's
//! overhead over the operators is the figure that matters).
//!
//! ```text
//! cargo bench -p benches --bench commands
//! ```
//!
//! The report printed first alternates the pipeline and the direct version in short rounds
//! and gives the median ratio, so load from other processes touches both alike.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use divan::Bencher;
use tokio::runtime::Runtime;
use yetibot_command::{
    Call, Caller, Category, CommandSpec, Interpreter, Outcome, Plain, Settings, builtins,
};
use yetibot_conversation::AdapterKind;
use yetibot_history::MemoryAliases;
use yetibot_json_util::collection::{select, sort_order};
use yetibot_json_util::{Object, SplitMix64, Value};

fn main() {
    if std::env::args().skip(1).all(|arg| arg.starts_with('-')) {
        overhead_report();
    }
    divan::main();
}

const ROWS: usize = 1000;
/// Five collection stages over the rows and their records.
const PIPELINE: &str = "catalog | sort | reverse | head 500 | grep 7 | tail 40";

/// A record per row, as a catalog command returns them: the rows are the names.
fn catalog() -> (Vec<Value>, Vec<Value>) {
    let mut rows = Vec::with_capacity(ROWS);
    let mut records = Vec::with_capacity(ROWS);
    for i in 0..ROWS {
        let name = format!("model-{:04}", (i * 7919) % 10_000);
        let mut record = Object::new();
        let _ = record.insert("id", Value::String(name.clone()));
        let _ = record.insert("context_window", Value::String(format!("{}", 4096 + i)));
        let _ = record.insert("task", Value::String("Text Generation".into()));
        rows.push(Value::String(name));
        records.push(Value::Object(record));
    }
    (rows, records)
}

fn interpreter() -> Interpreter {
    let mut registry = builtins();
    let (rows, records) = catalog();
    registry.add(CommandSpec::new("catalog", &[Category::UTIL]).route(
        None,
        "catalog # a thousand rows with records",
        Plain(move |_: &Call<'_>| {
            Outcome::with_records(Value::Array(rows.clone()), Some(records.clone()))
        }),
    ));
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(1)),
        Settings::default(),
    )
}

fn caller() -> Caller {
    Caller {
        adapter: AdapterKind::Cli,
        connection: "cli".into(),
        room: "bench".into(),
        user_id: "local".into(),
        user_name: "bench".into(),
        trusted: true,
        message_id: None,
        platform: None,
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

/// The same five steps with json-util's operations and the `regex` crate, no language:
/// produce the catalog, sort rows by UTF-16 order moving records with them, reverse, take
/// 500, keep rows matching `7` case-insensitively, take the last 40.
fn direct() -> (Vec<Value>, Vec<Value>) {
    let (rows, records) = catalog();
    let texts: Vec<&str> = rows.iter().filter_map(Value::as_str).collect();
    let order = sort_order(&texts);
    let mut rows = select(rows, &order);
    let mut records = select(records, &order);
    rows.reverse();
    records.reverse();
    rows.truncate(500);
    records.truncate(500);
    let pattern = regex::RegexBuilder::new("7")
        .case_insensitive(true)
        .build()
        .expect("pattern");
    let keep: Vec<usize> = rows
        .iter()
        .enumerate()
        .filter(|(_, row)| row.as_str().is_some_and(|t| pattern.is_match(t)))
        .map(|(i, _)| i)
        .collect();
    let rows = select(rows, &keep);
    let records = select(records, &keep);
    let from = rows.len().saturating_sub(40);
    (rows[from..].to_vec(), records[from..].to_vec())
}

fn overhead_report() {
    const ROUNDS: usize = 41;
    let bot = interpreter();
    let me = caller();
    let runtime = runtime();
    // The two must agree before their costs are compared.
    let reply = runtime.block_on(bot.run(&me, PIPELINE));
    let (rows, records) = direct();
    assert_eq!(reply.value, Value::Array(rows), "same rows");
    assert_eq!(reply.data, Some(Value::Array(records)), "same records");
    let mut ratios = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS + 3 {
        let pipeline = || {
            let start = Instant::now();
            for _ in 0..10 {
                divan::black_box(runtime.block_on(bot.run(&me, PIPELINE)));
            }
            start.elapsed().as_secs_f64()
        };
        let operators = || {
            let start = Instant::now();
            for _ in 0..10 {
                divan::black_box(direct());
            }
            start.elapsed().as_secs_f64()
        };
        let (a, b) = if round % 2 == 0 {
            let a = pipeline();
            (a, operators())
        } else {
            let b = operators();
            (pipeline(), b)
        };
        if round >= 3 {
            ratios.push(a / b);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let _ = writeln!(
        std::io::stdout().lock(),
        "five collection stages over {ROWS} rows with records: the pipeline takes {:.2}x the \
         time of json-util's operations on the same data (median of {ROUNDS} alternating rounds)",
        ratios[ratios.len() / 2]
    );
}

#[divan::bench]
fn one_stage_command(bencher: Bencher) {
    let bot = interpreter();
    let me = caller();
    let runtime = runtime();
    bencher.bench_local(|| runtime.block_on(bot.run(&me, "echo hello world")));
}

#[divan::bench]
fn parse_only(bencher: Bencher) {
    bencher.bench(|| yetibot_command::syntax::parse(divan::black_box(PIPELINE)));
}

#[divan::bench]
fn five_collection_stages(bencher: Bencher) {
    let bot = interpreter();
    let me = caller();
    let runtime = runtime();
    bencher.bench_local(|| runtime.block_on(bot.run(&me, PIPELINE)));
}

#[divan::bench]
fn five_stages_with_json_util_directly(bencher: Bencher) {
    bencher.bench(direct);
}
