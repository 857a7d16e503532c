//! Loads the configuration: the EDN file, overlaid with `YETIBOT_*` variables, checked against
//! the schema, then validated by the crates that own each section.
//!
//! Loading is a pure function of the file's text and the variables, so tests control both;
//! only [`environment::from_process`] and [`read_file`] touch the process.

pub mod environment;

mod model;
mod schema;
mod summary;

use std::fmt;
use std::path::{Path, PathBuf};

use yetibot_ai_commands::IntentRouter;
use yetibot_ai_providers::ProviderSet;
use yetibot_mcp_host::ServerSet;
use yetibot_redaction::Secrets;
use yetibot_tool_policy::ToolPolicy;

pub use summary::summary;

/// The file read when `CONFIG_PATH` is not set.
pub const DEFAULT_PATH: &str = "config/config.edn";
/// Configuration files larger than this are refused (a configuration is a few KiB).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// One problem with the configuration: where it is and what is wrong. Neither part ever
/// contains a configured value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A dotted path such as `yetibot.ai.providers[1].url`, `environment NAME` or `(file)`.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl Problem {
    pub(crate) fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// A problem of the file's EDN: a syntax error located in the file, or a form that is not
/// plain data at its path.
pub(crate) fn edn_problem(error: &yetibot_json_util::edn::EdnError) -> Problem {
    use yetibot_json_util::edn::Location;
    let at = match &error.location {
        Location::Text {
            line: Some(line),
            column: Some(column),
        } => format!("(file, line {line}, column {column})"),
        Location::Text { .. } => "(file)".to_owned(),
        Location::Path(_) => error.at(),
    };
    Problem::new(at, error.reason)
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

/// Why the configuration could not be loaded: every problem found, in a stable order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Invalid {
    /// The problems.
    pub problems: Vec<Problem>,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        writeln!(
            f,
            "the configuration has {n} problem{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for problem in &self.problems {
            writeln!(f, "  - {problem}")?;
        }
        Ok(())
    }
}

/// Where the configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// This file.
    File(PathBuf),
    /// The default file does not exist: defaults plus the environment only.
    Defaults,
}

/// The validated configuration of every crate.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it came from.
    pub source: Source,
    /// AI providers and the default one.
    pub providers: ProviderSet,
    /// MCP servers and the per-operation timeout.
    pub servers: ServerSet,
    /// Toolsets and the call budget ceiling.
    pub policy: ToolPolicy,
    /// The Cloudflare intent router, when configured.
    pub intent_router: Option<IntentRouter>,
    /// GitHub's REST API base for the pull-request workflow's ancestry reads.
    pub github_api_url: String,
    /// Admin user IDs.
    pub admin_users: Vec<String>,
    /// The xAI account (key and API base) for `gi` images and the fallback Grok provider.
    pub xai: Option<yetibot_ai_commands::XaiAccount>,
    /// Imgflip user name and password.
    pub imgflip: Option<yetibot_ai_commands::ImgflipAccount>,
    /// The read-only Wise account with its balance and chat allowlists.
    pub wise: Option<yetibot_ai_commands::WiseAccount>,
    /// The command language's settings: prefix, embedded commands, admins.
    pub settings: yetibot_command::Settings,
    /// The local operator (`:yetibot :local`), as the caller of `yetibot run`.
    pub local: yetibot_command::Caller,
    /// Where history and aliases live (`:yetibot :db`): PostgreSQL when a URL is given,
    /// else the SQLite file.
    pub store: yetibot_history_store::Backend,
    /// Whether chat history is recorded and read (`:yetibot :history :disabled` is not
    /// `true`).
    pub history_enabled: bool,
    /// The published release notes `release_info`'s `latest` view reads
    /// (`:yetibot :release-info :feed-url`).
    pub release_feed: Option<yetibot_ai_commands::ReleaseFeed>,
    /// Where the local web console listens (`:yetibot :web`), `None` when it is off.
    pub web: Option<std::net::SocketAddr>,
    /// Where generated images are published (`:yetibot :images`), `None` without a
    /// public URL.
    pub images: Option<yetibot_chat_adapters::web::published::PublishOptions>,
    /// The file that keeps the console's access token across restarts
    /// (`:yetibot :web :token-file`, default `data/console-token`).
    pub web_token_file: PathBuf,
    /// The chat platform connections (`:yetibot :adapters`), by name.
    pub adapters: yetibot_chat_adapters::config::Adapters,
    /// How much the bot logs when `RUST_LOG` is not set (`:yetibot :log :level`, default
    /// `info`).
    pub log_level: crate::logging::Level,
    /// How many requests run and wait at once, and the fairness limits
    /// (`:yetibot :concurrency`).
    pub admission: yetibot_conductor::AdmissionLimits,
    /// Every inline credential, for redaction. Key files are not read here: their tokens join
    /// a request's own set when that request resolves them.
    pub secrets: Secrets,
    /// Settings that were accepted but ignored, and other notes for the operator.
    pub notes: Vec<String>,
}

