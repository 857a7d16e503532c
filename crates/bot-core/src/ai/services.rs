//! What the AI commands run with: the provider client and configuration, the runtime
//! default, model discovery, the MCP host, the tool policy and a clock. The binary builds it
//! from configuration; tests and embedders build it from their own values.

use std::sync::Arc;

use tokio::time::Instant;
use yetibot_ai_providers::{Client, ProviderSet, RuntimeDefaults};
use yetibot_discovery_cache::{DiscoveryCache, Ownership, Uncertainty};
use yetibot_mcp_host::Host;
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
        Self {
            client,
            providers,
            defaults: RuntimeDefaults::default(),
            discovery: None,
            host,
            policy,
            native_services: NativeServices::default(),
            clock,
        }
    }

    /// Routes `--model` by the model catalogs this cache observes (the binary keeps it
    /// filled with a [`yetibot_discovery_cache::Refresher`]).
    #[must_use]
    pub fn with_discovery(mut self, cache: DiscoveryCache) -> Self {
        self.discovery = Some(cache);
        self
    }

    /// Which service-backed native tools have their services configured.
    #[must_use]
    pub fn with_native_services(mut self, services: NativeServices) -> Self {
        self.native_services = services;
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
