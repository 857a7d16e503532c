//! `yetibot doctor`: checks that every configured AI provider and MCP server answers, so an
//! operator learns about a wrong URL, a bad key or a model without tool calling before a
//! chat user does.
//!
//! For each provider it lists the models, reads the configured model's context window (from
//! the listing, and from Ollama's own API for a provider on Ollama's port), and sends one
//! small tool probe ([`Client::probe`]), the only request that can cost money: it is skipped
//! with `--no-probe`, for a provider without a model and for one with `:tool-calling false`.
//! For each MCP server it opens a session the way the `ai` command does, lists the tools and
//! closes it. All checks run at once, each under [`CHECK_TIMEOUT`].
//!
//! The module keeps planning and rendering ([`plan()`], [`line()`], [`table()`], [`Live`]) apart
//! from the checks themselves ([`check_all`]) so that the output can be tested without a
//! network. Every text shown is built from the crates' sanitized error messages and
//! redacted again with the configuration's credentials: no key, header value, key-file path
//! or response body can reach the terminal.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write};
use std::process::ExitCode;
use std::time::Duration;

use yetibot_ai_providers::limits::PROBE_MAX_OUTPUT_TOKENS;
use yetibot_ai_providers::{
    Client, ClientOptions, ContextWindowSource, ModelList, PROBE_TOOL, Provider,
};
use yetibot_mcp_host::{DropReason, DroppedTool, Host, sanitize_display};
use yetibot_redaction::Secrets;

use crate::config::Config;

/// The deadline of each check. The provider client's own ceiling is set to it as well, so a
/// provider that keeps a connection open but never finishes fails its check instead of
/// holding up the report for the client's usual ten minutes.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// How many dropped MCP tools a detail names before it only counts the rest.
const DROPPED_SHOWN: usize = 3;

/// The widest line the live display draws. Longer lines are cut, because a line that wraps
/// would take two rows on the screen and the redraw, which moves up one row per check,
/// would then overwrite the wrong lines; 80 columns is the narrowest terminal in common use.
const LIVE_WIDTH: usize = 80;

/// What the operator asked for on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Whether to send the tool probe (`false` with `--no-probe`).
    pub probe: bool,
}

/// Which check a row reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The provider's model listing.
    Models,
    /// The context window of the provider's configured model.
    ContextWindow,
    /// The function-tool probe.
    ToolProbe,
    /// An MCP server's session and tool listing.
    McpTools,
}

impl Check {
    /// The check's name in the output.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Models => "models",
            Self::ContextWindow => "context window",
            Self::ToolProbe => "tool probe",
            Self::McpTools => "mcp tools",
        }
    }
}

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It passed.
    Ok,
    /// It failed; the command exits 1.
    Failed,
    /// It was not run, for the reason in the detail; this is not a failure.
    Skipped,
}

impl Status {
    /// The result column's word.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "FAILED",
            Self::Skipped => "skipped",
        }
    }
}

/// A finished check: its status and a one-line, redacted detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How it ended.
    pub status: Status,
    /// What was found, or why it failed or was skipped.
    pub detail: String,
}

impl Outcome {
    fn ok(detail: impl Into<String>) -> Self {
        Self {
            status: Status::Ok,
            detail: detail.into(),
        }
    }

    fn failed(detail: impl Into<String>) -> Self {
        Self {
            status: Status::Failed,
            detail: detail.into(),
        }
    }

    fn skipped(detail: impl Into<String>) -> Self {
        Self {
            status: Status::Skipped,
            detail: detail.into(),
        }
    }

    fn timed_out() -> Self {
        Self::failed(format!(
            "timeout: no answer within {} s",
            CHECK_TIMEOUT.as_secs()
        ))
    }
}

/// One line of the report: a check of one provider or server, running while `outcome` is
/// `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The check.
    pub check: Check,
    /// The provider's or server's configured name.
    pub target: String,
    /// The result, once the check has finished.
    pub outcome: Option<Outcome>,
}

impl Row {
    fn new(check: Check, target: &str, outcome: Option<Outcome>) -> Self {
        Self {
            check,
            target: target.to_owned(),
            outcome,
        }
    }

