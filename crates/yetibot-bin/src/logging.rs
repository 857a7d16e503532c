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
//! Once a request touches private content (a GitHub toolset, a proposal, Clef or Clairic),
//! nothing more from inside that request is written, at any level and from any crate, so
//! not even a lifted cap lets its payloads through: the libraries run each request in a
//! [`request_span`](yetibot_redaction::private::request_span) and mark it
//! ([`mark_private`](yetibot_redaction::private::mark_private)), and `PrivateRequests`
//! drops every later event whose span scope holds that request, except the sanitized
//! proposal audit ([`AUDIT_TARGET`]). Requests running beside it log as before.
//!
//! As a second line of defence, every formatted line is redacted with the configuration's
//! credentials before it is written. Crates that log through the `log` facade rather than
//! `tracing` (reqwest, rustls, tokio-postgres) are not bridged at all, so none of their
//! records is written.

use std::io::IsTerminal as _;

use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use yetibot_redaction::Secrets;
use yetibot_redaction::private::{PRIVATE_TARGET, REQUEST_TARGET};

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

/// The target of the sanitized proposal audit: the one kind of event a private request
/// still writes.
pub const AUDIT_TARGET: &str = "ai_proposal";

/// Targets enabled at every level whatever `RUST_LOG` says, because request privacy rests on
/// them: the request spans and the private marker (which is never written).
const PRIVACY_TARGETS: &[&str] = &[REQUEST_TARGET, PRIVATE_TARGET];

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
    // A directive for a silenced crate is dropped: nothing can turn it back on. Nor can one
    // turn off the request spans or the private marker.
    let silenced = |directive: &str| {
        directive_target(directive).is_some_and(|target| {
            SILENCED_TARGETS
                .iter()
                .chain(PRIVACY_TARGETS)
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
    for name in PRIVACY_TARGETS {
        directives.push_str(&format!(",{name}=trace"));
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

/// Marks a request span private when the private marker arrives inside it, and from then on
/// drops every event inside that request, whatever its crate or level, except the proposal
/// audit. The marker itself is never written. Outermost in the stack, so that no other layer
/// sees a dropped event.
#[derive(Debug, Clone, Copy, Default)]
struct PrivateRequests;

/// The mark on a private request's span.
#[derive(Debug)]
struct Private;

impl<S> Layer<S> for PrivateRequests
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn event_enabled(&self, event: &Event<'_>, ctx: Context<'_, S>) -> bool {
        let target = event.metadata().target();
        if target == PRIVATE_TARGET {
            // The outermost request span is the request: a request span nested inside it
            // (a conductor event running a command line) is part of it.
            let request = ctx.event_scope(event).and_then(|scope| {
                scope
                    .from_root()
                    .find(|span| span.metadata().target() == REQUEST_TARGET)
            });
            if let Some(request) = request {
                request.extensions_mut().replace(Private);
            }
            return false;
        }
        if target == AUDIT_TARGET {
            return true;
        }
        ctx.event_scope(event).is_none_or(|scope| {
            !scope
                .into_iter()
                .any(|span| span.extensions().get::<Private>().is_some())
        })
    }
}

/// The subscriber: `filter`, then lines in `format` to `writer` (coloured when `ansi`), with
/// [`PrivateRequests`] outermost.
fn subscriber<W>(
    format: Format,
    filter: EnvFilter,
    ansi: bool,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let lines = match format {
        Format::Human => tracing_subscriber::fmt::layer()
            .with_target(false)
            .with_ansi(ansi)
            .with_writer(writer)
            .boxed(),
        Format::Json => tracing_subscriber::fmt::layer()
            .json()
            // Span fields can be any crate's data; the event's own fields are enough.
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(writer)
            .boxed(),
    };
    Box::new(
        tracing_subscriber::registry()
            .with(filter)
            .with(lines)
            .with(PrivateRequests),
    )
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
    let ansi = std::io::stderr().is_terminal();
    let installed =
        tracing::subscriber::set_global_default(subscriber(format, env_filter, ansi, writer));
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
        caps + ",yetibot_request=trace,yetibot_private=trace,slack_morphism=off"
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

    /// Lines written to a shared buffer.
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Lines {
        fn text(&self) -> String {
            String::from_utf8_lossy(
                &self
                    .0
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            )
            .into_owned()
        }
    }

    /// Runs `body` under the process's subscriber built for `rust_log` in `format`, and
    /// returns what it wrote.
    fn logged(format: Format, rust_log: &str, body: impl FnOnce()) -> String {
        let lines = Lines::default();
        let writer = lines.clone();
        let built = filter(Level::Info, W, Some(rust_log));
        let env_filter = EnvFilter::builder()
            .parse(&built.directives)
            .expect("the filter parses");
        let subscriber = subscriber(format, env_filter, false, move || writer.clone());
        tracing::subscriber::with_default(subscriber, body);
        lines.text()
    }

    use yetibot_redaction::private::{mark_private, request_span};

    #[test]
    fn a_private_request_writes_nothing_after_its_mark_but_the_audit() {
        for format in [Format::Human, Format::Json] {
            let text = logged(format, "trace,rmcp=trace", || {
                tracing::info!("outside any request");
                let private = request_span();
                let other = request_span();
                private.in_scope(|| {
                    tracing::debug!("before the mark");
                    mark_private();
                    tracing::info!("after the mark");
                    tracing::error!("an error after the mark");
                    // A protocol crate's span and event below the request, its cap lifted.
                    tracing::info_span!(target: "rmcp::service", "serve_inner").in_scope(|| {
                        tracing::debug!(target: "rmcp::service", "payload canary-private-1");
                        // A nested request span (a command line inside a chat event) is part
                        // of the private request, and marking again changes nothing.
                        request_span().in_scope(|| {
                            mark_private();
                            tracing::warn!("nested canary-private-2");
                        });
                    });
                    tracing::info!(target: AUDIT_TARGET, step = "staged", "ai-proposal");
                });
                // Another request running beside it, and the process afterwards, log as
                // before.
                other.in_scope(|| tracing::info!("the other request"));
                private.in_scope(|| tracing::info!("back in canary-private-3"));
                tracing::info!("outside again");
            });
            for kept in [
                "outside any request",
                "before the mark",
                "ai-proposal",
                "the other request",
                "outside again",
            ] {
                assert!(
                    text.contains(kept),
                    "{format:?}: {kept:?} missing from {text}"
                );
            }
            for dropped in [
                "after the mark",
                "an error after the mark",
                "canary-private",
                "private request",
                PRIVATE_TARGET,
            ] {
                assert!(
                    !text.contains(dropped),
                    "{format:?}: {dropped:?} written: {text}"
                );
            }
        }
    }

    #[test]
    fn tasks_a_private_request_spawns_in_its_span_are_private_too() {
        use tracing::Instrument as _;
        let text = logged(Format::Human, "debug", || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a runtime");
            runtime.block_on(
                async {
                    mark_private();
                    let child = tokio::spawn(
                        async { tracing::info!("spawned canary-private-4") }.in_current_span(),
                    );
                    let _ = child.await;
                    tracing::info!("awaited canary-private-5");
                }
                .instrument(request_span()),
            );
            runtime
                .block_on(async { tracing::info!("a public request") }.instrument(request_span()));
        });
        assert!(!text.contains("canary-private"), "{text}");
        assert!(text.contains("a public request"), "{text}");
    }

    #[test]
    fn no_directive_can_turn_off_the_request_spans_or_the_marker() {
        for rust_log in [
            "info,yetibot_private=off,yetibot_request=off",
            "warn,yetibot_private",
            "error",
        ] {
            let built = filter(Level::Info, W, Some(rust_log));
            assert!(
                built
                    .directives
                    .contains(",yetibot_request=trace,yetibot_private=trace,"),
                "{built:?}"
            );
            assert!(
                !built.directives.contains("yetibot_private=off"),
                "{built:?}"
            );
            let text = logged(Format::Human, rust_log, || {
                request_span().in_scope(|| {
                    mark_private();
                    tracing::error!("canary-private-6");
                });
                tracing::error!("a public error");
            });
            assert!(!text.contains("canary-private"), "{rust_log}: {text}");
            assert!(text.contains("a public error"), "{rust_log}: {text}");
        }
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
