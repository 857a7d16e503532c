//! What the AI commands run with: the provider client and configuration, the runtime
//! default, model discovery, the MCP host, the tool policy and a clock. The binary builds it
//! from configuration; tests and embedders build it from their own values.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::time::Instant;
use yetibot_ai_providers::{Client, Provider, ProviderSet, RuntimeDefaults};
use yetibot_discovery_cache::{DiscoveryCache, Ownership, Uncertainty};
use yetibot_mcp_host::Host;
use yetibot_tool_policy::ToolPolicy;

use yetibot_pull_requests::DEFAULT_GITHUB_API_URL;

/// The monotonic clock the AI commands measure durations and catalog freshness with.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Reads every due model catalog into the discovery cache and returns when all have
/// answered (one round of a [`yetibot_discovery_cache::Refresher`]).
pub type Discover = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// Everything the AI commands share. Cheap to share behind an [`Arc`]; the runtime default
/// inside is the one every caller sees.
pub struct AiServices {
    pub(crate) client: Client,
    pub(crate) providers: ProviderSet,
    pub(crate) defaults: RuntimeDefaults,
    pub(crate) discovery: Option<DiscoveryCache>,
    /// Reads the model catalogs into the discovery cache now, for a program that keeps no
    /// refresher running (a one-shot command): asked when `--model` alone must be routed
    /// and the cache cannot settle it.
    pub(crate) discover: Option<Discover>,
    pub(crate) host: Host,
    pub(crate) policy: ToolPolicy,
    pub(crate) clock: Clock,
    /// The Grok provider `grok` (and `ai --provider grok`) uses when no provider is named
    /// `grok`: built from the xAI key, never part of the configured set, so `ai` reaches it
    /// only when asked for by name.
    pub(crate) grok_fallback: Option<Provider>,
    /// The running application's version, for `release_info`.
    pub(crate) app_version: String,
    /// The published feed of `release_info`'s `latest` view, when configured.
    pub(crate) release_feed: Option<crate::config::ReleaseFeed>,
    /// The conversations of chat threads on providers with `:thread-store`.
    pub(crate) threads: crate::thread::ThreadStore,
    /// The Workers AI account `clef` and `clairic` run on (the intent router's).
    pub(crate) workers: Option<yetibot_ai_providers::WorkersAccount>,
    /// The image loader of `clef` and `clairic`.
    pub(crate) images: Option<yetibot_image_fetch::Fetcher>,
    /// The Imgflip account of `meme`.
    pub(crate) imgflip: Option<crate::config::ImgflipAccount>,
    /// The xAI account of `gi`.
    pub(crate) xai: Option<crate::config::XaiAccount>,
    /// The read-only Wise account of `wise`, with its policy.
    pub(crate) wise: Option<crate::config::wise::WiseAccount>,
    /// The guarded pull-request workflow's pending and finished proposals.
    pub(crate) proposals: yetibot_pull_requests::Proposals,
    /// Where the workflow's audit events go.
    pub(crate) audit: Option<yetibot_pull_requests::Audit>,
    /// GitHub's REST API base, for the two ancestry reads of an approved execution.
    pub(crate) github_api: String,
    /// Automatic routing of change requests to draft pull requests, when enabled.
    pub(crate) routing: Option<crate::proposals::Routing>,
    /// Automatic routing's receipts, by chat message.
    pub(crate) receipts: yetibot_pull_requests::Receipts,
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
            discover: None,
            host,
            policy,
            clock,
            grok_fallback: None,
            app_version: env!("CARGO_PKG_VERSION").to_owned(),
            release_feed: None,
            workers: None,
            images: None,
            imgflip: None,
            xai: None,
            wise: None,
            proposals: yetibot_pull_requests::Proposals::default(),
            audit: None,
            github_api: DEFAULT_GITHUB_API_URL.to_owned(),
            routing: None,
            receipts: yetibot_pull_requests::Receipts::default(),
            threads: crate::thread::ThreadStore::default(),
        }
    }

    /// Sends the guarded pull-request workflow's audit events (every proposal step, with no
    /// file contents, prompts or credentials) to `audit`. Without it they are dropped.
    #[must_use]
    pub fn with_audit(mut self, audit: yetibot_pull_requests::Audit) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Reads commit ancestry from this GitHub REST API base instead of
    /// [`DEFAULT_GITHUB_API_URL`] (a test double, or a proxy in front of GitHub.com's API;
    /// only GitHub.com's API is supported).
    #[must_use]
    pub fn with_github_api_url(mut self, url: impl Into<String>) -> Self {
        self.github_api = url.into();
        self
    }

    /// Turns on automatic routing when `router` is enabled: eligible `ai` change requests
    /// are classified by Clef and may become draft pull requests under its `:github-toolset`
    /// without review in chat. Clef runs on the router's account, which
    /// [`AiServices::with_decisions`] sets (call it too).
    #[must_use]
    pub fn with_intent_routing(mut self, router: &crate::config::IntentRouter) -> Self {
        self.routing = match (&router.github_toolset, router.enabled) {
            (Some(toolset), true) => Some(crate::proposals::Routing {
                toolset: toolset.clone(),
                min_probability: router.min_probability,
            }),
            _ => None,
        };
        self
    }

    /// Reports one audit event.
    pub(crate) fn audit(&self, event: &yetibot_pull_requests::AuditEvent) {
        if let Some(audit) = &self.audit {
            audit(event);
        }
    }

    /// What an approved proposal executes with.
    pub(crate) fn executor(&self) -> yetibot_pull_requests::Executor<'_> {
        yetibot_pull_requests::Executor {
            host: &self.host,
            client: &self.client,
            policy: &self.policy,
            github_api: &self.github_api,
            audit: self.audit.as_ref(),
        }
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

    /// The Workers AI account `clef` and `clairic` (commands and native tools) run on: the
    /// intent router's ([`crate::IntentRouter::account`]), whether or not routing is enabled.
    #[must_use]
    pub fn with_decisions(mut self, account: yetibot_ai_providers::WorkersAccount) -> Self {
        self.workers = Some(account);
        self
    }

    /// The image loader `clef` and `clairic` fetch image URLs and attachments with. Without
    /// one, a request that names an image is refused before anything is sent.
    #[must_use]
    pub fn with_images(mut self, fetcher: yetibot_image_fetch::Fetcher) -> Self {
        self.images = Some(fetcher);
        self
    }

    /// The Imgflip account the `meme` command and tool use.
    #[must_use]
    pub fn with_imgflip(mut self, account: crate::config::ImgflipAccount) -> Self {
        self.imgflip = Some(account);
        self
    }

    /// The xAI account the `gi` command and tool make images with (independent of any
    /// chat provider's key).
    #[must_use]
    pub fn with_image_generation(mut self, account: crate::config::XaiAccount) -> Self {
        self.xai = Some(account);
        self
    }

    /// The read-only Wise account the `wise` command and tool read, with its own balance and
    /// chat allowlists.
    #[must_use]
    pub fn with_wise(mut self, account: crate::config::wise::WiseAccount) -> Self {
        self.wise = Some(account);
        self
    }

    /// The published release feed `release_info`'s `latest` view reads.
    #[must_use]
    pub fn with_release_feed(mut self, feed: crate::config::ReleaseFeed) -> Self {
        self.release_feed = Some(feed);
        self
    }

    /// The provider `grok` uses when none is named `grok` (see
    /// [`xai_provider`](crate::xai_provider)). Ignored when a provider is named `grok`.
    #[must_use]
    pub fn with_grok_fallback(mut self, provider: Provider) -> Self {
        self.grok_fallback = Some(provider);
        self
    }

    /// The configured provider of this name, or the provider that stands in for it when
    /// none is configured (Grok from the xAI key).
    pub(crate) fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.get(name).or_else(|| {
            self.grok_fallback
                .as_ref()
                .filter(|_| name == crate::pinned::GROK.name)
        })
    }

    /// Routes `--model` by the model catalogs this cache observes (the binary keeps it
    /// filled with a [`yetibot_discovery_cache::Refresher`]).
    #[must_use]
    pub fn with_discovery(mut self, cache: DiscoveryCache) -> Self {
        self.discovery = Some(cache);
        self
    }

    /// Routes `--model` by catalogs read on demand: `cache` is consulted first, and when it
    /// cannot settle a model's owner (nothing read yet, out of date, a listing failed),
    /// `discover` reads the catalogs once and the cache is asked again. For programs that
    /// run one command and keep no background refresher.
    #[must_use]
    pub fn with_discovery_on_demand(mut self, cache: DiscoveryCache, discover: Discover) -> Self {
        self.discovery = Some(cache);
        self.discover = Some(discover);
        self
    }

    /// Reads the catalogs now when `model`'s owner is uncertain and a reader is set;
    /// nothing otherwise.
    pub(crate) async fn settle_owner(&self, model: &str) {
        if let (Some(discover), Ownership::Uncertain(_)) = (&self.discover, self.owner_of(model)) {
            discover().await;
        }
    }

    /// The providers whose last catalog read failed or was incomplete, by name, for an
    /// error that says which one to fix.
    pub(crate) fn unsettled_providers(&self) -> Vec<String> {
        use yetibot_discovery_cache::Status;
        self.discovery
            .as_ref()
            .map(|cache| {
                cache
                    .snapshot()
                    .into_iter()
                    .filter(|s| matches!(s.status, Status::Failed | Status::OverLimit))
                    .map(|s| s.name)
                    .collect()
            })
            .unwrap_or_default()
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