    fn result(&self) -> &'static str {
        self.outcome
            .as_ref()
            .map_or("running", |outcome| outcome.status.label())
    }

    fn detail(&self) -> &str {
        self.outcome.as_ref().map_or("", |o| o.detail.as_str())
    }
}

/// Every check the configuration calls for, in configuration order: three per provider
/// (models, context window, tool probe), then one per MCP server. Checks that will not run
/// are already marked skipped, with the reason.
#[must_use]
pub fn plan(config: &Config, options: Options) -> Vec<Row> {
    let mut rows = Vec::new();
    for provider in config.providers.providers() {
        let name = provider.name();
        rows.push(Row::new(Check::Models, name, None));
        let context = provider
            .model()
            .is_none()
            .then(|| Outcome::skipped("no model configured"));
        rows.push(Row::new(Check::ContextWindow, name, context));
        let probe = probe_skip_reason(provider, options).map(Outcome::skipped);
        rows.push(Row::new(Check::ToolProbe, name, probe));
    }
    for server in config.servers.servers() {
        rows.push(Row::new(Check::McpTools, server.name(), None));
    }
    rows
}

/// Why the probe is not sent to `provider`, or `None` when it is.
fn probe_skip_reason(provider: &Provider, options: Options) -> Option<&'static str> {
    if !options.probe {
        Some("--no-probe")
    } else if provider.model().is_none() {
        Some("no model configured")
    } else if !provider.tool_calling() {
        Some("tool calling is off (:tool-calling false)")
    } else {
        None
    }
}

/// The line announcing the probe before any is sent, naming every provider that gets one,
/// or `None` when no probe will be sent.
#[must_use]
pub fn probe_notice(config: &Config, options: Options) -> Option<String> {
    let names: Vec<&str> = config
        .providers
        .providers()
        .iter()
        .filter(|p| probe_skip_reason(p, options).is_none())
        .map(Provider::name)
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "doctor sends one small tool-probe request (at most {PROBE_MAX_OUTPUT_TOKENS} output tokens) to each provider with a model: {}",
            names.join(", ")
        )
    })
}

/// One finished (or running) check as a plain line: `ok      models local: 2 models`.
#[must_use]
pub fn line(row: &Row) -> String {
    let detail = row.detail();
    let mut out = format!("{:<7} {} {}", row.result(), row.check.label(), row.target);
    if !detail.is_empty() {
        let _ = write!(out, ": {detail}");
    }
    out
}

/// The final report: one aligned row per check under a header, `check target result
/// detail`.
#[must_use]
pub fn table(rows: &[Row]) -> String {
    let header = ["check", "target", "result"];
    let cells: Vec<[&str; 3]> = rows
        .iter()
        .map(|r| [r.check.label(), r.target.as_str(), r.result()])
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut push = |cells: [&str; 3], detail: &str| {
        let mut text = String::new();
        for (cell, width) in cells.iter().zip(widths) {
            let _ = write!(text, "{cell:<width$}  ");
        }
        text.push_str(detail);
        out.push_str(text.trim_end());
        out.push('\n');
    };
    push(header, "detail");
    for (row, cells) in rows.iter().zip(cells) {
        push(cells, row.detail());
    }
    out
}

/// Whether every check finished and none failed: the exit status is 0 exactly then.
#[must_use]
pub fn passed(rows: &[Row]) -> bool {
    rows.iter().all(|r| {
        r.outcome
            .as_ref()
            .is_some_and(|o| o.status != Status::Failed)
    })
}

/// The closing line: how many checks passed, failed and were skipped.
#[must_use]
pub fn verdict(rows: &[Row]) -> String {
    let count = |status| {
        rows.iter()
            .filter(|r| r.outcome.as_ref().is_some_and(|o| o.status == status))
            .count()
    };
    let (ok, failed, skipped) = (
        count(Status::Ok),
        count(Status::Failed),
        count(Status::Skipped),
    );
    if failed == 0 {
        format!("doctor: every check passed ({ok} ok, {skipped} skipped)")
    } else {
        format!(
            "doctor: {failed} of {} checks FAILED ({ok} ok, {skipped} skipped)",
            rows.len()
        )
    }
}

