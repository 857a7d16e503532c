//! Configuration owned by the AI commands: the Cloudflare intent router used by
//! `clef`/`clairic`, the xAI and Imgflip media credentials, and the published release feed
//! of `release_info`.

use std::path::PathBuf;

use serde::Deserialize;
use yetibot_redaction::Secret;
use yetibot_tool_policy::ToolsetKind;

use yetibot_command::ConfigError as Error;

pub(crate) mod wise;

/// Default for `:min-probability`.
pub const DEFAULT_MIN_PROBABILITY: f64 = 0.95;
/// The lowest accepted `:min-probability`.
pub const MIN_MIN_PROBABILITY: f64 = 0.9;

/// `:yetibot :xai`: the key behind `gi` images and the fallback Grok provider.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct XaiConfig {
    /// The xAI API key.
    pub key: Option<Secret>,
    /// The xAI API base (default `https://api.x.ai/v1`).
    pub api_url: Option<String>,
}

/// The xAI account of `:yetibot :xai`: the key and the API base that `gi` and the fallback
/// Grok provider use.
#[derive(Clone)]
pub struct XaiAccount {
    api_url: String,
    key: Secret,
}

impl std::fmt::Debug for XaiAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XaiAccount")
            .field("api_url", &self.api_url)
            .field("key", &"[redacted]")
            .finish()
    }
}

impl XaiAccount {
    /// The account `key` at the API base `api_url` (a trailing `/` is ignored). The caller
    /// has validated the URL (see [`xai_account`]).
    #[must_use]
    pub fn new(api_url: &str, key: Secret) -> Self {
        Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
            key,
        }
    }

    /// The API base.
    #[must_use]
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The key.
    #[must_use]
    pub fn key(&self) -> &Secret {
        &self.key
    }
}

/// The xAI account, when `:key` is set.
///
/// # Errors
///
/// A blank key, or an unusable `:api-url` (HTTPS, or plain HTTP to a loopback address; no
/// credentials, query or fragment), with paths relative to the `:xai` map and reasons that
/// never quote a value.
pub fn xai_account(config: &XaiConfig) -> Result<Option<XaiAccount>, Vec<Error>> {
    let mut errors = Vec::new();
    let api_url = config
        .api_url
        .as_deref()
        .unwrap_or(crate::pinned::XAI_BASE_URL);
    if let Err(reason) = check_api_url(api_url) {
        errors.push(Error::new("api-url", reason));
    }
    if config
        .key
        .as_ref()
        .is_some_and(|key| key.expose().trim().is_empty())
    {
        errors.push(Error::new("key", "must not be blank"));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(config
        .key
        .as_ref()
        .map(|key| XaiAccount::new(api_url, key.clone())))
}

/// `:yetibot :release-info`: where `release_info`'s `latest` view reads the project's
/// published release notes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ReleaseInfoConfig {
    /// An `http`/`https` URL serving `{"notes": [{"date", "title", "notes"}]}`.
    pub feed_url: Option<String>,
}

/// The published feed `release_info`'s `latest` view reads: an `http` or `https` URL
/// without credentials or fragment, serving the bundled notes' format,
/// `{"notes": [{"date": "YYYY-MM-DD", "title": "...", "notes": ["..."]}]}`.
#[derive(Clone, PartialEq, Eq)]
pub struct ReleaseFeed {
    url: String,
}

impl std::fmt::Debug for ReleaseFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReleaseFeed")
    }
}

impl ReleaseFeed {
    /// The feed at `url`.
    ///
    /// # Errors
    ///
    /// A fixed reason (never quoting the URL) when it is not an absolute `http`/`https`
    /// URL with a host, or carries a user name, password or fragment.
    pub fn new(url: &str) -> Result<Self, &'static str> {
        let parsed = url::Url::parse(url.trim()).map_err(|_| "must be an absolute URL")?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err("must use http or https");
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err("must name a host");
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err("must not contain credentials");
        }
        if parsed.fragment().is_some() {
            return Err("must not contain a fragment");
        }
        Ok(Self {
            url: parsed.to_string(),
        })
    }

    /// The feed's URL.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The published release feed, when one is configured.
///
/// # Errors
///
/// An unusable `:feed-url` (not absolute `http`/`https`, credentials, a fragment), with the
/// path relative to the `:release-info` map and a reason that never quotes the URL.
pub fn release_feed(config: &ReleaseInfoConfig) -> Result<Option<ReleaseFeed>, Vec<Error>> {
    config
        .feed_url
        .as_deref()
        .map(|url| ReleaseFeed::new(url).map_err(|reason| vec![Error::new("feed-url", reason)]))
        .transpose()
}

/// The public Imgflip API, the default of `:imgflip :api-url`.
pub const DEFAULT_IMGFLIP_API_URL: &str = "https://api.imgflip.com";

