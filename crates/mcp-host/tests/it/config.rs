//! Server configuration checks: `:env` injection variables, tool names, server names.

use yetibot_mcp_host::{ServerConfig, ServerSet};
use yetibot_redaction::Secret;

const VALUE: &str = "/tmp/evil-value-1234.so";

fn stdio_with_env(name: &str) -> ServerConfig {
    ServerConfig {
        name: Some("local".into()),
        command: Some("/usr/bin/server".into()),
        env: Some(
            [(name.to_owned(), Secret::new(VALUE))]
                .into_iter()
                .collect(),
        ),
        ..ServerConfig::default()
    }
}

/// The problems of one server config, as `path: reason` strings.
fn problems(config: ServerConfig) -> Vec<String> {
    match ServerSet::from_config(&[config], None) {
        Ok(_) => Vec::new(),
        Err(problems) => problems.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn env_cannot_inject_loader_or_interpreter_code() {
    for name in [
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "ld_audit",
        "LD_ANYTHING_ELSE",
        "DYLD_INSERT_LIBRARIES",
        "dyld_library_path",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONINSPECT",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "BASH_ENV",
        "ENV",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "GCONV_PATH",
        "Node_Options",
    ] {
        let found = problems(stdio_with_env(name));
        let upper = name.to_ascii_uppercase();
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        assert!(
            found[0].starts_with(&format!("servers[0].env.{name}: must not set {upper}:")),
            "{found:?}"
        );
        assert!(!found[0].contains(VALUE), "{found:?}");
    }
}

#[test]
fn env_cannot_replace_path() {
    for name in ["PATH", "Path"] {
        let found = problems(stdio_with_env(name));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("must not set PATH: the host chooses"),
            "{found:?}"
        );
        assert!(!found[0].contains(VALUE), "{found:?}");
    }
}

#[test]
fn ordinary_env_variables_are_accepted() {
    for name in [
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "EXA_API_KEY",
        "HOLD_PATH",
        "MY_LD_FLAG",
    ] {
        assert_eq!(
            problems(stdio_with_env(name)),
            Vec::<String>::new(),
            "{name}"
        );
    }
}

#[test]
fn env_names_that_could_alter_a_log_line_are_refused_and_shown_escaped() {
    assert_eq!(
        problems(stdio_with_env("A\u{1b}[31mB")),
        ["servers[0].env.A\\u{1b}\\u{5b}31mB: is not a valid environment variable name"]
    );
}

#[test]
fn invalid_header_names_are_shown_escaped() {
    let config = ServerConfig {
        name: Some("web".into()),
        url: Some("https://a.example/mcp".into()),
        headers: Some(
            [("X\u{1b}]0;t\u{7}".to_owned(), Secret::new(VALUE))]
                .into_iter()
                .collect(),
        ),
        ..ServerConfig::default()
    };
    assert_eq!(
        problems(config),
        ["servers[0].headers.X\\u{1b}\\u{5d}0\\u{3b}t\\u{7}: is not a valid HTTP header name"]
    );
}

#[test]
fn allowlisted_tool_names_follow_the_naming_rule() {
    let config = ServerConfig {
        name: Some("web".into()),
        url: Some("https://a.example/mcp".into()),
        tools: Some(vec![
            "ok_name".into(),
            "ec\u{200b}ho".into(),
            "n".repeat(129),
        ]),
        ..ServerConfig::default()
    };
    let found = problems(config);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("servers[0].tools[1]: must be 1 to 128 characters"));
    assert!(found[1].starts_with("servers[0].tools[2]: must be 1 to 128 characters"));
}

#[test]
fn server_names_have_no_control_or_invisible_characters() {
    for name in ["we\u{1b}[31mb", "we\u{200b}b", "web\u{202e}"] {
        let config = ServerConfig {
            name: Some(name.into()),
            url: Some("https://a.example/mcp".into()),
            ..ServerConfig::default()
        };
        let found = problems(config);
        assert_eq!(
            found,
            ["servers[0].name: must not contain control, zero-width or bidirectional characters"],
            "{name:?}"
        );
    }
}
