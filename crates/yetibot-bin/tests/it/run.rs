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
fn usage_errors_exit_64_and_help_exits_0() {
    for args in [
        &["run"][..],
        &["--no-such-flag", "run", "echo"],
        &["no-such-command"],
    ] {
        let out = run(&[], args);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    for args in [&["--help"][..], &["run", "--help"], &["--version"]] {
        let out = run(&[], args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
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

#[test]
fn aliases_persist_between_runs_in_the_default_sqlite_file() {
    let dir = crate::Workdir::new();
    let out = crate::run_in(&dir, &[], &["run", r#"alias hi = "echo hello $s""#]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi alias created\n");
    assert!(dir.path.join("data").join("yetibot.db").is_file());
    let out = crate::run_in(&dir, &[], &["run", "hi there"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello there\n");
    // Another file is another store.
    let out = crate::run_in(
        &dir,
        &[("YETIBOT_DB_SQLITE_PATH", "other.db")],
        &["run", "alias"],
    );
    assert_eq!(out.status.code(), Some(1), "no aliases is an error");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "💥 Error in `alias`: No aliases have been defined 💥\n"
    );
    assert!(dir.path.join("other.db").is_file());
    // History is read from the same file (`run` itself records nothing).
    let out = crate::run_in(&dir, &[], &["run", "history | count"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0\n");
    let out = crate::run_in(
        &dir,
        &[("YETIBOT_HISTORY_DISABLED", "true")],
        &["run", "history"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("history is not enabled"));
}

#[test]
fn a_database_url_keeps_aliases_in_postgres() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let schema = format!("yb_bin_test_{}", std::process::id());
    let admin = "postgresql://postgres@127.0.0.1:5432/test";
    let sql = |statement: String| {
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
                .await
                .expect("PostgreSQL runs on 127.0.0.1:5432 (.ci/run starts it)");
            let running = tokio::spawn(connection);
            let result = client.batch_execute(&statement).await;
            drop(client);
            let _ = running.await;
            result
        })
    };
    sql(format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .expect("create the schema");
    let url =
        format!("postgresql://postgres@127.0.0.1:5432/test?options=-c%20search_path%3D{schema}");
    let env = [("YETIBOT_DB_URL", url.as_str())];
    let dir = crate::Workdir::new();
    let first = crate::run_in(&dir, &env, &["run", r#"alias pg = "echo from postgres""#]);
    let second = crate::run_in(&dir, &env, &["run", "pg"]);
    let _ = sql(format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    assert_eq!(String::from_utf8_lossy(&first.stdout), "pg alias created\n");
    assert_eq!(String::from_utf8_lossy(&second.stdout), "from postgres\n");
    assert!(
        !dir.path.join("data").exists(),
        "no SQLite file when a URL is given"
    );
}

#[test]
fn an_unreachable_database_is_a_clear_error_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("postgresql://bot:pw-0123456789-secret@127.0.0.1:{port}/yetibot");
    let out = run(&[("YETIBOT_DB_URL", &url)], &["run", "echo hi"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr,
        "cannot open the history store: cannot connect to the database: connection refused\n"
    );
    assert!(out.stdout.is_empty());
}
