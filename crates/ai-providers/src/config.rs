//! Provider configuration as operators write it, and its validation into [`ProviderSet`].

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;
use yetibot_redaction::Secret;

use crate::capability::{self, Capabilities, OutputTokenParam};
use crate::error::Error;

/// The default and ceiling for a Responses provider's server-side `:max-turns`.
pub const DEFAULT_MAX_TURNS: u8 = 6;
/// The largest accepted `:max-turns`.
pub const MAX_MAX_TURNS: u8 = 20;
/// Native (server-side) tools a Responses provider may enable with `:native-tools`.
pub const NATIVE_TOOLS: &[&str] = &["web_search", "x_search"];
/// The longest accepted `:gateway-id`, in bytes.
pub const MAX_GATEWAY_ID_LEN: usize = 64;

/// One entry of `:yetibot :ai :providers`, exactly as configured.
///
/// Every field is optional here so that validation can report all missing or invalid fields
/// at once, with paths, instead of stopping at the first one.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProviderConfig {
    /// Unique provider name without whitespace (`:name`).
    pub name: Option<String>,
    /// API base URL including any prefix such as `/v1` (`:url`).
    pub url: Option<String>,
    /// Inline API key, sent as a Bearer token (`:key`).
    pub key: Option<Secret>,
    /// Absolute path of a file holding the API key (`:key-file`), read per request.
    pub key_file: Option<String>,
    /// Default model ID for prompts (`:model`).
    pub model: Option<String>,
    /// Wire API: `chat-completions` (default) or `responses` (`:api`).
    pub api: Option<String>,
    /// Server-side tools of a Responses provider (`:native-tools`).
    pub native_tools: Option<Vec<String>>,
    /// Server-side turn limit of a Responses provider (`:max-turns`, 1–20).
    pub max_turns: Option<i64>,
    /// Whether tool-enabled requests may use this provider (`:tool-calling`, default true).
    pub tool_calling: Option<bool>,
    /// `standard` sends `tool_choice`, `omit` leaves it out (`:tool-choice`).
    pub tool_choice: Option<String>,
    /// Cloudflare AI Gateway ID sent as `cf-aig-gateway-id` (`:gateway-id`).
    pub gateway_id: Option<String>,
    /// Keep each chat thread's conversation in the application, tool calls and results
    /// included, and resend it trimmed to the context window (`:thread-store`, default
    /// false): for stateless endpoints such as Ollama's or vLLM's.
    pub thread_store: Option<bool>,
    /// The model's context window in tokens when the model listing does not report it
    /// (`:context-length`, 1,024 to 10,000,000).
    pub context_length: Option<i64>,
    /// The most output tokens one turn of a prompt may use (`:max-output-tokens`, 1 to
    /// 1,000,000, default [`DEFAULT_MAX_OUTPUT_TOKENS`]), sent in the provider's own field.
    pub max_output_tokens: Option<i64>,
    /// Whether Chat Completions turns are streamed (`:stream`, default true). `false` is for
    /// the rare server that refuses streamed requests; such a turn's whole generation must
    /// then arrive within one read deadline.
    pub stream: Option<bool>,
    /// The Chat Completions field that carries the output cap (`:output-token-field`):
    /// `max_completion_tokens` (the default) or `max_tokens`, for servers that know only
    /// the older field. Responses always uses `max_output_tokens`.
    pub output_token_field: Option<String>,
}

/// The output cap of a prompt's turns when `:max-output-tokens` is not configured.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4096;
/// The largest `:max-output-tokens` accepted.
pub const MAX_MAX_OUTPUT_TOKENS: u32 = 1_000_000;

/// The smallest `:context-length` accepted.
pub const MIN_CONTEXT_LENGTH: u64 = 1024;
/// The largest `:context-length` accepted.
pub const MAX_CONTEXT_LENGTH: u64 = 10_000_000;

/// The wire API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireApi {
    /// `POST {base}/chat/completions`.
    ChatCompletions,
    /// `POST {base}/responses` with streaming.
    Responses,
}

/// Whether a tool-enabled request sends `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoiceMode {
    /// Send `auto` (tools offered) or `none` (tools withheld).
    Standard,
    /// Leave `tool_choice` out, for endpoints that reject it.
    Omit,
}

/// Where a provider's API key comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// No key: the endpoint needs no authentication.
    None,
    /// A key written in the configuration.
    Inline(Secret),
    /// An absolute path to a file that holds the key. The file is opened only by the request
    /// that needs it, so its path is treated as private too.
    KeyFile(PathBuf),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Inline(_) => f.write_str("Inline([redacted])"),
            Self::KeyFile(_) => f.write_str("KeyFile([redacted])"),
        }
    }
}

