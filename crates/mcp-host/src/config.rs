//! MCP server configuration as operators write it, and its validation into [`ServerSet`].

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde::Deserialize;
use yetibot_conversation::NATIVE_SOURCE;
use yetibot_redaction::Secret;

use crate::error::Error;
use crate::names::{is_valid_tool_name, shown_name};
use crate::sanitize::sanitize_display;

/// Per-operation timeout used when `:timeout-ms` is omitted.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);
/// Accepted range of `:timeout-ms`, in milliseconds.
pub const TIMEOUT_MS_RANGE: std::ops::RangeInclusive<i64> = 100..=120_000;
/// Variables a local server's `:env` may not set, compared ignoring ASCII case: they make the
/// dynamic loader or an interpreter load code the operator did not name in `:command`, or
/// they replace `PATH`, which the host chooses (see [`HostOptions`]).
///
/// [`HostOptions`]: crate::HostOptions
pub const DENIED_ENV_NAMES: &[&str] = &[
    "PATH",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "PYTHONUSERBASE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "LOCPATH",
];
/// Prefixes of variables a local server's `:env` may not set, compared ignoring ASCII case:
/// every `LD_*` (the GNU and BSD dynamic loaders) and `DYLD_*` (macOS) variable.
pub const DENIED_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_"];

/// One entry of `:yetibot :ai :mcp :servers`, exactly as configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ServerConfig {
    /// Unique server name (`:name`); tools are identified as `name/tool`.
    pub name: Option<String>,
    /// Streamable HTTP endpoint of a remote server (`:url`).
    pub url: Option<String>,
    /// Extra request headers of a remote server, often credentials (`:headers`).
    pub headers: Option<BTreeMap<String, Secret>>,
    /// Executable of a local stdio server (`:command`).
    pub command: Option<String>,
    /// Arguments of a local server (`:args`).
    pub args: Option<Vec<String>>,
    /// Environment of a local server, on top of a small standard one (`:env`).
    pub env: Option<BTreeMap<String, Secret>>,
    /// Allowlist of tool names (`:tools`); omitted means the server's current catalog.
    pub tools: Option<Vec<String>>,
    /// Token for the host's own GitHub REST reads (`:github-api-token`).
    pub github_api_token: Option<Secret>,
}

/// How to reach a server.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A remote server over Streamable HTTP.
    Http {
        /// The exact endpoint, kept as written (a trailing slash can matter).
        url: String,
        /// Header names and values; values are credentials.
        headers: Vec<(String, Secret)>,
    },
    /// A local child process over stdio.
    Stdio {
        /// The executable.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the child's small standard environment.
        env: Vec<(String, Secret)>,
    },
}

/// A validated server.
#[derive(Debug, Clone)]
pub struct Server {
    name: String,
    transport: Transport,
    tools: Option<Vec<String>>,
    github_api_token: Option<Secret>,
}

impl Server {
    /// The server's unique name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How to reach it.
    #[must_use]
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The explicit tool allowlist, or `None` to use the server's catalog.
    #[must_use]
    pub fn tools(&self) -> Option<&[String]> {
        self.tools.as_deref()
    }

    /// The token for host-side GitHub REST reads, if configured.
    #[must_use]
    pub fn github_api_token(&self) -> Option<&Secret> {
        self.github_api_token.as_ref()
    }

    /// Every credential this server carries (header values, env values, the GitHub token),
    /// for building a redaction set.
    pub fn credentials(&self) -> impl Iterator<Item = &Secret> {
        let transport: Box<dyn Iterator<Item = &Secret>> = match &self.transport {
            Transport::Http { headers, .. } => Box::new(headers.iter().map(|(_, v)| v)),
            Transport::Stdio { env, .. } => Box::new(env.iter().map(|(_, v)| v)),
        };
        transport.chain(self.github_api_token.iter())
    }
}

/// All configured servers and the per-operation timeout.
#[derive(Debug, Clone)]
pub struct ServerSet {
    servers: Vec<Server>,
    timeout: Duration,
}