/// An Imgflip account: the API base, the user name and the password `meme` captions with.
#[derive(Clone)]
pub struct ImgflipAccount {
    api_url: String,
    username: String,
    password: Secret,
}

impl std::fmt::Debug for ImgflipAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImgflipAccount")
            .field("api_url", &self.api_url)
            .field("username", &self.username)
            .field("password", &"[redacted]")
            .finish()
    }
}

impl ImgflipAccount {
    /// The account `username`/`password` at the API base `api_url` (a trailing `/` is
    /// ignored). The caller has validated the URL (see [`imgflip_account`]).
    #[must_use]
    pub fn new(api_url: &str, username: impl Into<String>, password: Secret) -> Self {
        Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
            username: username.into(),
            password,
        }
    }

    /// The API base.
    #[must_use]
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The user name.
    #[must_use]
    pub fn username(&self) -> &str {
        &self.username
    }

    /// The password.
    #[must_use]
    pub fn password(&self) -> &Secret {
        &self.password
    }
}

/// `:yetibot :imgflip`: the account behind `meme`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ImgflipConfig {
    /// Imgflip user name.
    pub username: Option<String>,
    /// Imgflip password.
    pub password: Option<Secret>,
    /// The Imgflip API base (default `https://api.imgflip.com`).
    pub api_url: Option<String>,
}

/// The Imgflip account `meme` uses, when `:username` and `:password` are both set.
///
/// # Errors
///
/// One of the pair without the other, a blank user name or password, or an unusable
/// `:api-url` (HTTPS, or plain HTTP to a loopback address; no credentials, query or
/// fragment), with paths relative to the `:imgflip` map and reasons that never quote a
/// value.
pub fn imgflip_account(config: &ImgflipConfig) -> Result<Option<ImgflipAccount>, Vec<Error>> {
    let mut errors = Vec::new();
    let api_url = config.api_url.as_deref().unwrap_or(DEFAULT_IMGFLIP_API_URL);
    if let Err(reason) = check_api_url(api_url) {
        errors.push(Error::new("api-url", reason));
    }
    let username = config.username.as_deref().map(str::trim);
    let password = config.password.as_ref();
    if username.is_some_and(str::is_empty) {
        errors.push(Error::new("username", "must not be blank"));
    }
    if password.is_some_and(|p| p.expose().trim().is_empty()) {
        errors.push(Error::new("password", "must not be blank"));
    }
    let account = match (username, password) {
        (Some(username), Some(password)) => {
            Some(ImgflipAccount::new(api_url, username, password.clone()))
        }
        (None, None) => None,
        (Some(_), None) => {
            errors.push(Error::new("password", "is required with :username"));
            None
        }
        (None, Some(_)) => {
            errors.push(Error::new("username", "is required with :password"));
            None
        }
    };
    if errors.is_empty() {
        Ok(account)
    } else {
        Err(errors)
    }
}

/// Validates `:yetibot :ai :mcp :github-api-url`, the GitHub REST API base the pull-request
/// workflow reads commit ancestry from, with the read token: GitHub.com's
/// [`DEFAULT_GITHUB_API_URL`](yetibot_pull_requests::DEFAULT_GITHUB_API_URL), or plain HTTP
/// to a loopback address (a local stand-in, such as a test double); no credentials, query or
/// fragment. Only GitHub.com is supported.
///
/// # Errors
///
/// The problem, with the path `github-api-url` and a reason that never quotes the value.
pub fn github_api_url(url: Option<&str>) -> Result<String, Error> {
    let url = url.unwrap_or(yetibot_pull_requests::DEFAULT_GITHUB_API_URL);
    check_api_url(url).map_err(|reason| Error::new("github-api-url", reason))?;
    let url = url.trim_end_matches('/');
    // The read token goes to this host: GitHub.com's API, or a local stand-in.
    let local = url::Url::parse(url).is_ok_and(|parsed| parsed.scheme() == "http");
    if url != yetibot_pull_requests::DEFAULT_GITHUB_API_URL && !local {
        return Err(Error::new(
            "github-api-url",
            "must be https://api.github.com (only GitHub.com is supported), or plain http to a loopback address for a local stand-in",
        ));
    }
    Ok(url.to_owned())
}

/// `:yetibot :ai :intent-router`, exactly as configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IntentRouterConfig {
    /// Whether explicit change requests become automatic draft PRs.
    pub enabled: Option<bool>,
    /// Cloudflare account ID: 32 hexadecimal characters.
    pub account_id: Option<String>,
    /// Absolute path of the Workers AI token file, read per request.
    pub key_file: Option<String>,
    /// Optional AI Gateway ID.
    pub gateway_id: Option<String>,
    /// The Cloudflare API base (default `https://api.cloudflare.com/client/v4`).
    pub api_url: Option<String>,
    /// The `github-pr` toolset whose policy governs automatic PRs.
    pub github_toolset: Option<String>,
    /// Probability both change scores must reach (0.9–1.0, default 0.95).
    pub min_probability: Option<f64>,
}