impl Credential {
    /// A short description that is safe to print: never the key or the path.
    #[must_use]
    pub fn describe(&self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Inline(_) => "inline key [redacted]",
            Self::KeyFile(_) => "key file [redacted]",
        }
    }
}

/// A validated provider.
#[derive(Debug, Clone)]
pub struct Provider {
    name: String,
    base_url: String,
    credential: Credential,
    model: Option<String>,
    api: WireApi,
    native_tools: Vec<String>,
    max_turns: u8,
    tool_calling: bool,
    tool_choice: ToolChoiceMode,
    gateway_id: Option<String>,
    thread_store: bool,
    context_length: Option<u64>,
    max_output_tokens: u32,
    stream: bool,
    capabilities: Capabilities,
}

impl Provider {
    /// The capability flags derived from this provider's configuration. Code that uses a
    /// provider reads these instead of its name or host.
    #[must_use]
    pub fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Replaces the derived capability flags, for embedders and tools that know better than
    /// the configuration mapping, e.g. to point a Cloudflare catalog search at a local
    /// fixture or a proxy.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The provider's unique name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The normalized API base URL, without a trailing slash.
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Where the API key comes from.
    #[must_use]
    pub fn credential(&self) -> &Credential {
        &self.credential
    }

    /// The configured default model, if any.
    #[must_use]
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The wire API.
    #[must_use]
    pub fn api(&self) -> WireApi {
        self.api
    }

    /// Server-side tools enabled on a Responses provider (empty otherwise).
    #[must_use]
    pub fn native_tools(&self) -> &[String] {
        &self.native_tools
    }

    /// Server-side turn limit of a Responses provider.
    #[must_use]
    pub fn max_turns(&self) -> u8 {
        self.max_turns
    }

    /// Whether tool-enabled requests may use this provider.
    #[must_use]
    pub fn tool_calling(&self) -> bool {
        self.tool_calling
    }

    /// Whether chat threads keep their whole conversation in the application
    /// (`:thread-store`), resent trimmed to the context window.
    #[must_use]
    pub fn thread_store(&self) -> bool {
        self.thread_store
    }

    /// The most output tokens one turn of a prompt may use (`:max-output-tokens`, else
    /// [`DEFAULT_MAX_OUTPUT_TOKENS`]).
    #[must_use]
    pub fn max_output_tokens(&self) -> u32 {
        self.max_output_tokens
    }

    /// Whether Chat Completions turns are streamed (`:stream`, default true): a streamed
    /// turn may generate for as long as it keeps sending, each gap bounded by the read
    /// deadline and the whole turn by the client's ceiling.
    #[must_use]
    pub fn streams(&self) -> bool {
        self.stream
    }

    /// The configured context window (`:context-length`), if any.
    #[must_use]
    pub fn context_length(&self) -> Option<u64> {
        self.context_length
    }

    /// Whether tool-enabled requests send `tool_choice`.
    #[must_use]
    pub fn tool_choice(&self) -> ToolChoiceMode {
        self.tool_choice
    }

    /// The Cloudflare AI Gateway ID, if configured.
    #[must_use]
    pub fn gateway_id(&self) -> Option<&str> {
        self.gateway_id.as_deref()
    }
}

/// All configured providers and which one is the default.
#[derive(Debug, Clone, Default)]
pub struct ProviderSet {
    providers: Vec<Provider>,
    default: Option<usize>,
}

impl ProviderSet {
    /// Validates `:providers` and `:default-provider` together.
    ///
    /// # Errors
    ///
    /// Returns every problem found, each an [`Error::InvalidConfig`] whose path is relative to
    /// the `:ai` map (`providers[1].url`). No message contains a key, a key-file path or a URL.
    pub fn from_config(
        default_provider: Option<&str>,
        configs: &[ProviderConfig],
    ) -> Result<Self, Vec<Error>> {
        let mut problems = Vec::new();
        let mut providers = Vec::with_capacity(configs.len());
        let mut seen = HashSet::new();
        for (index, config) in configs.iter().enumerate() {
            let mut fail = |field: &str, reason: &str| {
                problems.push(Error::config(format!("providers[{index}].{field}"), reason));
            };
            // A repeated name is reported even when the provider has other problems, so
            // that one pass lists them all.
            let unique = match config.name.as_deref() {
                Some(name) if !name.trim().is_empty() => seen.insert(name.to_owned()),
                _ => true,
            };
            let provider = validate_provider(config, &mut fail);
            if !unique {
                fail("name", "duplicates an earlier provider's name");
            } else if let Some(provider) = provider {
                providers.push(provider);
            }
        }
        let default = match default_provider {
            None => (!configs.is_empty()).then_some(0),
            Some(name) => {
                let found = providers.iter().position(|p| p.name == name);
                // Compare with the names as written, so that naming a provider that is itself
                // invalid reports that provider's problems only.
                if !configs.iter().any(|c| c.name.as_deref() == Some(name)) {
                    problems.push(Error::config(
                        "default-provider",
                        "does not name a configured provider",
                    ));
                }
                found
            }
        };
        if problems.is_empty() {
            Ok(Self { providers, default })
        } else {
            Err(problems)
        }
    }

