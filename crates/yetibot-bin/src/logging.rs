//! The process's log subscriber: human-readable or JSON lines on standard error, filtered by
//! `RUST_LOG` when it is set and by `:yetibot :log :level` otherwise.
//!
//! Our own log lines never carry a prompt, a tool argument or result, or a credential; they
//! describe what happened, not the data it happened to. The libraries underneath are another
//! matter: at info level rmcp prints every notification a server sends, at debug and trace
//! whole JSON-RPC messages (tool arguments and results included), and the HTTP stack prints
//! connection and frame details. Those crates ([`CAPPED_TARGETS`]) are therefore capped
//! whatever level is asked for, so that `RUST_LOG=debug` on a production bot cannot turn
//! chat content into log lines: at `warn` for the bot, whose operator wants to hear about a
//! failing connection, and silenced for `run` and `doctor`, which report failures in their
//! own words and whose standard error should hold nothing else. An operator who really needs
//! one of them names it (`RUST_LOG=info,rmcp=debug`): a directive whose target is the crate,
//! or a module inside it, lifts the cap for that crate alone, and a warning says so, because
//! from then on that crate's payloads reach the log.
//!
//! As a second line of defence, every formatted line is redacted with the configuration's
//! credentials before it is written. Crates that log through the `log` facade rather than
//! `tracing` (reqwest, rustls, tokio-postgres) are not bridged at all, so none of their
//! records is written.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;
use yetibot_redaction::Secrets;

use crate::config::Config;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// One readable line per event, coloured only when standard error is a terminal.
    #[default]
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

/// A log level as `:yetibot :log :level` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Level {
    /// Nothing at all.
    Off,
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// The default: what the bot is doing, without detail.
    #[default]
    Info,
    /// Detail for debugging.
    Debug,
    /// Everything.
    Trace,
}

impl Level {
    /// Reads a configured level, ignoring case. Timbre's `fatal` and `report` (the levels
    /// above `error` of the logger upstream Yetibot uses) mean errors only here, so such a
    /// setting keeps loading.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "off" => Self::Off,
            "error" | "fatal" | "report" => Self::Error,
            "warn" | "warning" => Self::Warn,
            "info" => Self::Info,
            "debug" => Self::Debug,
            "trace" => Self::Trace,
            _ => return None,
        })
    }

    /// The level as a filter directive.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// Third-party crates (tracing targets) held at their role's cap ([`role_cap`]) unless
/// `RUST_LOG` names them.
pub const CAPPED_TARGETS: &[&str] = &[
    "rmcp",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "rustls",
    "tokio_postgres",
    "tokio_tungstenite",
    "tokio_websockets",
    "tungstenite",
    "twilight_gateway",
    "twilight_http",
    "twilight_http_ratelimiting",
];

/// Crates whose log lines are never written, whatever `RUST_LOG` says: they quote what
/// they handle. slack-morphism logs an envelope it has no handler for with the user's text
/// and its `response_url` (a capability URL) at warn, and a failed reconnect with the
/// Socket Mode URL (its `ticket`) and Slack's response body at error. The Slack adapter
/// reports those events in its own words instead.
pub const SILENCED_TARGETS: &[&str] = &["slack_morphism"];

/// Whether `target` is the crate `name` or a module inside it.
fn names_crate(target: &str, name: &str) -> bool {
    target
        .strip_prefix(name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// What runs, which decides the level when `RUST_LOG` is not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The long-running bot (`serve`): the configured level, third-party crates at `warn`.
    Service,
    /// A command whose output is the point (`run`, `doctor`): at most warnings, unless the
    /// configured level is quieter still, and nothing from third-party crates, so that
    /// standard error carries only what the command itself has to say.
    Command,
}

/// The filter a process runs with: its directives, and the capped crates that `RUST_LOG`
/// named explicitly and so lifted the cap of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// Directives in `RUST_LOG` syntax.
    pub directives: String,
    /// Crates of [`CAPPED_TARGETS`] that log uncapped.
    pub uncapped: Vec<&'static str>,
}