/// The live display on a terminal: every check on its own line, redrawn in place with ANSI
/// cursor movement as results arrive, then erased so that the final table takes its place.
#[derive(Debug, Default)]
pub struct Live {
    drawn: usize,
}

impl Live {
    /// The bytes that draw `rows` over the previous drawing (or below the cursor the first
    /// time): the cursor moves up to the first line drawn, and each line is cleared before
    /// it is written.
    pub fn draw(&mut self, rows: &[Row]) -> String {
        let mut out = self.home();
        for row in rows {
            out.push_str("\x1b[2K");
            out.push_str(&fit(&line(row), LIVE_WIDTH));
            out.push('\n');
        }
        self.drawn = rows.len();
        out
    }

    /// The bytes that erase the drawing and leave the cursor where it began.
    pub fn clear(&mut self) -> String {
        let mut out = self.home();
        if self.drawn > 0 {
            out.push_str("\x1b[J");
        }
        self.drawn = 0;
        out
    }

    fn home(&self) -> String {
        if self.drawn == 0 {
            String::new()
        } else {
            format!("\x1b[{}A\r", self.drawn)
        }
    }
}

/// `text` cut to `width` characters, the cut marked with an ellipsis.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Text from a crate or a server made safe to show on one line: redacted, stripped of
/// escape sequences and invisible characters, whitespace collapsed, and redacted once more
/// in case removing an invisible character joined the halves of a credential.
fn clean(text: &str, secrets: &Secrets) -> String {
    let redacted = secrets.redact_text(text);
    let shown = sanitize_display(&redacted);
    let one_line = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    secrets.redact_text(&one_line).into_owned()
}

/// A provider error as a detail: its category and its message, which by the client's
/// contract names no key, header, key-file path or body.
fn provider_error(error: &yetibot_ai_providers::Error, secrets: &Secrets) -> String {
    format!(
        "{}: {}",
        error.category().as_str(),
        clean(&error.user_message(), secrets)
    )
}

/// Runs every check of `rows` that has no outcome yet, all at once, calling `finished` with
/// the row's index as each one ends. The context-window check waits for its provider's
/// listing, which it reads instead of listing a second time.
pub async fn check_all(
    config: &Config,
    client: &Client,
    host: &Host,
    rows: &[Row],
    finished: &dyn Fn(usize, Outcome),
) {
    let secrets = &config.secrets;
    let pending = |check: Check, target: &str| {
        rows.iter()
            .position(|r| r.check == check && r.target == target && r.outcome.is_none())
    };
    let providers = config.providers.providers().iter().map(|provider| {
        let name = provider.name();
        let models = pending(Check::Models, name);
        let context = pending(Check::ContextWindow, name);
        let probe = pending(Check::ToolProbe, name);
        async move {
            let listing = async {
                let listed = match models {
                    Some(index) => {
                        let (outcome, listed) = list_models(client, provider, secrets).await;
                        finished(index, outcome);
                        listed
                    }
                    None => None,
                };
                if let (Some(index), Some(model)) = (context, provider.model()) {
                    let outcome =
                        context_window(client, provider, model, listed.as_ref(), secrets).await;
                    finished(index, outcome);
                }
            };
            let probing = async {
                if let Some(index) = probe {
                    finished(index, tool_probe(client, provider, secrets).await);
                }
            };
            futures_util::future::join(listing, probing).await;
        }
    });
    let servers = config.servers.servers().iter().map(|server| {
        let index = pending(Check::McpTools, server.name());
        async move {
            if let Some(index) = index {
                finished(index, mcp_tools(host, server.name(), secrets).await);
            }
        }
    });
    futures_util::future::join(
        futures_util::future::join_all(providers),
        futures_util::future::join_all(servers),
    )
    .await;
}