/// The file to read: `CONFIG_PATH` if set, else [`DEFAULT_PATH`], which may be absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChoice {
    /// The path.
    pub path: PathBuf,
    /// Whether the operator named it (then it must exist).
    pub explicit: bool,
}

impl FileChoice {
    /// Chooses from the value of `CONFIG_PATH`.
    #[must_use]
    pub fn from_config_path(config_path: Option<&str>) -> Self {
        match config_path.filter(|p| !p.is_empty()) {
            Some(path) => Self {
                path: PathBuf::from(path),
                explicit: true,
            },
            None => Self {
                path: PathBuf::from(DEFAULT_PATH),
                explicit: false,
            },
        }
    }
}

/// Reads the chosen file: `Ok(None)` when the default file is simply absent.
///
/// # Errors
///
/// A problem when a named file is missing, unreadable, too large or not UTF-8.
pub fn read_file(choice: &FileChoice) -> Result<Option<String>, Invalid> {
    let fail = |reason: &str| Invalid {
        problems: vec![Problem::new(display_path(&choice.path), reason)],
    };
    let metadata = match std::fs::metadata(&choice.path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !choice.explicit => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(fail("does not exist (named by CONFIG_PATH)"));
        }
        Err(_) => return Err(fail("cannot be read")),
    };
    if !metadata.is_file() {
        return Err(fail("is not a regular file"));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(fail("is larger than 1 MiB"));
    }
    let bytes = std::fs::read(&choice.path).map_err(|_| fail("cannot be read"))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| fail("is not valid UTF-8"))
}

/// Loads the configuration from the file's text (if any) and the environment variables.
///
/// Every problem is found in one pass: the file's syntax, then the variables, then the types
/// and keys of the merged tree, then the meaning of what is left. A value of the wrong type
/// or an unknown key is taken out before the semantic checks, whose problems at or under a
/// place already reported are left out (they would only repeat it).
///
/// # Errors
///
/// [`Invalid`] with every problem found.
pub fn load(file: Option<(&Path, &str)>, vars: &[(String, String)]) -> Result<Config, Invalid> {
    let mut problems = Vec::new();
    let parsed = match file {
        Some((path, text)) => {
            yetibot_json_util::edn::parse(text).map_err(|error| in_file(edn_problem(&error), path))
        }
        None => Ok(serde_json::Value::Object(serde_json::Map::new())),
    };
    let (overlay, from_environment) = environment::overlay(vars);
    let tree = match parsed {
        Ok(tree) if tree.is_object() => Some(tree),
        Ok(_) => {
            problems.push(Problem::new("(root)", "the configuration must be a map"));
            None
        }
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    problems.extend(from_environment);
    // Without a tree there is nothing more to check.
    let Some(mut tree) = tree else {
        return Err(Invalid { problems });
    };
    environment::merge(&mut tree, overlay, Some(&schema::ROOT));

    let mut report = schema::Report::default();
    schema::check(&mut tree, &schema::ROOT, "", &mut report);
    let reported: Vec<String> = report.problems.iter().map(|p| p.path.clone()).collect();
    problems.append(&mut report.problems);
    let source = match file {
        Some((path, _)) => Source::File(path.to_owned()),
        None => Source::Defaults,
    };
    match model::validate(tree, source, report.notes) {
        Ok(config) if problems.is_empty() => Ok(config),
        Ok(_) => Err(Invalid { problems }),
        Err(semantic) => {
            problems.extend(
                semantic
                    .into_iter()
                    .filter(|p| !reported.iter().any(|at| covers(at, &p.path))),
            );
            Err(Invalid { problems })
        }
    }
}

/// Whether a problem at `path` is at or under `at` (or is the whole-tree `(root)` problem,
/// which a tree with its wrong parts taken out can only repeat).
fn covers(at: &str, path: &str) -> bool {
    path == "(root)"
        || path
            .strip_prefix(at)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// A syntax problem located in the file by its path rather than as `(file)`.
fn in_file(problem: Problem, path: &Path) -> Problem {
    let file = display_path(path);
    let at = match problem.path.strip_prefix("(file") {
        Some(")") => file,
        Some(rest) => match rest.strip_prefix(", ").and_then(|r| r.strip_suffix(')')) {
            Some(location) => format!("{file}, {location}"),
            None => file,
        },
        None => format!("{file}: {}", problem.path),
    };
    Problem::new(at, problem.reason)
}

fn display_path(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests;