/// The filter for `level` (the configured one, adjusted for the role), the role's `cap` and
/// the value of `RUST_LOG`, which replaces the level when it is set and not blank. Every
/// capped crate that no directive targets gets `crate=<cap>`; since a directive with a
/// target is more specific than a bare level, the cap holds even under `RUST_LOG=trace`.
#[must_use]
pub fn filter(level: Level, cap: Level, rust_log: Option<&str>) -> Filter {
    let asked = rust_log
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(level.as_str());
    // A directive for a silenced crate is dropped: nothing can turn it back on.
    let silenced = |directive: &str| {
        directive_target(directive).is_some_and(|target| {
            SILENCED_TARGETS
                .iter()
                .any(|name| names_crate(target, name))
        })
    };
    let kept: Vec<&str> = asked.split(',').filter(|d| !silenced(d)).collect();
    let targets: Vec<&str> = kept.iter().copied().filter_map(directive_target).collect();
    let mut directives = kept.join(",");
    if directives.trim().is_empty() {
        directives = level.as_str().to_owned();
    }
    let mut uncapped = Vec::new();
    for &name in CAPPED_TARGETS {
        let named = targets.iter().any(|target| names_crate(target, name));
        if named {
            uncapped.push(name);
        } else {
            directives.push_str(&format!(",{name}={}", cap.as_str()));
        }
    }
    for name in SILENCED_TARGETS {
        directives.push_str(&format!(",{name}=off"));
    }
    Filter {
        directives,
        uncapped,
    }
}

/// The target a directive names (`rmcp` in `rmcp::service[span]=debug`), or `None` for a
/// bare level or a span-only directive.
fn directive_target(directive: &str) -> Option<&str> {
    let directive = directive.trim();
    let end = directive.find(['[', '=']).unwrap_or(directive.len());
    let target = directive[..end].trim();
    // Alone, a level name (or number) is a level for the whole process, not a target.
    let bare_level = end == directive.len()
        && (["off", "error", "warn", "info", "debug", "trace"]
            .iter()
            .any(|level| target.eq_ignore_ascii_case(level))
            || target.parse::<u8>().is_ok());
    (!target.is_empty() && !bare_level).then_some(target)
}

/// The level a role logs at when `RUST_LOG` is not set.
#[must_use]
pub fn role_level(configured: Level, role: Role) -> Level {
    match role {
        Role::Service => configured,
        Role::Command => configured.min(Level::Warn),
    }
}

/// The most a capped third-party crate logs in a role.
#[must_use]
pub fn role_cap(role: Role) -> Level {
    match role {
        Role::Service => Level::Warn,
        Role::Command => Level::Off,
    }
}

/// A writer (standard error, for the subscriber) behind the configuration's redaction set.
/// The formatter writes each event as one buffer, so a credential is always whole inside
/// one write.
#[derive(Debug)]
struct Redacted<W> {
    secrets: Secrets,
    inner: W,
}

