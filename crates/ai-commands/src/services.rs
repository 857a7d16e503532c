//! What the AI commands run with: the provider client and configuration, the runtime
//! default, model discovery, the MCP host, the tool policy and a clock. The binary builds it
//! from configuration; tests and embedders build it from their own values.

use std::sync::Arc;

use tokio::time::Instant;
use yetibot_ai_providers::{Client, Provider, ProviderConfig, ProviderSet, RuntimeDefaults};
use yetibot_discovery_cache::{DiscoveryCache, Ownership, Uncertainty};
use yetibot_mcp_host::Host;
use yetibot_redaction::Secret;
use yetibot_tool_policy::{NativeServices, ToolPolicy};

/// The monotonic clock the AI commands measure durations and catalog freshness with.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Everything the AI commands share. Cheap to share behind an [`Arc`]; the runtime default
/// inside is the one every caller sees.
pub struct AiServices {
    pub(crate) client: Client,
    pub(crate) providers: ProviderSet,
    pub(crate) defaults: RuntimeDefaults,
    pub(crate) discovery: Option<DiscoveryCache>,
    pub(crate) host: Host,
    pub(crate) policy: ToolPolicy,
    pub(crate) native_services: NativeServices,
    pub(crate) clock: Clock,
    /// The Grok provider `grok` (and `ai --provider grok`) uses when no provider is named
    /// `grok`: built from the xAI key, never part of the configured set, so `ai` reaches it
    /// only when asked for by name.
    pub(crate) grok_fallback: Option<Provider>,
    /// The running application's version, for `release_info`.
    pub(crate) app_version: String,
    /// The published feed of `release_info`'s `latest` view, when configured.
    pub(crate) release_feed: Option<crate::natives::ReleaseFeed>,
    /// The conversations of chat threads on providers with `:thread-store`.
    pub(crate) threads: crate::thread::ThreadStore,
}

/// The name `grok` always uses.
pub const GROK_PROVIDER: &str = "grok";
/// The xAI API base of the Grok provider built from `:yetibot :xai :key`.
pub const XAI_BASE_URL: &str = "https://api.x.ai/v1";
/// The model of the Grok provider built from `:yetibot :xai :key`.
pub const XAI_DEFAULT_MODEL: &str = "grok-4.7";

/// The Grok Responses provider an xAI key supplies: [`XAI_BASE_URL`], model
/// [`XAI_DEFAULT_MODEL`], server-side `web_search` and `x_search`. `base_url` replaces the
/// xAI base (tests point it at a local server).
///
/// # Errors
///
/// The provider configuration's problems (a blank key, an unusable URL), as paths and
/// reasons that never contain the key.
pub fn xai_provider(key: &Secret, base_url: Option<&str>) -> Result<Provider, Vec<String>> {
    let config = ProviderConfig {
        name: Some(GROK_PROVIDER.to_owned()),
        url: Some(base_url.unwrap_or(XAI_BASE_URL).to_owned()),
        key: Some(key.clone()),
        model: Some(XAI_DEFAULT_MODEL.to_owned()),
        api: Some("responses".to_owned()),
        native_tools: Some(vec!["web_search".to_owned(), "x_search".to_owned()]),
        ..ProviderConfig::default()
    };
    let set = ProviderSet::from_config(None, &[config])
        .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    set.providers()
        .first()
        .cloned()
        .ok_or_else(|| vec!["the xAI provider could not be built".to_owned()])
}

impl std::fmt::Debug for AiServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiServices")
            .field("providers", &self.providers.providers().len())
            .field("discovery", &self.discovery.is_some())
            .finish_non_exhaustive()
    }
}

impl AiServices {
    /// The services over these providers, MCP servers (`host`) and toolsets. `client`
    /// should carry every configured credential ([`Client::with_secrets`]) so that answers
    /// and tool results are redacted of them. Without [`AiServices::with_discovery`],
    /// `--model` alone routes only when one provider is configured.
    #[must_use]
    pub fn new(
        client: Client,
        providers: ProviderSet,
        host: Host,
        policy: ToolPolicy,
        clock: Clock,
    ) -> Self {
        let mut services = Self {
            client,
            providers,
            defaults: RuntimeDefaults::default(),
            discovery: None,
            host,
            policy,
            clock,
            grok_fallback: None,
            app_version: env!("CARGO_PKG_VERSION").to_owned(),
            release_feed: None,
            threads: crate::thread::ThreadStore::default(),
            native_services: NativeServices::default(),
        };
        // Which service tools have their service: each tool's entry says.
        services.native_services = NativeServices {
            configured: crate::natives::configured_services(&services),
        };
        services
    }

    /// The running application's version as `release_info` reports it (this crate's
    /// version by default).
    #[must_use]
    pub fn with_app_version(mut self, version: impl Into<String>) -> Self {
        self.app_version = version.into();
        self
    }

    /// The running application's version.
    pub(crate) fn app_version(&self) -> &str {
        &self.app_version
    }

    /// The published release feed `release_info`'s `latest` view reads.
    #[must_use]
    pub fn with_release_feed(mut self, feed: crate::natives::ReleaseFeed) -> Self {
        self.release_feed = Some(feed);
        self
    }

    /// The provider `grok` uses when none is named `grok` (see [`xai_provider`]). Ignored
    /// when a provider is named `grok`.
    #[must_use]
    pub fn with_grok_fallback(mut self, provider: Provider) -> Self {
        self.grok_fallback = Some(provider);
        self
    }

    /// The configured provider of this name, or for `grok` the xAI fallback.
    pub(crate) fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.get(name).or(if name == GROK_PROVIDER {
            self.grok_fallback.as_ref()
        } else {
            None
        })
    }

    /// Routes `--model` by the model catalogs this cache observes (the binary keeps it
    /// filled with a [`yetibot_discovery_cache::Refresher`]).
    #[must_use]
    pub fn with_discovery(mut self, cache: DiscoveryCache) -> Self {
        self.discovery = Some(cache);
        self
    }

    /// The configured providers.
    #[must_use]
    pub fn providers(&self) -> &ProviderSet {
        &self.providers
    }

    /// The runtime default every caller shares (`ai default`).
    #[must_use]
    pub fn defaults(&self) -> &RuntimeDefaults {
        &self.defaults
    }

    /// Who advertises `model` now, by the discovery cache; uncertain without one.
    pub(crate) fn owner_of(&self, model: &str) -> Ownership {
        match &self.discovery {
            Some(cache) => cache.owner_of(model, (self.clock)()),
            None => Ownership::Uncertain(Uncertainty::ColdStart),
        }
    }
}
