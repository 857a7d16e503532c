//! Command-line driver for the util tool: reads one tool-arguments object on stdin and
//! writes the reply on stdout.
//!
//! ```text
//! echo '{"operation":"sum","input_json":"[0.1,0.2]"}' \
//!   | cargo run -p yetibot-json-util --example json-util -- --secret sk-live-0123456789
//! ```
//!
//! Options: `--secret VALUE` (repeatable) adds a host secret for the credential rules;
//! `--seed N` makes `random` and `shuffle` repeatable; `--schema` prints the tool's JSON
//! schema instead of running a call.
//!
//! Exit status: 0 when a reply was printed, success or tool error alike; 2 when stdin is
//! not one JSON object; 1 for a bad command line or a failure to write stdout.

use std::hash::{BuildHasher, RandomState};
use std::io::{self, Read, Write};
use std::process::ExitCode;

use yetibot_json_util::{Call, Reply, SplitMix64, execute, preflight};
use yetibot_redaction::Secrets;

/// Credentials for panic reports, set once they are known.
static PANIC_SECRETS: std::sync::OnceLock<yetibot_redaction::Secrets> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    yetibot_redaction::install_panic_hook(&PANIC_SECRETS);
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(problem) => return fail(1, problem),
    };
    if options.schema {
        return print(&yetibot_json_util::tool_schema().to_string());
    }

    let mut input = String::new();
    if io::stdin().read_to_string(&mut input).is_err() {
        return fail(2, "stdin is not UTF-8 text");
    }
    // The interface promises exit status 2 only for input that is not a JSON object at
    // all; anything stricter (duplicate keys, bounds) is the tool's to reject in a reply.
    let is_object =
        serde_json::from_str::<serde_json::Value>(&input).is_ok_and(|value| value.is_object());
    if !is_object {
        return fail(2, "stdin is not one JSON object");
    }

    let Ok(secrets) = Secrets::new(&options.secrets) else {
        return fail(1, "the secrets could not be compiled");
    };
    let _ = PANIC_SECRETS.set(secrets.clone());
    let call = Call::new(input);
    let reply = match preflight(std::slice::from_ref(&call), &secrets) {
        Ok(()) => {
            let mut random = SplitMix64::new(options.seed.unwrap_or_else(process_seed));
            execute(&call, &mut random, &secrets)
        }
        Err(batch) => Reply::failure(batch.error()),
    };
    print(reply.as_json())
}

/// The parsed command line.
#[derive(Debug, Default)]
struct Options {
    secrets: Vec<String>,
    seed: Option<u64>,
    schema: bool,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, &'static str> {
        let mut options = Self::default();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--secret" => options
                    .secrets
                    .push(args.next().ok_or("--secret needs a value")?),
                "--seed" => {
                    let seed = args.next().ok_or("--seed needs a value")?;
                    options.seed = Some(seed.parse().map_err(|_| "--seed needs an integer")?);
                }
                "--schema" => options.schema = true,
                _ => return Err("usage: json-util [--secret VALUE]... [--seed N] [--schema]"),
            }
        }
        Ok(options)
    }
}

/// A seed that differs from run to run: std's `RandomState` is keyed from the operating
/// system's randomness once per process, so hashing nothing with it yields fresh bits.
fn process_seed() -> u64 {
    RandomState::new().hash_one(())
}

fn print(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

/// Reports a problem on stderr (never echoing the input) and exits with `code`.
fn fail(code: u8, problem: &str) -> ExitCode {
    let _ = writeln!(io::stderr().lock(), "json-util: {problem}");
    ExitCode::from(code)
}
