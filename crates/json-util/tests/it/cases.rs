//! Runs every case of `cases.txt` through `preflight` and `execute` and compares the exact
//! reply.

use yetibot_json_util::{Call, Reply, execute, preflight};
use yetibot_redaction::Secrets;

use crate::support::Scripted;

/// One case of the file.
#[derive(Debug, Default)]
struct Case {
    name: String,
    line: usize,
    arguments: String,
    secrets: Vec<String>,
    draws: Vec<usize>,
    reply: String,
}

fn load() -> Vec<Case> {
    let text = include_str!("cases.txt");
    let mut cases: Vec<Case> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Some(name) = line.strip_prefix("## ") {
            cases.push(Case {
                name: name.to_owned(),
                line: index + 1,
                ..Case::default()
            });
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let case = cases
            .last_mut()
            .expect("a field line comes after a ## name line");
        let (key, value) = line.split_once(' ').expect("field lines are `key value`");
        match key {
            "args" => case.arguments = value.to_owned(),
            "secrets" => case.secrets = serde_json::from_str(value).expect("secrets array"),
            "draws" => case.draws = serde_json::from_str(value).expect("draws array"),
            "reply" => case.reply = value.to_owned(),
            other => panic!("line {}: unknown field {other}", index + 1),
        }
    }
    cases
}

/// Runs one case: preflight decides first; a call that fails it must answer with the same
/// error from execute, and one that passes must not fail in execute.
fn check(case: &Case) -> Result<(), String> {
    let secrets = Secrets::new(&case.secrets).map_err(|e| e.to_string())?;
    let call = Call::new(case.arguments.clone());
    let checked = preflight(std::slice::from_ref(&call), &secrets);
    let reply = execute(&call, &mut Scripted::new(case.draws.clone()), &secrets);
    match checked {
        Err(batch) if Some(batch.error()) != reply.error() => {
            return Err(format!(
                "preflight said {:?}, execute said {:?}",
                batch.error(),
                reply.error()
            ));
        }
        Err(batch) if Reply::failure(batch.error()) != reply => {
            return Err("the failure reply differs from Reply::failure".to_owned());
        }
        Ok(()) if reply.is_error() => {
            return Err(format!(
                "preflight passed but execute failed with {:?}",
                reply.error()
            ));
        }
        _ => {}
    }
    if reply.as_json().len() > yetibot_json_util::limits::MAX_REPLY_BYTES {
        return Err("the reply exceeds the bound".to_owned());
    }
    if reply.as_json() != case.reply {
        return Err(format!(
            "expected {}\n     got {}",
            clip(&case.reply),
            clip(reply.as_json())
        ));
    }
    Ok(())
}

/// At most 300 characters of `text`, so a failure report stays readable.
fn clip(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[test]
fn every_case_gives_the_expected_reply() {
    let cases = load();
    assert!(cases.len() >= 150, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(case)
                .err()
                .map(|why| format!("line {} ({}):\n     {why}", case.line, case.name))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_operator_and_error_category_is_covered() {
    let cases = load();
    for operation in yetibot_json_util::Operation::ALL {
        let needle = format!("\"operation\":\"{}\"", operation.name());
        let count = cases
            .iter()
            .filter(|c| c.arguments.contains(&needle))
            .count();
        assert!(count >= 3, "{operation}: only {count} cases");
    }
    for category in [
        "invalid_arguments",
        "invalid_json",
        "invalid_input",
        "limit_exceeded",
        "credential",
    ] {
        let needle = format!("\"category\":\"{category}\"");
        assert!(
            cases.iter().any(|c| c.reply.contains(&needle)),
            "{category} not covered"
        );
    }
}
