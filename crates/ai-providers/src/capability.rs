//! The config mapping: derives a provider's capability flags from its validated settings.
//!
//! This is the only module that looks at hosts, URL paths or key spellings. Everything else
//! reads the resulting [`Capabilities`], so a new endpoint needs configuration, not code.

use yetibot_redaction::Secret;

use crate::config::{Credential, WireApi};

/// The Cloudflare API base that Workers AI's model endpoint (`run_workers_model`) is below
/// by default; a gateway or a local test endpoint may stand in for it.
pub const DEFAULT_WORKERS_API_URL: &str = "https://api.cloudflare.com/client/v4";

/// Where and how a provider's model catalog is listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelListing {
    /// `GET {base}/models`, OpenAI style (`data[].id`).
    Standard {
        /// The full models URL.
        url: String,
    },
    /// A separate OpenAI-style models endpoint outside the API base (OpenCode Zen's current
    /// inference base has none of its own).
    Separate {
        /// The full models URL.
        url: String,
    },
    /// Cloudflare's paginated Workers AI catalog search for an account.
    CloudflareSearch {
        /// The search URL, without query.
        url: String,
    },
}

impl ModelListing {
    /// `GET {base}/models`.
    #[must_use]
    pub fn standard(base_url: &str) -> Self {
        Self::Standard {
            url: format!("{}/models", base_url.trim_end_matches('/')),
        }
    }

    /// OpenCode Zen's separate endpoint: `{origin}/inference/v1/models` for the base's
    /// origin (scheme, host and port).
    #[must_use]
    pub fn zen(base_url: &str) -> Self {
        let origin = url::Url::parse(base_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        Self::Separate {
            url: format!("{origin}/inference/v1/models"),
        }
    }

    /// Cloudflare's catalog search beside an account's `.../ai/v1` base:
    /// `.../ai/models/search`.
    #[must_use]
    pub fn cloudflare(base_url: &str) -> Self {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        Self::CloudflareSearch {
            url: format!("{base}/models/search"),
        }
    }

    /// The URL the listing starts from.
    #[must_use]
    pub fn url(&self) -> &str {
        match self {
            Self::Standard { url } | Self::Separate { url } | Self::CloudflareSearch { url } => url,
        }
    }
}

/// Where a model's context window can be read, besides a configured `:context-length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextWindowSource {
    /// Only the model listing, when it reports `context_length` or `max_model_len`.
    Listing,
    /// The listing, then Ollama's native API (`/api/ps`, `/api/show`; see
    /// [`Client::ollama_context_window`](crate::Client::ollama_context_window)), because
    /// Ollama's OpenAI-compatible listing never reports a window.
    OllamaApi,
}

/// The port Ollama serves on unless told otherwise.
const OLLAMA_DEFAULT_PORT: u16 = 11434;

/// How the request authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthKind {
    /// No `Authorization` header.
    None,
    /// An inline key sent as a Bearer token.
    InlineKey,
    /// A key file read by each request that needs it.
    KeyFile,
    /// A setup placeholder such as `REPLACE_WITH_..._KEY`: never sent; listing goes without
    /// auth and prompts fail before sending.
    Placeholder,
}

/// The JSON field that carries the output-token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputTokenParam {
    /// `max_completion_tokens` (Chat Completions).
    MaxCompletionTokens,
    /// `max_tokens` (Workers AI Chat Completions).
    MaxTokens,
    /// `max_output_tokens` (Responses).
    MaxOutputTokens,
}

impl OutputTokenParam {
    /// The JSON field name.
    #[must_use]
    pub fn field(self) -> &'static str {
        match self {
            Self::MaxCompletionTokens => "max_completion_tokens",
            Self::MaxTokens => "max_tokens",
            Self::MaxOutputTokens => "max_output_tokens",
        }
    }
}

/// A provider's capability flags, derived once from its validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// How models are listed.
    pub listing: ModelListing,
    /// How requests authenticate.
    pub auth: AuthKind,
    /// The output-token field.
    pub output_tokens: OutputTokenParam,
    /// Whether Responses requests send `max_turns` (only with native tools enabled: plain
    /// Responses servers reject unknown fields).
    pub sends_max_turns: bool,
    /// How the provider reports what a request cost, which decides how its usage is read.
    pub billing: Billing,
    /// Where the model's context window can be detected.
    pub context_window: ContextWindowSource,
}

