//! Benchmarks of `yetibot-json-util` on inputs at the tool's size bound: the strict reader (alone
//! and with serialization) and the `sort`, `unique`, `flatten`, `get` and `sum` calls, each
//! against `serde_json::from_str` (plus `to_string`) on the same bytes as the baseline.
//!
//! Run with `cargo bench -p benches --bench json_util`. Every fixture is close to 12,288
//! bytes and within the depth, entry and node bounds, so the strict reader accepts it.

use divan::Bencher;
use divan::counter::BytesCount;
use yetibot_json_util::{Call, SplitMix64, Value, execute};
use yetibot_redaction::Secrets;

fn main() {
    parse_ratio_report();
    divan::main();
}

/// Prints, per fixture, the strict reader's time over `serde_json::from_str`'s on the same
/// bytes. The two alternate in short rounds and the median of the per-round ratios is
/// reported, so load from other processes on a shared machine touches both sides alike.
fn parse_ratio_report() {
    use std::io::Write;
    use std::time::Instant;
    const ROUNDS: usize = 61;
    const PER_ROUND: usize = 50;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "strict reader / serde_json::from_str, median of {ROUNDS} alternating rounds:"
    );
    for name in FIXTURES {
        let text = fixture(name);
        let mut ratios = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS + 3 {
            let strict = || {
                let start = Instant::now();
                for _ in 0..PER_ROUND {
                    divan::black_box(Value::parse(divan::black_box(&text)).is_ok());
                }
                start.elapsed().as_secs_f64()
            };
            let serde = || {
                let start = Instant::now();
                for _ in 0..PER_ROUND {
                    divan::black_box(
                        serde_json::from_str::<serde_json::Value>(divan::black_box(&text)).is_ok(),
                    );
                }
                start.elapsed().as_secs_f64()
            };
            let (a, b) = if round % 2 == 0 {
                let a = strict();
                (a, serde())
            } else {
                let b = serde();
                (strict(), b)
            };
            // The first rounds warm the caches.
            if round >= 3 {
                ratios.push(a / b);
            }
        }
        ratios.sort_by(f64::total_cmp);
        let _ = writeln!(out, "  {name:<10} {:.2}x", ratios[ratios.len() / 2]);
    }
}

const FIXTURES: &[&str] = &["records", "strings", "decimals", "integers", "nested"];

const OPERATORS: &[&str] = &["sort", "unique", "flatten", "get", "sum"];

#[divan::bench(args = FIXTURES)]
fn parse_strict(bencher: Bencher, name: &str) {
    let text = fixture(name);
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| Value::parse(divan::black_box(&text)).is_ok());
}

#[divan::bench(args = FIXTURES)]
fn parse_serde_json(bencher: Bencher, name: &str) {
    let text = fixture(name);
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| serde_json::from_str::<serde_json::Value>(divan::black_box(&text)).is_ok());
}

#[divan::bench(args = FIXTURES)]
fn round_trip_strict(bencher: Bencher, name: &str) {
    let text = fixture(name);
    bencher.counter(BytesCount::of_str(&text)).bench(|| {
        Value::parse(divan::black_box(&text))
            .map(|v| v.to_json().len())
            .unwrap_or(0)
    });
}

#[divan::bench(args = FIXTURES)]
fn round_trip_serde_json(bencher: Bencher, name: &str) {
    let text = fixture(name);
    bencher.counter(BytesCount::of_str(&text)).bench(|| {
        serde_json::from_str::<serde_json::Value>(divan::black_box(&text))
            .map(|v| v.to_string().len())
            .unwrap_or(0)
    });
}

/// A whole call with one configured secret: reading the arguments and the input, every
/// check including the credential scans, the operator, redaction, bounding and serializing
/// the reply.
#[divan::bench(args = OPERATORS)]
fn call(bencher: Bencher, operator: &str) {
    let secrets = Secrets::new(["sk-live-0123456789abcdef"]).expect("one secret compiles");
    bench_call(bencher, operator, &secrets);
}

/// The same call without configured secrets, which isolates the credential scans' cost.
#[divan::bench(args = OPERATORS)]
fn call_without_secrets(bencher: Bencher, operator: &str) {
    bench_call(bencher, operator, &Secrets::empty());
}

fn bench_call(bencher: Bencher, operator: &str, secrets: &Secrets) {
    let (input, arguments) = operator_call(operator);
    let call = Call::new(arguments);
    let mut random = SplitMix64::new(1);
    assert!(
        !execute(&call, &mut random, secrets).is_error(),
        "{operator} must succeed"
    );
    bencher.counter(BytesCount::of_str(&input)).bench_local(|| {
        execute(divan::black_box(&call), &mut random, secrets)
            .as_json()
            .len()
    });
}

