//! Shared helpers: locating and starting the fixture server, building hosts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use tokio::io::AsyncBufReadExt;
use yetibot_mcp_host::{Host, HostOptions, ServerConfig, ServerSet};
use yetibot_redaction::Secret;

/// The fixture binary, built by this test run so it always matches the source.
pub(crate) fn fixture_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| mcp_fixture::build_binary(env!("CARGO")).expect("the fixture builds"))
}

/// A stdio server config running the fixture with these arguments.
pub(crate) fn stdio_config(name: &str, args: &[&str]) -> ServerConfig {
    ServerConfig {
        name: Some(name.into()),
        command: Some(fixture_bin().display().to_string()),
        args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
        ..ServerConfig::default()
    }
}

/// A remote server config for this URL and headers.
pub(crate) fn http_config(name: &str, url: &str, headers: &[(&str, &str)]) -> ServerConfig {
    ServerConfig {
        name: Some(name.into()),
        url: Some(url.into()),
        headers: (!headers.is_empty()).then(|| {
            headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Secret::new(*v)))
                .collect::<BTreeMap<_, _>>()
        }),
        ..ServerConfig::default()
    }
}

/// A host for these configs with the given timeout.
pub(crate) fn host(configs: &[ServerConfig], timeout_ms: i64) -> Host {
    let servers = ServerSet::from_config(configs, Some(timeout_ms)).expect("valid test config");
    Host::new(servers, HostOptions::new()).expect("host builds")
}

/// The fixture serving Streamable HTTP on a loopback port, killed when dropped.
pub(crate) struct HttpFixture {
    _child: tokio::process::Child,
    pub(crate) url: String,
}

impl HttpFixture {
    pub(crate) async fn start(extra: &[&str]) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut child = tokio::process::Command::new(fixture_bin())
            .args(["--http", "127.0.0.1:0"])
            .args(extra)
            .env_clear()
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the fixture starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .expect("the fixture prints its address");
        let url = line
            .trim()
            .strip_prefix("listening ")
            .expect("the fixture announces its URL")
            .to_owned();
        Self { _child: child, url }
    }
}

/// Whether a process is gone or only a zombie awaiting its parent.
pub(crate) fn process_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Whether every process of this process group is gone or a zombie.
pub(crate) fn group_ended(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().all(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return true;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return true;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state, ppid, pgrp
        fields.get(2) != Some(&pgid.to_string().as_str()) || fields.first() == Some(&"Z")
    })
}

/// A fresh path in the temporary directory for a fixture's record file, removed on drop.
pub(crate) struct TempFile(pub(crate) PathBuf);

impl TempFile {
    pub(crate) fn new(label: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("mcp-host-{label}-{}-{n}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    pub(crate) fn arg(&self) -> String {
        self.0.display().to_string()
    }

    /// The JSON lines written so far.
    pub(crate) fn lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("the fixture writes JSON lines"))
            .collect()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The `mcp-cli` example, built by this test run.
pub(crate) fn cli_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        mcp_fixture::build_example(env!("CARGO"), "yetibot-mcp-host", "mcp-cli")
            .expect("the example builds")
    })
}