/// How a provider reports cost in its usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billing {
    /// OpenCode Zen: the credits it charged, in dollars.
    ZenCredits,
    /// xAI: billed ticks, 10^10 per dollar.
    XaiTicks,
    /// Cloudflare Workers AI: tokens (priced from a rate table) and neurons.
    WorkersAi,
    /// Nothing known about this provider's accounting.
    Unknown,
}

/// Whether `key` is a setup placeholder rather than a real key.
///
/// The rule, case-insensitive after trimming: the key starts with `REPLACE_WITH_`,
/// `REPLACE-WITH-` or `YOUR_` / `YOUR-`, or it is one of `CHANGEME`, `CHANGE_ME`,
/// `REPLACE_ME`, or it is wrapped in angle brackets (`<api-key>`). Real keys from the
/// providers this crate targets never have these shapes.
#[must_use]
pub fn is_placeholder_key(key: &str) -> bool {
    let key = key.trim().to_ascii_uppercase();
    ["REPLACE_WITH_", "REPLACE-WITH-", "YOUR_", "YOUR-"]
        .iter()
        .any(|p| key.starts_with(p))
        || ["CHANGEME", "CHANGE_ME", "REPLACE_ME"].contains(&key.as_str())
        || (key.len() > 2 && key.starts_with('<') && key.ends_with('>'))
}

pub(crate) fn derive(
    base_url: &str,
    api: WireApi,
    credential: &Credential,
    native_tools: bool,
) -> Capabilities {
    let parsed = url::Url::parse(base_url).ok();
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let https = parsed.as_ref().is_some_and(|u| u.scheme() == "https");
    let path = parsed
        .as_ref()
        .map(|u| u.path().trim_end_matches('/').to_owned())
        .unwrap_or_default();

    let cloudflare_account = (https && host == "api.cloudflare.com")
        .then(|| cloudflare_account(&path))
        .flatten();
    let zen = https && host == "opencode.ai";
    let listing = if cloudflare_account.is_some() {
        ModelListing::cloudflare(base_url)
    } else if zen && path.starts_with("/inference/") {
        ModelListing::zen(base_url)
    } else {
        ModelListing::standard(base_url)
    };
    let billing = if cloudflare_account.is_some() {
        Billing::WorkersAi
    } else if zen {
        Billing::ZenCredits
    } else if https && host == "api.x.ai" {
        Billing::XaiTicks
    } else {
        Billing::Unknown
    };
    let output_tokens = match (api, cloudflare_account.is_some()) {
        (WireApi::Responses, _) => OutputTokenParam::MaxOutputTokens,
        (WireApi::ChatCompletions, true) => OutputTokenParam::MaxTokens,
        (WireApi::ChatCompletions, false) => OutputTokenParam::MaxCompletionTokens,
    };
    // Ollama is recognised by the port it listens on by default, the only trace its
    // OpenAI-compatible API leaves in a base URL; behind a proxy on another port the
    // listing is all there is, and `:context-length` fills the gap.
    let context_window = if parsed
        .as_ref()
        .and_then(url::Url::port)
        .is_some_and(|port| port == OLLAMA_DEFAULT_PORT)
    {
        ContextWindowSource::OllamaApi
    } else {
        ContextWindowSource::Listing
    };
    let auth = match credential {
        Credential::None => AuthKind::None,
        Credential::Inline(key) if is_placeholder(key) => AuthKind::Placeholder,
        Credential::Inline(_) => AuthKind::InlineKey,
        Credential::KeyFile(_) => AuthKind::KeyFile,
    };
    Capabilities {
        listing,
        auth,
        output_tokens,
        sends_max_turns: api == WireApi::Responses && native_tools,
        billing,
        context_window,
    }
}

fn is_placeholder(key: &Secret) -> bool {
    is_placeholder_key(key.expose())
}

/// The account ID of `/client/v4/accounts/{id}/ai/v1`, when it is 32 hex digits.
fn cloudflare_account(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/client/v4/accounts/")?;
    let (account, tail) = rest.split_once('/')?;
    (tail == "ai/v1" && account.len() == 32 && account.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| account.to_owned())
}