/// The baseline for `call`: `serde_json` reading and writing the same input bytes.
#[divan::bench(args = OPERATORS)]
fn call_baseline_serde_json(bencher: Bencher, operator: &str) {
    let (input, _) = operator_call(operator);
    bencher.counter(BytesCount::of_str(&input)).bench(|| {
        serde_json::from_str::<serde_json::Value>(divan::black_box(&input))
            .map(|v| v.to_string().len())
            .unwrap_or(0)
    });
}

/// The input and the arguments object for benchmarking `operator`.
fn operator_call(operator: &str) -> (String, String) {
    let (input, extra) = match operator {
        "sort" | "unique" => (fixture("strings"), ""),
        "flatten" => (fixture("nested"), ""),
        "get" => (fixture("records"), r#","path":[69,"tags",1]"#),
        _ => (fixture("decimals"), ""),
    };
    let arguments = format!(
        r#"{{"operation":"{operator}","input_json":{}{extra}}}"#,
        serde_json::Value::String(input.clone())
    );
    (input, arguments)
}

/// A fixture near 12,288 bytes, built deterministically.
fn fixture(name: &str) -> String {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let text = match name {
        // 70 objects of five fields: 911 nodes, the shape of typical tool output.
        "records" => {
            let records: Vec<String> = (0..70)
                .map(|i| {
                    format!(
                        r#"{{"id":{},"name":"{}","score":{}.{:02},"tags":["{}","{}"],"ok":{}}}"#,
                        1_000_000 + rng.below(9_000_000),
                        words(&mut rng, 8),
                        rng.below(100),
                        rng.below(100),
                        WORDS[rng.below(WORDS.len())],
                        WORDS[rng.below(WORDS.len())],
                        i % 3 == 0,
                    )
                })
                .collect();
            format!("[{}]", records.join(","))
        }
        // 128 strings of about 90 characters, some with escapes and non-ASCII text.
        "strings" => {
            let strings: Vec<String> = (0..128)
                .map(|i| {
                    let mut s = words(&mut rng, 13);
                    s.truncate(80);
                    match i % 8 {
                        0 => s.push_str(r#" \"quoted\" \n"#),
                        1 => s.push_str(" café ☕ 😀"),
                        _ => s.push_str(" plain text"),
                    }
                    format!("\"{s}\"")
                })
                .collect();
            format!("[{}]", strings.join(","))
        }
        // 128 decimals of about 90 significant digits.
        "decimals" => {
            let numbers: Vec<String> = (0..128)
                .map(|_| {
                    let int: String = (0..10).map(|_| digit(&mut rng)).collect();
                    let frac: String = (0..80).map(|_| digit(&mut rng)).collect();
                    format!("{}{int}.{frac}", rng.below(9) + 1)
                })
                .collect();
            format!("[{}]", numbers.join(","))
        }
        // Seven arrays of 127 integers: 1,024 nodes.
        "integers" => {
            let rows: Vec<String> = (0..7)
                .map(|row| {
                    let count = if row == 6 { 126 } else { 127 };
                    let values: Vec<String> = (0..count)
                        .map(|_| (rng.below(2_000_000_000) as i64 - 1_000_000_000).to_string())
                        .collect();
                    format!("[{}]", values.join(","))
                })
                .collect();
            format!("[{}]", rows.join(","))
        }
        // Arrays nested to depth 8 holding 128 string leaves in total.
        _ => {
            let mut leaves = (0..128).map(|_| format!("\"{}\"", words(&mut rng, 12)));
            let mut groups: Vec<String> = Vec::new();
            for _ in 0..16 {
                let chunk: Vec<String> = leaves.by_ref().take(8).collect();
                groups.push(format!("[[[[[[[{}]]]]]]]", chunk.join(",")));
            }
            format!("[{}]", groups.join(","))
        }
    };
    assert!(text.len() <= 12_288, "{name} is {} bytes", text.len());
    assert!(Value::parse(&text).is_ok(), "{name} must be accepted");
    text
}

fn words(rng: &mut Rng, count: usize) -> String {
    (0..count)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn digit(rng: &mut Rng) -> char {
    char::from(b'0' + u8::try_from(rng.below(10)).expect("a digit fits a byte"))
}

const WORDS: &[&str] = &[
    "the", "bot", "replied", "with", "a", "summary", "of", "channel", "deploy", "failed", "again",
    "after", "tests", "passed", "on", "main", "branch", "please", "check", "logs", "server",
    "restart", "config", "weather", "tomorrow", "looks", "sunny", "meeting", "at", "noon",
];

/// xorshift64*: deterministic, dependency-free and plenty random for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % bound as u64).expect("the result is below a usize bound")
    }
}