    /// The providers in configuration order.
    #[must_use]
    pub fn providers(&self) -> &[Provider] {
        &self.providers
    }

    /// Puts `provider` in place of the configured provider of the same name, keeping its
    /// position and the default, and returns the one it replaced. For embedders and tests
    /// that adjust a provider with [`Provider::with_capabilities`]. When no provider has
    /// that name the set is unchanged and `None` is returned.
    pub fn replace(&mut self, provider: Provider) -> Option<Provider> {
        let slot = self
            .providers
            .iter_mut()
            .find(|p| p.name == provider.name)?;
        Some(std::mem::replace(slot, provider))
    }

    /// The provider with this exact name.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The default provider: `:default-provider`, else the first one.
    #[must_use]
    pub fn default_provider(&self) -> Option<&Provider> {
        self.default.and_then(|i| self.providers.get(i))
    }

    /// Whether no provider is configured.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    /// The same set with the provider of `provider`'s name replaced by `provider`, in the
    /// same place (so the default stays the default): for embedders and tests that adjust a
    /// configured provider with [`Provider::with_capabilities`]. A name the set does not
    /// hold leaves the set unchanged, since a provider is only ever added by validation.
    #[must_use]
    pub fn with_provider(mut self, provider: Provider) -> Self {
        if let Some(slot) = self.providers.iter_mut().find(|p| p.name == provider.name) {
            *slot = provider;
        }
        self
    }
}

/// Validates an API base URL and returns it without a trailing slash.
///
/// # Errors
///
/// A static reason (never containing the URL) when it is not an absolute `http` or `https`
/// URL with a host, or when it carries credentials, a query, a fragment or an endpoint path.
pub fn normalize_base_url(raw: &str) -> Result<String, &'static str> {
    yetibot_conversation::check_endpoint(raw).map_err(|problem| {
        problem.reason("must not contain credentials (put the key in :key or :key-file)")
    })?;
    let url = url::Url::parse(raw).map_err(|_| "is not a valid absolute URL")?;
    let normalized = url.as_str().trim_end_matches('/').to_owned();
    for endpoint in ["/chat/completions", "/responses", "/models"] {
        if normalized.ends_with(endpoint) {
            return Err(
                "must be the API base URL, without /chat/completions, /responses or /models",
            );
        }
    }
    Ok(normalized)
}

/// Whether `token` may be sent in an `Authorization` header: nonempty printable ASCII
/// without whitespace.
#[must_use]
pub fn is_header_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

