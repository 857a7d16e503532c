//! The golden tables (`language.txt` for the language itself, `collections.txt` for the
//! collection commands): each case runs its `>` lines in order as one user in one channel,
//! and compares what the last one posts (and, when given, its data).
//!
//! Format: lines before a file's first case are comments; `## name` starts a case; `> line` is a chat message (the prefix is added when
//! the line does not start with `~`, which marks an ordinary chat line); the lines after the
//! last `>` up to `data:` or the next case are the expected messages joined by newlines
//! (`(nothing)` when nothing is posted); `data: <json>` is the expected data. `admin` on its
//! own line makes the user an admin.

use std::sync::Arc;

use yetibot_command::{Caller, Interpreter, Settings, builtins};
use yetibot_history::MemoryAliases;
use yetibot_json_util::{SplitMix64, Value};

struct Case {
    name: String,
    line: usize,
    inputs: Vec<String>,
    expected: Vec<String>,
    data: Option<String>,
    admin: bool,
}

/// Every table, with its file name.
const TABLES: &[(&str, &str)] = &[
    ("language.txt", include_str!("language.txt")),
    ("collections.txt", include_str!("collections.txt")),
];

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for (file, text) in TABLES {
        read_table(file, text, &mut cases);
    }
    for case in &mut cases {
        while case.expected.last().is_some_and(String::is_empty) {
            case.expected.pop();
        }
    }
    cases
}

fn read_table(file: &str, text: &str, cases: &mut Vec<Case>) {
    let first = cases.len();
    for (number, line) in text.lines().enumerate() {
        if let Some(name) = line.strip_prefix("## ") {
            cases.push(Case {
                name: format!("{file}: {name}"),
                line: number + 1,
                inputs: Vec::new(),
                expected: Vec::new(),
                data: None,
                admin: false,
            });
            continue;
        }
        // Lines before this file's first case (its header comment) belong to no case.
        if cases.len() == first {
            continue;
        }
        let Some(case) = cases.last_mut() else {
            continue;
        };
        if let Some(input) = line.strip_prefix("> ") {
            case.inputs.push(input.to_owned());
            case.expected.clear();
        } else if let Some(data) = line.strip_prefix("data: ") {
            case.data = Some(data.to_owned());
        } else if line == "admin" && case.inputs.is_empty() {
            case.admin = true;
        } else if !case.inputs.is_empty() && case.data.is_none() {
            case.expected.push(line.to_owned());
        }
    }
}

fn interpreter(admin: bool) -> Interpreter {
    let settings = Settings {
        admins: if admin { vec!["U1".into()] } else { Vec::new() },
        ..Settings::default()
    };
    Interpreter::new(
        builtins(),
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(7)),
        settings,
    )
}

fn caller() -> Caller {
    Caller {
        adapter: yetibot_conversation::AdapterKind::Cli,
        connection: "cli".into(),
        room: "#test".into(),
        user_id: "U1".into(),
        user_name: "tester".into(),
        trusted: true,
        message_id: None,
        platform: None,
    }
}

#[tokio::test]
async fn every_case_of_the_golden_table_gives_its_answer() {
    let cases = cases();
    assert!(cases.len() > 10, "the table has its cases");
    let mut failures = Vec::new();
    for case in &cases {
        let bot = interpreter(case.admin);
        let caller = caller();
        let mut last = Vec::new();
        let mut last_data = None;
        for input in &case.inputs {
            let message = match input.strip_prefix('~') {
                Some(chat) => chat.to_owned(),
                None => format!("!{input}"),
            };
            let replies = bot.handle_message(&caller, &message).await;
            last = replies.iter().flat_map(|r| r.messages()).collect();
            last_data = replies.last().and_then(|r| r.data.clone());
        }
        let got = if last.is_empty() {
            "(nothing)".to_owned()
        } else {
            last.join("\n")
        };
        let want = case.expected.join("\n");
        if got != want {
            failures.push(format!(
                "line {} ({}):\n  want: {want:?}\n  got:  {got:?}",
                case.line, case.name
            ));
            continue;
        }
        if let Some(data) = &case.data {
            let want = Value::parse(data).expect("valid expected data");
            if last_data.as_ref() != Some(&want) {
                failures.push(format!(
                    "line {} ({}): data\n  want: {}\n  got:  {:?}",
                    case.line,
                    case.name,
                    want.to_json(),
                    last_data.map(|d| d.to_json())
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