impl Default for ServerSet {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl ServerSet {
    /// Validates `:servers` and `:timeout-ms` of the `:mcp` map.
    ///
    /// # Errors
    ///
    /// Every problem found, each an [`Error::InvalidConfig`] whose path is relative to the
    /// `:mcp` map (`servers[0].url`). No message contains a header, env value or URL.
    pub fn from_config(
        configs: &[ServerConfig],
        timeout_ms: Option<i64>,
    ) -> Result<Self, Vec<Error>> {
        let mut problems = Vec::new();
        let timeout = match timeout_ms {
            None => DEFAULT_TIMEOUT,
            Some(ms) if TIMEOUT_MS_RANGE.contains(&ms) => Duration::from_millis(ms.unsigned_abs()),
            Some(_) => {
                problems.push(Error::config(
                    "timeout-ms",
                    "must be an integer from 100 to 120000",
                ));
                DEFAULT_TIMEOUT
            }
        };
        let mut servers = Vec::with_capacity(configs.len());
        let mut seen = HashSet::new();
        for (index, config) in configs.iter().enumerate() {
            let before = problems.len();
            let server = validate_server(config, &mut |field, reason| {
                problems.push(Error::config(format!("servers[{index}].{field}"), reason));
            });
            if let Some(server) = server.filter(|_| problems.len() == before) {
                if seen.insert(server.name.clone()) {
                    servers.push(server);
                } else {
                    problems.push(Error::config(
                        format!("servers[{index}].name"),
                        "duplicates an earlier server's name",
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(Self { servers, timeout })
        } else {
            Err(problems)
        }
    }

    /// The servers in configuration order.
    #[must_use]
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// The server with this exact name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Server> {
        self.servers.iter().find(|s| s.name == name)
    }

    /// The bound on every MCP operation.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Validates a remote MCP endpoint: absolute `http(s)` with a host and no credentials, query
/// or fragment. The URL is kept exactly as written.
///
/// # Errors
///
/// A static reason that never contains the URL.
pub fn check_server_url(raw: &str) -> Result<(), &'static str> {
    yetibot_conversation::check_endpoint(raw)
        .map_err(|problem| problem.reason("must not contain credentials (put them in :headers)"))
}

fn validate_server(config: &ServerConfig, fail: &mut dyn FnMut(&str, &str)) -> Option<Server> {
    let name = match config.name.as_deref() {
        None => {
            fail("name", "is required");
            None
        }
        Some("") => {
            fail("name", "must not be blank");
            None
        }
        Some(n) if n.chars().any(|c| c.is_whitespace() || c == '/') => {
            fail("name", "must not contain whitespace or '/'");
            None
        }
        Some(n) if !printable(n) => {
            fail(
                "name",
                "must not contain control, zero-width or bidirectional characters",
            );
            None
        }
        // The source of the bot's own tools: a server of that name would share their IDs.
        Some(NATIVE_SOURCE) => {
            fail("name", "\"yetibot\" is reserved for the bot's own tools");
            None
        }
        Some(n) => Some(n.to_owned()),
    };
    let transport = match (&config.url, &config.command) {
        (Some(_), Some(_)) => {
            fail(
                "url",
                "and :command are mutually exclusive: a server is remote or local",
            );
            None
        }
        (None, None) => {
            fail("url", "or :command is required");
            None
        }
        (Some(url), None) => {
            if config.args.is_some() {
                fail("args", "is only allowed with :command");
            }
            if config.env.is_some() {
                fail(
                    "env",
                    "is only allowed with :command (use :headers for a remote server)",
                );
            }
            let url_ok = check_server_url(url)
                .map_err(|reason| fail("url", reason))
                .is_ok();
            let headers = check_headers(config.headers.as_ref(), fail);
            url_ok.then_some(Transport::Http {
                url: url.clone(),
                headers: headers?,
            })
        }
        (None, Some(command)) => {
            if config.headers.is_some() {
                fail(
                    "headers",
                    "is only allowed with :url (use :env for a local server)",
                );
            }
            let command_ok = !command.trim().is_empty();
            if !command_ok {
                fail("command", "must not be blank");
            }
            let args = config.args.clone().unwrap_or_default();
            let mut args_ok = true;
            for (i, arg) in args.iter().enumerate() {
                if arg.contains('\0') {
                    fail(&format!("args[{i}]"), "must not contain NUL");
                    args_ok = false;
                }
            }
            let env = check_env(config.env.as_ref(), fail);
            (command_ok && args_ok).then_some(Transport::Stdio {
                command: command.clone(),
                args,
                env: env?,
            })
        }
    };
    let tools = match &config.tools {
        None => Some(None),
        Some(tools) if tools.is_empty() => {
            fail(
                "tools",
                "must list at least one tool (omit it to use the server's whole catalog)",
            );
            None
        }
        Some(tools) => check_tool_names(tools, fail).then(|| Some(tools.clone())),
    };
    let github_api_token = match &config.github_api_token {
        Some(token)
            if !token.expose().bytes().all(|b| b.is_ascii_graphic())
                || token.expose().is_empty() =>
        {
            fail(
                "github-api-token",
                "must be printable ASCII without whitespace",
            );
            None
        }
        other => Some(other.clone()),
    };
    Some(Server {
        name: name?,
        transport: transport?,
        tools: tools?,
        github_api_token: github_api_token?,
    })
}

fn check_tool_names(tools: &[String], fail: &mut dyn FnMut(&str, &str)) -> bool {
    let mut ok = true;
    let mut seen = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        if tool.trim().is_empty() {
            fail(&format!("tools[{i}]"), "must not be blank");
            ok = false;
        } else if !is_valid_tool_name(tool) {
            fail(
                &format!("tools[{i}]"),
                "must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '.' and '-' (the MCP tool naming rule)",
            );
            ok = false;
        } else if !seen.insert(tool) {
            fail(&format!("tools[{i}]"), "is listed twice");
            ok = false;
        }
    }
    ok
}

fn check_headers(
    headers: Option<&BTreeMap<String, Secret>>,
    fail: &mut dyn FnMut(&str, &str),
) -> Option<Vec<(String, Secret)>> {
    let Some(headers) = headers else {
        return Some(Vec::new());
    };
    let mut ok = true;
    let mut seen = HashSet::new();
    for (name, value) in headers {
        // The header name is configuration, not a credential, so it may appear in the path;
        // an invalid one is shown escaped, so it cannot alter a log line.
        let path = format!("headers.{}", shown_key(name));
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            fail(&path, "is not a valid HTTP header name");
            ok = false;
        } else if !seen.insert(name.to_ascii_lowercase()) {
            fail(&path, "is set twice (header names ignore case)");
            ok = false;
        }
        let v = value.expose();
        if v.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            fail(&path, "value must not contain control characters");
            ok = false;
        }
    }
    ok.then(|| {
        headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
}

fn check_env(
    env: Option<&BTreeMap<String, Secret>>,
    fail: &mut dyn FnMut(&str, &str),
) -> Option<Vec<(String, Secret)>> {
    let Some(env) = env else {
        return Some(Vec::new());
    };
    let mut ok = true;
    for (name, value) in env {
        // The name is configuration, not a credential, so it may appear in the path.
        let path = format!("env.{}", shown_key(name));
        if name.is_empty() || name.contains(['=', '\0']) || !printable(name) {
            fail(&path, "is not a valid environment variable name");
            ok = false;
        } else if let Some(reason) = denied_env_reason(name) {
            fail(&path, &reason);
            ok = false;
        }
        if value.expose().contains('\0') {
            fail(&path, "value must not contain NUL");
            ok = false;
        }
    }
    ok.then(|| env.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// Whether a configured name has no line break, control, zero-width or bidirectional
/// character, so it can be printed in a problem's path as it is.
fn printable(name: &str) -> bool {
    !name.contains('\n') && sanitize_display(name) == name
}

/// A configured map key for a problem's path: as written when [`printable`], escaped
/// otherwise, so it cannot alter the line it is printed on.
fn shown_key(name: &str) -> String {
    if printable(name) {
        name.to_owned()
    } else {
        shown_name(name)
    }
}

/// Why a local server's `:env` may not set `name`, or `None` if it may. The reason names
/// the variable (configuration, not a credential), never its value.
fn denied_env_reason(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    if upper == "PATH" {
        return Some(
            "must not set PATH: the host chooses a local server's PATH from its standard environment"
                .to_owned(),
        );
    }
    let denied = DENIED_ENV_NAMES.contains(&upper.as_str())
        || DENIED_ENV_PREFIXES.iter().any(|p| upper.starts_with(p));
    denied.then(|| {
        format!(
            "must not set {upper}: it makes the loader or an interpreter run code that :command does not name"
        )
    })
}

/// RFC 9110 `tchar`: the bytes allowed in a header name.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn denied_variables_are_denied_in_any_case(
            index in 0..DENIED_ENV_NAMES.len(),
            flips in proptest::collection::vec(any::<bool>(), 32),
            suffix in "[A-Za-z0-9_]{0,12}",
        ) {
            let recase = |name: &str| -> String {
                name.chars()
                    .zip(flips.iter().cycle())
                    .map(|(c, flip)| if *flip { c.to_ascii_lowercase() } else { c })
                    .collect()
            };
            prop_assert!(denied_env_reason(&recase(DENIED_ENV_NAMES[index])).is_some());
            for prefix in DENIED_ENV_PREFIXES {
                let name = recase(&format!("{prefix}{suffix}"));
                prop_assert!(denied_env_reason(&name).is_some());
            }
        }
    }
}