/// The models check, and the listing for the context-window check when it succeeded.
async fn list_models(
    client: &Client,
    provider: &Provider,
    secrets: &Secrets,
) -> (Outcome, Option<ModelList>) {
    match tokio::time::timeout(CHECK_TIMEOUT, client.list_models(provider)).await {
        Err(_) => (Outcome::timed_out(), None),
        Ok(Err(error)) => (Outcome::failed(provider_error(&error, secrets)), None),
        Ok(Ok(list)) => {
            let mut detail = format!(
                "{} model{}",
                list.models.len(),
                if list.models.len() == 1 { "" } else { "s" }
            );
            if list.truncated {
                detail.push_str(" (the listing was cut at a bound)");
            }
            if let Some(model) = provider.model() {
                let listed = list.ids().any(|id| id == model);
                let model = clean(model, secrets);
                if listed {
                    let _ = write!(detail, "; the configured model {model} is listed");
                } else if list.truncated {
                    // An incomplete listing cannot show that a model is missing.
                    let _ = write!(detail, "; the configured model {model} is not among them");
                } else {
                    // A complete listing without the configured model: every prompt that
                    // relies on it would fail.
                    let near: Vec<String> =
                        closest(provider.model().unwrap_or_default(), list.ids())
                            .into_iter()
                            .map(|id| clean(id, secrets))
                            .collect();
                    let _ = write!(detail, "; the configured model {model} is not listed");
                    if !near.is_empty() {
                        let _ = write!(detail, " (closest: {})", near.join(", "));
                    }
                    return (Outcome::failed(detail), Some(list));
                }
            }
            (Outcome::ok(detail), Some(list))
        }
    }
}

/// How many characters of a model ID are compared when looking for the closest ones: enough
/// to tell model names apart, and a bound that keeps the search linear in the listing.
const COMPARED_ID_CHARS: usize = 64;

/// The listed IDs closest to `model` by edit distance over their first
/// [`COMPARED_ID_CHARS`] characters, at most three, nearest first (ties in listing order).
fn closest<'l>(model: &str, ids: impl Iterator<Item = &'l str>) -> Vec<&'l str> {
    let wanted: Vec<char> = model.chars().take(COMPARED_ID_CHARS).collect();
    let mut ranked: Vec<(usize, usize, &str)> = ids
        .enumerate()
        .map(|(order, id)| {
            let id_chars: Vec<char> = id.chars().take(COMPARED_ID_CHARS).collect();
            (
                yetibot_conversation::edit_distance(&wanted, &id_chars),
                order,
                id,
            )
        })
        .collect();
    ranked.sort_unstable();
    ranked.into_iter().take(3).map(|(_, _, id)| id).collect()
}

/// The context-window check: the listing's figure, else Ollama's API for a provider on
/// Ollama's port, else "not reported", which is a result and not a failure.
async fn context_window(
    client: &Client,
    provider: &Provider,
    model: &str,
    listed: Option<&ModelList>,
    secrets: &Secrets,
) -> Outcome {
    if let Some(window) = listed.and_then(|list| list.context_window(model)) {
        return Outcome::ok(format!("{window} tokens, from the model listing"));
    }
    if provider.capabilities().context_window == ContextWindowSource::OllamaApi {
        let asked = client.ollama_context_window(provider, model);
        return match tokio::time::timeout(CHECK_TIMEOUT, asked).await {
            Err(_) => Outcome::timed_out(),
            Ok(Err(error)) => Outcome::failed(provider_error(&error, secrets)),
            Ok(Ok(Some(window))) => Outcome::ok(format!("{window} tokens, from Ollama's API")),
            Ok(Ok(None)) => not_reported(provider),
        };
    }
    if listed.is_none() {
        return Outcome::skipped("needs the model listing, which failed");
    }
    not_reported(provider)
}

fn not_reported(provider: &Provider) -> Outcome {
    Outcome::ok(match provider.context_length() {
        Some(configured) => {
            format!("not reported; the configured :context-length {configured} applies")
        }
        None => "not reported".to_owned(),
    })
}

/// The tool probe: passes only when the model answered with a real call of the probe tool.
async fn tool_probe(client: &Client, provider: &Provider, secrets: &Secrets) -> Outcome {
    match tokio::time::timeout(CHECK_TIMEOUT, client.probe(provider, None)).await {
        Err(_) => Outcome::timed_out(),
        Ok(Err(error)) => Outcome::failed(provider_error(&error, secrets)),
        Ok(Ok(report)) if report.tool_call => Outcome::ok(format!("the model called {PROBE_TOOL}")),
        Ok(Ok(_)) => Outcome::failed(format!(
            "the model answered without calling {PROBE_TOOL}: tool calling is not confirmed"
        )),
    }
}

