//! `echo`, `that` and `error`: the simplest commands, text in and text out (or a failure on
//! purpose).

use yetibot_json_util::Value;

use crate::registry::{Call, Category, CommandSpec, Plain};
use crate::value::Outcome;

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![
        CommandSpec::new("echo", &[Category::UTIL]).route(
            None,
            "echo <text> # say <text>",
            Plain(echo),
        ),
        CommandSpec::new("error", &[Category::UTIL]).route(
            None,
            "error <message> # fail with <message>, which stops the pipeline (to try out how errors behave)",
            Plain(error),
        ),
        CommandSpec::new("that", &[Category::UTIL])
            .route(
                Some(r"^cmd\s*$"),
                "that cmd # the last command run in this channel",
                Plain(that_cmd),
            )
            .route(
                None,
                "that # the last chat line in this channel that was not a command",
                Plain(that_line),
            ),
    ]
}

/// Echoes its arguments exactly, spaces kept; data passes through untouched.
fn echo(call: &Call<'_>) -> Outcome {
    Outcome::Value(Value::String(call.args.to_owned()))
}

/// Fails with its arguments (the piped text included) as the message.
fn error(call: &Call<'_>) -> Outcome {
    match call.args.trim() {
        "" => Outcome::error("`error` was run without a message"),
        message => Outcome::error(message),
    }
}

fn that_line(call: &Call<'_>) -> Outcome {
    let room = &call.runner.caller().room;
    match call.runner.recent().last_line(room) {
        Some(line) => Outcome::text(line),
        None => Outcome::error("there is no earlier chat line in this channel"),
    }
}

fn that_cmd(call: &Call<'_>) -> Outcome {
    let room = &call.runner.caller().room;
    match call.runner.recent().last_command(room) {
        Some(line) => Outcome::text(line),
        None => Outcome::error("no command has run in this channel yet"),
    }
}