impl<W: std::io::Write> std::io::Write for Redacted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let shown = self.secrets.redact_text(&text);
        self.inner.write_all(shown.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Installs the process's subscriber, writing redacted lines to standard error, once the
/// configuration has loaded: `RUST_LOG` (read through the configuration module) if set, else
/// the configured level adjusted for `role`. An unusable `RUST_LOG` falls back to that
/// level, with a warning. Calling it again does nothing.
pub fn init(format: Format, config: &Config, role: Role) {
    let level = role_level(config.log_level, role);
    let cap = role_cap(role);
    let rust_log = crate::config::environment::rust_log();
    let mut chosen = filter(level, cap, rust_log.as_deref());
    let mut rejected = false;
    let env_filter = match EnvFilter::builder().parse(&chosen.directives) {
        Ok(env_filter) => env_filter,
        Err(_) => {
            rejected = true;
            chosen = filter(level, cap, None);
            EnvFilter::builder()
                .parse(&chosen.directives)
                .unwrap_or_else(|_| EnvFilter::new(level.as_str()))
        }
    };
    let secrets = config.secrets.clone();
    let writer = move || Redacted {
        secrets: secrets.clone(),
        inner: std::io::stderr(),
    };
    let installed = match format {
        Format::Human => tracing_subscriber::fmt()
            .with_target(false)
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(writer)
            .with_env_filter(env_filter)
            .try_init(),
        Format::Json => tracing_subscriber::fmt()
            .json()
            // Span fields can be any crate's data; the event's own fields are enough.
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(writer)
            .with_env_filter(env_filter)
            .try_init(),
    };
    if installed.is_err() {
        return;
    }
    if rejected {
        tracing::warn!(
            "RUST_LOG is not a valid filter and is ignored; logging at level {}",
            level.as_str()
        );
    }
    for name in chosen.uncapped {
        tracing::warn!(
            "RUST_LOG names {name}, so its debug and trace events are logged; they can contain protocol payloads such as prompts, tool arguments and results"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps_except(except: &[&str]) -> String {
        let caps: String = CAPPED_TARGETS
            .iter()
            .filter(|name| !except.contains(name))
            .map(|name| format!(",{name}=warn"))
            .collect();
        caps + ",slack_morphism=off"
    }

    const W: Level = Level::Warn;

    #[test]
    fn third_party_crates_stay_at_warn_under_any_bare_level() {
        assert_eq!(
            filter(Level::Info, W, None),
            Filter {
                directives: format!("info{}", caps_except(&[])),
                uncapped: vec![],
            }
        );
        let trace = filter(Level::Info, W, Some("trace"));
        assert_eq!(trace.directives, format!("trace{}", caps_except(&[])));
        assert!(trace.uncapped.is_empty());
        // A span-only directive names no target, so it lifts no cap either.
        let span = filter(Level::Info, W, Some("[request]=trace"));
        assert!(span.uncapped.is_empty(), "{span:?}");
        // A blank RUST_LOG is unset.
        assert_eq!(
            filter(Level::Debug, W, Some("  ")).directives,
            format!("debug{}", caps_except(&[]))
        );
    }

    #[test]
    fn naming_a_crate_or_its_module_lifts_only_that_crates_cap() {
        let named = filter(Level::Info, W, Some("info,rmcp=debug"));
        assert_eq!(named.uncapped, ["rmcp"]);
        assert_eq!(
            named.directives,
            format!("info,rmcp=debug{}", caps_except(&["rmcp"]))
        );
        let module = filter(Level::Info, W, Some("hyper_util::client[conn]=trace,h2"));
        assert_eq!(module.uncapped, ["hyper_util", "h2"]);
        // A longer name that merely starts like a capped crate names that crate, not ours.
        let other = filter(Level::Info, W, Some("hyperloop=debug,rmcpx=trace"));
        assert!(other.uncapped.is_empty(), "{other:?}");
    }

    #[test]
    fn slack_morphism_is_never_written_even_when_asked_for() {
        for rust_log in [
            Some("slack_morphism=trace"),
            Some("info,slack_morphism::listener=debug"),
            Some("trace"),
            None,
        ] {
            let built = filter(Level::Info, W, rust_log);
            assert!(
                built.directives.ends_with(",slack_morphism=off"),
                "{built:?}"
            );
            assert_eq!(
                built.directives.matches("slack_morphism").count(),
                1,
                "{built:?}"
            );
            assert!(EnvFilter::builder().parse(&built.directives).is_ok());
        }
    }

    #[test]
    fn every_directive_the_filter_builds_parses() {
        for rust_log in [
            None,
            Some("trace"),
            Some("info,rmcp=debug"),
            Some("yetibot=trace"),
        ] {
            let built = filter(Level::Info, W, rust_log);
            assert!(
                EnvFilter::builder().parse(&built.directives).is_ok(),
                "{built:?}"
            );
        }
        assert!(
            EnvFilter::builder()
                .parse(filter(Level::Info, W, Some("rmcp=loud")).directives)
                .is_err()
        );
    }

    #[test]
    fn commands_silence_third_party_crates() {
        assert_eq!(role_cap(Role::Service), Level::Warn);
        assert_eq!(role_cap(Role::Command), Level::Off);
        let command = filter(Level::Warn, Level::Off, Some("trace"));
        assert!(
            command.directives.starts_with("trace,rmcp=off,"),
            "{command:?}"
        );
    }

    #[test]
    fn log_lines_are_redacted_before_they_are_written() {
        use std::io::Write as _;
        let mut written = Vec::new();
        let mut writer = Redacted {
            secrets: Secrets::new(["sk-log-canary-0123"]).expect("secrets"),
            inner: &mut written,
        };
        let line = b"{\"fields\":{\"message\":\"key sk-log-canary-0123\"}}\n";
        assert_eq!(writer.write(line).expect("written"), line.len());
        assert_eq!(
            String::from_utf8_lossy(&written),
            "{\"fields\":{\"message\":\"key [redacted]\"}}\n"
        );
    }

    #[test]
    fn commands_log_warnings_unless_configured_quieter() {
        assert_eq!(role_level(Level::Debug, Role::Service), Level::Debug);
        assert_eq!(role_level(Level::Debug, Role::Command), Level::Warn);
        assert_eq!(role_level(Level::Info, Role::Command), Level::Warn);
        assert_eq!(role_level(Level::Error, Role::Command), Level::Error);
        assert_eq!(role_level(Level::Off, Role::Command), Level::Off);
    }

    #[test]
    fn levels_read_like_upstream_yetibot() {
        assert_eq!(Level::parse("DEBUG"), Some(Level::Debug));
        assert_eq!(Level::parse(" warn "), Some(Level::Warn));
        assert_eq!(Level::parse("fatal"), Some(Level::Error));
        assert_eq!(Level::parse("report"), Some(Level::Error));
        assert_eq!(Level::parse("loud"), None);
        assert_eq!(Level::default(), Level::Info);
    }
}