/// The MCP check: one session to the server alone (so one server's failure hides no
/// other's), its catalog counted, and the session closed before the result is reported.
async fn mcp_tools(host: &Host, server: &str, secrets: &Secrets) -> Outcome {
    let names = [server];
    let opened = host.scoped(&names, async |session| {
        let catalog = session.catalog();
        (catalog.tools().len(), catalog.dropped().to_vec())
    });
    match tokio::time::timeout(CHECK_TIMEOUT, opened).await {
        Err(_) => Outcome::timed_out(),
        Ok(Err(error)) => Outcome::failed(clean(&error.to_string(), secrets)),
        Ok(Ok((tools, dropped))) => Outcome::ok(tools_detail(tools, &dropped, secrets)),
    }
}

/// `3 tools`, and for a catalog that dropped tools, how many and why, with the first few
/// names of each reason: `2 tools; 3 dropped (listed more than once: `twice`, `twice`;
/// function name collides: `wire.name`)`.
fn tools_detail(tools: usize, dropped: &[DroppedTool], secrets: &Secrets) -> String {
    let mut detail = format!("{tools} tool{}", if tools == 1 { "" } else { "s" });
    if dropped.is_empty() {
        return detail;
    }
    // Reasons in the order they first occur, each with its tools' names.
    let mut reasons: Vec<(DropReason, Vec<&str>)> = Vec::new();
    for tool in dropped {
        match reasons
            .iter_mut()
            .find(|(reason, _)| *reason == tool.reason())
        {
            Some((_, names)) => names.push(tool.name()),
            None => reasons.push((tool.reason(), vec![tool.name()])),
        }
    }
    let groups: Vec<String> = reasons
        .iter()
        .map(|(reason, names)| {
            let shown: Vec<String> = names
                .iter()
                .take(DROPPED_SHOWN)
                .map(|name| format!("`{}`", clean(name, secrets)))
                .collect();
            let mut group = format!("{}: {}", drop_reason(*reason), shown.join(", "));
            if names.len() > DROPPED_SHOWN {
                let _ = write!(group, " and {} more", names.len() - DROPPED_SHOWN);
            }
            group
        })
        .collect();
    let _ = write!(
        detail,
        "; {} dropped ({})",
        dropped.len(),
        groups.join("; ")
    );
    detail
}

/// A drop reason in a few words, for a report that may list several.
fn drop_reason(reason: DropReason) -> &'static str {
    match reason {
        DropReason::InvalidName => "name breaks the MCP naming rule",
        DropReason::RepeatedName => "listed more than once",
        DropReason::FunctionNameCollision => "function name collides",
        DropReason::OverLimit => "past the tool limit",
        other => other.as_str(),
    }
}

/// Where the report goes and how: redrawn in place on a terminal, else one line per check.
struct Screen<W: Write> {
    out: W,
    rows: Vec<Row>,
    live: Option<Live>,
}

impl<W: Write> Screen<W> {
    fn start(&mut self) {
        match &mut self.live {
            Some(live) => {
                let drawing = live.draw(&self.rows);
                let _ = write!(self.out, "{drawing}");
            }
            None => {
                for row in self.rows.iter().filter(|r| r.outcome.is_some()) {
                    let _ = writeln!(self.out, "{}", line(row));
                }
            }
        }
        let _ = self.out.flush();
    }

    fn finished(&mut self, index: usize, outcome: Outcome) {
        let Some(row) = self.rows.get_mut(index) else {
            return;
        };
        row.outcome = Some(outcome);
        match &mut self.live {
            Some(live) => {
                let drawing = live.draw(&self.rows);
                let _ = write!(self.out, "{drawing}");
            }
            None => {
                let _ = writeln!(self.out, "{}", line(row));
            }
        }
        let _ = self.out.flush();
    }

    fn finish(&mut self) -> bool {
        if let Some(live) = &mut self.live {
            let erased = live.clear();
            let _ = write!(self.out, "{erased}");
        } else {
            let _ = writeln!(self.out);
        }
        let _ = write!(self.out, "{}", table(&self.rows));
        let _ = writeln!(self.out, "{}", verdict(&self.rows));
        let _ = self.out.flush();
        passed(&self.rows)
    }
}

