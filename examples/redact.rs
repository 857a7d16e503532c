//! Redacts the given secrets from standard input and writes the result to standard output.
//!
//! ```text
//! cargo run -p examples --example redact -- --secret VALUE [--secret VALUE]... < in > out
//! ```

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use yetibot_redaction::Secrets;

const USAGE: &str = "usage: redact --secret VALUE [--secret VALUE]... < input > output\n";

/// Credentials for panic reports, set once they are known.
static PANIC_SECRETS: std::sync::OnceLock<yetibot_redaction::Secrets> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    yetibot_redaction::install_panic_hook(&PANIC_SECRETS);
    let values = match parse(std::env::args_os().skip(1)) {
        Ok(Command::Run(values)) => values,
        Ok(Command::Help) => return write_or_fail(&mut io::stdout().lock(), USAGE),
        Err(problem) => {
            // A failed write to stderr leaves nothing better to do than exit with the code.
            let _ = write!(io::stderr().lock(), "redact: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let secrets = match Secrets::new(&values) {
        Ok(secrets) => secrets,
        Err(error) => return fail(&format!("cannot use these secrets: {error}")),
    };
    let _ = PANIC_SECRETS.set(secrets.clone());
    if secrets.ignored() > 0 {
        let warning = format!(
            "redact: warning: {} value(s) ignored (shorter than {} bytes or overlapping the marker)\n",
            secrets.ignored(),
            yetibot_redaction::limits::MIN_SECRET_LEN,
        );
        let _ = io::stderr().lock().write_all(warning.as_bytes());
    }
    let input = match io::read_to_string(io::stdin()) {
        Ok(input) => input,
        Err(error) => return fail(&format!("cannot read standard input: {error}")),
    };
    write_or_fail(&mut io::stdout().lock(), &secrets.redact_text(&input))
}

/// What the command line asks for.
enum Command {
    Help,
    Run(Vec<String>),
}

fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Command, String> {
    let mut values = Vec::new();
    while let Some(arg) = args.next() {
        let arg = arg
            .into_string()
            .map_err(|_| "arguments must be UTF-8".to_owned())?;
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        } else if arg == "--secret" {
            let value = args.next().ok_or("--secret needs a value")?;
            values.push(
                value
                    .into_string()
                    .map_err(|_| "secrets must be UTF-8".to_owned())?,
            );
        } else if let Some(value) = arg.strip_prefix("--secret=") {
            values.push(value.to_owned());
        } else if arg.starts_with('-') {
            return Err(format!("unknown option {arg:?}"));
        } else {
            // Not echoed: a stray value is most likely a secret missing its `--secret`.
            return Err("unexpected value; put --secret before each secret".to_owned());
        }
    }
    if values.is_empty() {
        return Err("give at least one --secret".to_owned());
    }
    Ok(Command::Run(values))
}

fn write_or_fail(out: &mut impl Write, text: &str) -> ExitCode {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&format!("cannot write standard output: {error}")),
    }
}

fn fail(message: &str) -> ExitCode {
    let _ = writeln!(io::stderr().lock(), "redact: {message}");
    ExitCode::FAILURE
}
