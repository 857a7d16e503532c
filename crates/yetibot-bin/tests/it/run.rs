//! `yetibot run`: one command line through the same interpreter the adapters use, as the
//! local operator, with exit codes scripts can rely on.

use crate::{run, write_config};

#[test]
fn run_prints_what_a_chat_would_show() {
    let out = run(&[], &["run", "echo 1 | echo 2 | echo 3"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3 2 1\n");
    // The prefix is optional, and several words are one line.
    let out = run(&[], &["run", "!echo", "a", "b"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a b\n");
    let out = run(&[], &["run", "echo"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "No results\n");
}

#[test]
fn a_failing_command_prints_its_error_and_exits_1() {
    let out = run(&[], &["run", "echo x | xargs echo"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "💥 Error in `xargs echo`: Expected a collection 💥\n"
    );
    let out = run(&[], &["run", "echo a |echo b"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("a pipe needs one space"));
}

#[test]
fn json_output_carries_value_data_and_error() {
    let out = run(&[], &["run", "--json", "echo 1 | data"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"value\":\"1\",\"data\":\"1\",\"error\":null}\n"
    );
    let out = run(&[], &["run", "--json", "echo `x"]);
    assert_eq!(out.status.code(), Some(1));
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(parsed["value"], serde_json::Value::Null);
    assert!(
        parsed["error"]
            .as_str()
            .is_some_and(|e| e.contains("never closed"))
    );
}

#[test]
fn configuration_problems_exit_2_before_running_anything() {
    let (dir, file) = write_config("run-bad", r#"{:yetibot {:command {:prefix ""}}}"#);
    let out = run(&[("CONFIG_PATH", &file)], &["run", "echo hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("yetibot.command.prefix"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_local_operator_is_the_configured_user_and_a_prefix_can_change() {
    let (dir, file) = write_config(
        "run-local",
        r#"{:yetibot {:command {:prefix ","} :local {:user-id "U7"}}}"#,
    );
    let out = run(&[("CONFIG_PATH", &file)], &["run", ",echo configured"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "configured\n");
    std::fs::remove_dir_all(dir).ok();
}