/// `yetibot doctor` after the configuration has loaded: runs every check, prints the
/// report on standard output and returns the exit status (0 when every check passed or was
/// skipped, 1 otherwise).
#[must_use]
pub fn run(config: &Config, options: Options) -> ExitCode {
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = stdout.lock();
    let rows = plan(config, options);
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "nothing to check: no AI providers or MCP servers are configured"
        );
        return ExitCode::SUCCESS;
    }
    let failure = |message: &str| {
        let _ = writeln!(std::io::stderr(), "{}", config.secrets.redact_text(message));
        ExitCode::FAILURE
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return failure(&format!("cannot start the async runtime: {error}")),
    };
    let options_for_client = ClientOptions {
        total_timeout: CHECK_TIMEOUT,
        ..ClientOptions::default()
    };
    let client = match crate::commands::provider_client(config, options_for_client) {
        Ok(client) => client,
        Err(error) => return failure(&error.to_string()),
    };
    let host = match crate::commands::mcp_host(config) {
        Ok(host) => host,
        Err(error) => return failure(&error.to_string()),
    };
    if let Some(notice) = probe_notice(config, options) {
        let _ = writeln!(out, "{notice}");
    }
    let screen = RefCell::new(Screen {
        out,
        rows: rows.clone(),
        live: terminal.then(Live::default),
    });
    screen.borrow_mut().start();
    runtime.block_on(check_all(
        config,
        &client,
        &host,
        &rows,
        &|index, outcome| {
            screen.borrow_mut().finished(index, outcome);
        },
    ));
    if screen.borrow_mut().finish() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_closest_listed_ids_come_first_and_are_at_most_three() {
        let ids = [
            "llama3.2",
            "gemma-3-270m",
            "gemma-3-1b",
            "qwen3",
            "gemma3-270m-it",
        ];
        assert_eq!(
            closest("gemma-3-270m-it", ids.iter().copied()),
            ["gemma3-270m-it", "gemma-3-270m", "gemma-3-1b"]
        );
        assert!(closest("x", std::iter::empty()).is_empty());
        // Only the first 64 characters count, so a huge ID costs no more than a short one.
        let long = "a".repeat(100_000);
        assert_eq!(closest(&long, [long.as_str()].into_iter()), [long.as_str()]);
    }

    fn config(edn: &str) -> Config {
        crate::config::load(Some((Path::new("doctor.edn"), edn)), &[]).expect("valid")
    }

    fn providers() -> Config {
        config(
            r#"{:yetibot {:ai {:providers [{:name "local" :url "http://127.0.0.1:9/v1" :model "m1"}
                                          {:name "bare" :url "http://127.0.0.1:9/v1"}
                                          {:name "notools" :url "http://127.0.0.1:9/v1" :model "m2" :tool-calling false}]
                               :mcp {:servers [{:name "fx" :command "/bin/true"}]}}}}"#,
        )
    }

    fn row(check: Check, target: &str, status: Status, detail: &str) -> Row {
        Row::new(
            check,
            target,
            Some(Outcome {
                status,
                detail: detail.to_owned(),
            }),
        )
    }

    #[test]
    fn the_plan_skips_what_cannot_or_must_not_run() {
        let rows = plan(&providers(), Options { probe: true });
        let summary: Vec<(Check, &str, Option<&str>)> = rows
            .iter()
            .map(|r| {
                (
                    r.check,
                    r.target.as_str(),
                    r.outcome.as_ref().map(|o| o.detail.as_str()),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (Check::Models, "local", None),
                (Check::ContextWindow, "local", None),
                (Check::ToolProbe, "local", None),
                (Check::Models, "bare", None),
                (Check::ContextWindow, "bare", Some("no model configured")),
                (Check::ToolProbe, "bare", Some("no model configured")),
                (Check::Models, "notools", None),
                (Check::ContextWindow, "notools", None),
                (
                    Check::ToolProbe,
                    "notools",
                    Some("tool calling is off (:tool-calling false)")
                ),
                (Check::McpTools, "fx", None),
            ]
        );
        assert!(
            rows.iter()
                .filter_map(|r| r.outcome.as_ref())
                .all(|o| o.status == Status::Skipped)
        );
        let no_probe = plan(&providers(), Options { probe: false });
        assert!(
            no_probe
                .iter()
                .filter(|r| r.check == Check::ToolProbe)
                .all(|r| r
                    .outcome
                    .as_ref()
                    .is_some_and(|o| o.status == Status::Skipped))
        );
    }

    #[test]
    fn the_probe_is_announced_with_its_bound_and_every_provider_it_reaches() {
        assert_eq!(
            probe_notice(&providers(), Options { probe: true }).as_deref(),
            Some(
                "doctor sends one small tool-probe request (at most 256 output tokens) to each provider with a model: local"
            )
        );
        assert_eq!(probe_notice(&providers(), Options { probe: false }), None);
        assert!(plan(&config("{}"), Options { probe: true }).is_empty());
    }

    #[test]
    fn the_table_aligns_every_column_and_reports_the_verdict() {
        let rows = vec![
            row(Check::Models, "local", Status::Ok, "2 models"),
            row(Check::ToolProbe, "zen", Status::Failed, "http-status: boom"),
            row(Check::McpTools, "fx-long-name", Status::Skipped, ""),
        ];
        assert_eq!(
            table(&rows),
            "check       target        result   detail\n\
             models      local         ok       2 models\n\
             tool probe  zen           FAILED   http-status: boom\n\
             mcp tools   fx-long-name  skipped\n"
        );
        assert!(!passed(&rows));
        assert_eq!(
            verdict(&rows),
            "doctor: 1 of 3 checks FAILED (1 ok, 1 skipped)"
        );
        let fine = vec![
            row(Check::Models, "local", Status::Ok, "2 models"),
            row(Check::ToolProbe, "local", Status::Skipped, "--no-probe"),
        ];
        assert!(passed(&fine));
        assert_eq!(
            verdict(&fine),
            "doctor: every check passed (1 ok, 1 skipped)"
        );
        // A check still running is not a pass.
        assert!(!passed(&[Row::new(Check::Models, "local", None)]));
    }

    #[test]
    fn plain_lines_name_the_result_check_and_target() {
        assert_eq!(
            line(&row(Check::Models, "local", Status::Ok, "2 models")),
            "ok      models local: 2 models"
        );
        assert_eq!(
            line(&Row::new(Check::McpTools, "fx", None)),
            "running mcp tools fx"
        );
    }

    #[test]
    fn the_live_display_redraws_in_place_and_erases_itself() {
        let mut live = Live::default();
        let mut rows = vec![
            Row::new(Check::Models, "local", None),
            Row::new(Check::McpTools, "fx", None),
        ];
        assert_eq!(
            live.draw(&rows),
            "\x1b[2Krunning models local\n\x1b[2Krunning mcp tools fx\n"
        );
        rows[1].outcome = Some(Outcome::ok("3 tools"));
        assert_eq!(
            live.draw(&rows),
            "\x1b[2A\r\x1b[2Krunning models local\n\x1b[2Kok      mcp tools fx: 3 tools\n"
        );
        assert_eq!(live.clear(), "\x1b[2A\r\x1b[J");
        assert_eq!(live.clear(), "");
        // A line that would wrap is cut, so each check keeps exactly one screen row.
        rows[0].outcome = Some(Outcome::ok("x".repeat(200)));
        let drawn = live.draw(&rows);
        let first = drawn.lines().next().unwrap_or_default();
        assert_eq!(
            first.trim_start_matches("\x1b[2K").chars().count(),
            LIVE_WIDTH
        );
        assert!(first.ends_with('…'));
    }

    #[test]
    fn shown_text_is_redacted_one_line_and_free_of_escapes() {
        let secrets = Secrets::new(["sk-canary-0123456789"]).expect("secrets");
        let shown = clean(
            "bad \x1b[31mred\x1b[0m\nline sk-canary-\u{200b}0123456789 end",
            &secrets,
        );
        assert_eq!(shown, "bad red line [redacted] end");
    }

    #[test]
    fn tool_counts_read_as_words() {
        assert_eq!(tools_detail(3, &[], &Secrets::empty()), "3 tools");
        assert_eq!(tools_detail(1, &[], &Secrets::empty()), "1 tool");
    }
}