/// A validated intent-router configuration.
#[derive(Clone, PartialEq)]
pub struct IntentRouter {
    /// Whether automatic draft PRs are on.
    pub enabled: bool,
    /// Cloudflare account ID.
    pub account_id: String,
    /// Token file path (private: never printed).
    pub key_file: PathBuf,
    /// AI Gateway ID.
    pub gateway_id: Option<String>,
    /// The Cloudflare API base the fixed request paths go below: HTTPS, or plain HTTP to a
    /// loopback address only.
    pub api_url: String,
    /// The governing `github-pr` toolset.
    pub github_toolset: Option<String>,
    /// Threshold for both change scores.
    pub min_probability: f64,
}

impl std::fmt::Debug for IntentRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntentRouter")
            .field("enabled", &self.enabled)
            .field("account_id", &"[redacted]")
            .field("key_file", &"[redacted]")
            .field("gateway_id", &self.gateway_id)
            .field("api_url", &self.api_url)
            .field("github_toolset", &self.github_toolset)
            .field("min_probability", &self.min_probability)
            .finish()
    }
}

/// Why an `:api-url` is refused: it must be an absolute URL without credentials, query or
/// fragment, over HTTPS unless its host is a loopback address (a local test endpoint).
pub(crate) fn check_api_url(url: &str) -> Result<(), &'static str> {
    use yetibot_conversation::EndpointProblem;
    yetibot_conversation::check_endpoint(url).map_err(|problem| match problem {
        EndpointProblem::Credentials => "must not contain credentials",
        EndpointProblem::Query => "must not contain a query",
        EndpointProblem::Fragment => "must not contain a fragment",
        _ => "must be an absolute https URL",
    })?;
    let parsed = url::Url::parse(url).map_err(|_| "must be an absolute https URL")?;
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if parsed.scheme() == "https" || loopback {
        Ok(())
    } else {
        Err("must use https (plain http only to a loopback address)")
    }
}

impl IntentRouter {
    /// The Workers AI account `clef` and `clairic` run on.
    #[must_use]
    pub fn account(&self) -> yetibot_ai_providers::WorkersAccount {
        yetibot_ai_providers::WorkersAccount::new(
            &self.api_url,
            self.account_id.clone(),
            self.key_file.clone(),
            self.gateway_id.clone(),
        )
    }

    /// Validates `:intent-router`. `toolset_kind` answers the kind of a configured toolset.
    ///
    /// # Errors
    ///
    /// Every problem found, with paths relative to the `:ai` map (`intent-router.account-id`).
    pub fn from_config(
        config: &IntentRouterConfig,
        toolset_kind: &dyn Fn(&str) -> Option<ToolsetKind>,
    ) -> Result<Self, Vec<Error>> {
        let mut problems = Vec::new();
        let mut fail = |field: &str, reason: &str| {
            problems.push(Error::new(format!("intent-router.{field}"), reason));
        };
        let enabled = config.enabled.unwrap_or(false);
        let account_id = config.account_id.clone().unwrap_or_default();
        if config.account_id.is_none() {
            fail("account-id", "is required");
        } else if account_id.len() != 32 || !account_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            fail("account-id", "must be 32 hexadecimal characters");
        }
        let key_file = PathBuf::from(config.key_file.clone().unwrap_or_default());
        if config.key_file.is_none() {
            fail("key-file", "is required");
        } else if !key_file.is_absolute() {
            fail("key-file", "must be an absolute path");
        }
        if let Some(id) = &config.gateway_id {
            let ok = !id.is_empty()
                && id.len() <= 64
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                fail("gateway-id", "must be 1 to 64 letters, digits, '-' or '_'");
            }
        }
        let api_url = config
            .api_url
            .clone()
            .unwrap_or_else(|| yetibot_ai_providers::DEFAULT_WORKERS_API_URL.to_owned());
        if let Err(reason) = check_api_url(&api_url) {
            fail("api-url", reason);
        }
        let min_probability = config.min_probability.unwrap_or(DEFAULT_MIN_PROBABILITY);
        if !(MIN_MIN_PROBABILITY..=1.0).contains(&min_probability) {
            fail("min-probability", "must be a number from 0.9 to 1.0");
        }
        match config.github_toolset.as_deref() {
            None if enabled => fail("github-toolset", "is required when :enabled is true"),
            None => {}
            Some(name) => match toolset_kind(name) {
                None => fail("github-toolset", "does not name a configured toolset"),
                Some(ToolsetKind::GithubPr) => {}
                Some(_) => fail("github-toolset", "must name a github-pr toolset"),
            },
        }
        if problems.is_empty() {
            Ok(Self {
                enabled,
                account_id,
                key_file,
                gateway_id: config.gateway_id.clone(),
                api_url,
                github_toolset: config.github_toolset.clone(),
                min_probability,
            })
        } else {
            Err(problems)
        }
    }
}