fn validate_provider(
    config: &ProviderConfig,
    fail: &mut dyn FnMut(&str, &str),
) -> Option<Provider> {
    let name = match config.name.as_deref() {
        None => {
            fail("name", "is required");
            None
        }
        Some("") => {
            fail("name", "must not be blank");
            None
        }
        Some(name) if name.chars().any(char::is_whitespace) => {
            fail("name", "must not contain whitespace");
            None
        }
        Some(name) => Some(name.to_owned()),
    };
    let base_url = match config.url.as_deref() {
        None => {
            fail("url", "is required");
            None
        }
        Some(raw) => normalize_base_url(raw)
            .map_err(|reason| fail("url", reason))
            .ok(),
    };
    let credential = match (&config.key, &config.key_file) {
        (Some(_), Some(_)) => {
            fail("key", "and :key-file are mutually exclusive: keep one");
            None
        }
        (Some(key), None) if key.expose().trim().is_empty() => {
            fail(
                "key",
                "must not be blank (omit it for endpoints without authentication)",
            );
            None
        }
        (Some(key), None) if !is_header_token(key.expose()) => {
            fail("key", "must be printable ASCII without whitespace");
            None
        }
        (Some(key), None) => Some(Credential::Inline(key.clone())),
        (None, Some(path)) => {
            let path = PathBuf::from(path);
            if path.is_absolute() {
                Some(Credential::KeyFile(path))
            } else {
                fail("key-file", "must be an absolute path");
                None
            }
        }
        (None, None) => Some(Credential::None),
    };
    let model = match config.model.as_deref() {
        Some(model) if model.trim().is_empty() => {
            fail(
                "model",
                "must not be blank (omit it to choose a model per prompt)",
            );
            None
        }
        Some(model) if model.trim() != model || model.chars().any(char::is_control) => {
            fail(
                "model",
                "must not have surrounding whitespace or control characters",
            );
            None
        }
        other => Some(other.map(str::to_owned)),
    };
    let api = match config.api.as_deref() {
        None | Some("chat-completions") => Some(WireApi::ChatCompletions),
        Some("responses") => Some(WireApi::Responses),
        Some(_) => {
            fail("api", "must be \"chat-completions\" or \"responses\"");
            None
        }
    };
    let responses = api == Some(WireApi::Responses);
    let native_tools = match &config.native_tools {
        None => Some(Vec::new()),
        Some(_) if !responses && api.is_some() => {
            fail("native-tools", "is only allowed with :api \"responses\"");
            None
        }
        Some(tools) => check_native_tools(tools, fail),
    };
    let max_turns = match config.max_turns {
        None => Some(DEFAULT_MAX_TURNS),
        Some(_) if !responses && api.is_some() => {
            fail("max-turns", "is only allowed with :api \"responses\"");
            None
        }
        Some(n) => match u8::try_from(n) {
            Ok(n) if (1..=MAX_MAX_TURNS).contains(&n) => Some(n),
            _ => {
                fail("max-turns", "must be an integer from 1 to 20");
                None
            }
        },
    };
    let tool_choice = match config.tool_choice.as_deref() {
        None | Some("standard") => Some(ToolChoiceMode::Standard),
        Some("omit") => Some(ToolChoiceMode::Omit),
        Some(_) => {
            fail("tool-choice", "must be \"standard\" or \"omit\"");
            None
        }
    };
    let gateway_id = match config.gateway_id.as_deref() {
        None => Some(None),
        Some(id)
            if !id.is_empty()
                && id.len() <= MAX_GATEWAY_ID_LEN
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Some(Some(id.to_owned()))
        }
        Some(_) => {
            fail("gateway-id", "must be 1 to 64 letters, digits, '-' or '_'");
            None
        }
    };
    let context_length = match config.context_length {
        None => Some(None),
        Some(n) => match u64::try_from(n) {
            Ok(n) if (MIN_CONTEXT_LENGTH..=MAX_CONTEXT_LENGTH).contains(&n) => Some(Some(n)),
            _ => {
                fail(
                    "context-length",
                    "must be an integer from 1024 to 10000000 tokens",
                );
                None
            }
        },
    };
    let max_output_tokens = match config.max_output_tokens {
        None => Some(DEFAULT_MAX_OUTPUT_TOKENS),
        Some(n) => match u32::try_from(n) {
            Ok(n) if (1..=MAX_MAX_OUTPUT_TOKENS).contains(&n) => Some(n),
            _ => {
                fail(
                    "max-output-tokens",
                    "must be an integer from 1 to 1000000 tokens",
                );
                None
            }
        },
    };
    let output_field = match (config.output_token_field.as_deref(), api) {
        (None, _) => Some(None),
        (Some("max_completion_tokens"), Some(WireApi::ChatCompletions)) => {
            Some(Some(OutputTokenParam::MaxCompletionTokens))
        }
        (Some("max_tokens"), Some(WireApi::ChatCompletions)) => {
            Some(Some(OutputTokenParam::MaxTokens))
        }
        (Some("max_completion_tokens" | "max_tokens"), Some(WireApi::Responses)) => {
            fail(
                "output-token-field",
                "applies to :api \"chat-completions\" only (Responses uses max_output_tokens)",
            );
            None
        }
        // The API itself is invalid and already reported.
        (Some("max_completion_tokens" | "max_tokens"), None) => Some(None),
        (Some(_), _) => {
            fail(
                "output-token-field",
                "must be \"max_completion_tokens\" or \"max_tokens\"",
            );
            None
        }
    };
    let (base_url, credential, api, native_tools) = (base_url?, credential?, api?, native_tools?);
    let mut capabilities =
        capability::derive(&base_url, api, &credential, !native_tools.is_empty());
    if let Some(field) = output_field? {
        capabilities.output_tokens = field;
    }
    Some(Provider {
        name: name?,
        base_url,
        credential,
        model: model?,
        api,
        native_tools,
        max_turns: max_turns?,
        tool_calling: config.tool_calling.unwrap_or(true),
        tool_choice: tool_choice?,
        gateway_id: gateway_id?,
        thread_store: config.thread_store.unwrap_or(false),
        context_length: context_length?,
        max_output_tokens: max_output_tokens?,
        stream: config.stream.unwrap_or(true),
        capabilities,
    })
}

fn check_native_tools(tools: &[String], fail: &mut dyn FnMut(&str, &str)) -> Option<Vec<String>> {
    let mut ok = true;
    let mut seen = HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        if !NATIVE_TOOLS.contains(&tool.as_str()) {
            fail(
                &format!("native-tools[{i}]"),
                "must be \"web_search\" or \"x_search\"",
            );
            ok = false;
        } else if !seen.insert(tool) {
            fail(&format!("native-tools[{i}]"), "is listed twice");
            ok = false;
        }
    }
    ok.then(|| tools.to_vec())
}
