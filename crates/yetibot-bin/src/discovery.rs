//! Wires background model discovery: the cache's provider set from the configuration, and a
//! lister that reads each provider's configured model-list endpoint through `yetibot-ai-providers`.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use yetibot_ai_providers::{Client, Credential, ProviderSet};
use yetibot_discovery_cache::{Lister, Observation, ProviderListing};

/// One listing per configured provider. The fingerprint changes whenever something that
/// changes the listing's answer changes (base URL, listing endpoint, where the credential
/// comes from); it is a hash, so the cache never holds a key-file path.
#[must_use]
pub fn listings(providers: &ProviderSet) -> Vec<ProviderListing> {
    providers
        .providers()
        .iter()
        .map(|p| {
            let mut hasher = DefaultHasher::new();
            p.base_url().hash(&mut hasher);
            p.capabilities().listing.url().hash(&mut hasher);
            match p.credential() {
                Credential::None => 0u8.hash(&mut hasher),
                Credential::Inline(_) => 1u8.hash(&mut hasher),
                Credential::KeyFile(path) => {
                    2u8.hash(&mut hasher);
                    path.hash(&mut hasher);
                }
            }
            ProviderListing {
                name: p.name().to_owned(),
                fingerprint: format!("{:016x}", hasher.finish()),
            }
        })
        .collect()
}

/// Lists a provider's model IDs with its own configured endpoint and credential, resolved
/// inside the request. Failures carry no detail: the cache only records that one happened. A
/// list that dropped IDs at a bound is reported incomplete, never as the whole catalog.
#[derive(Debug)]
pub struct ProviderLister {
    client: Client,
    providers: ProviderSet,
    /// The last outcome per provider (model count, or `None` after a failure), so that the
    /// log shows changes rather than every 30-second refresh.
    last: Mutex<HashMap<String, Option<usize>>>,
}

impl ProviderLister {
    /// A lister over these providers.
    #[must_use]
    pub fn new(client: Client, providers: ProviderSet) -> Self {
        Self {
            client,
            providers,
            last: Mutex::new(HashMap::new()),
        }
    }
}

impl Lister for ProviderLister {
    async fn list(&self, provider: &str) -> Observation {
        let Some(provider) = self.providers.get(provider) else {
            return Observation::Failed;
        };
        let result = self.client.list_models(provider).await;
        let outcome = result.as_ref().ok().map(|list| list.ids().count());
        let changed = {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            last.insert(provider.name().to_owned(), outcome) != Some(outcome)
        };
        match result {
            Ok(list) => {
                if changed {
                    let count = list.ids().count();
                    tracing::info!(
                        "model catalog of {}: {count} model{}",
                        provider.name(),
                        if count == 1 { "" } else { "s" }
                    );
                }
                if list.truncated {
                    Observation::Incomplete
                } else {
                    Observation::Complete(list.ids().map(str::to_owned).collect())
                }
            }
            Err(error) => {
                if changed {
                    // The category and safe reason only: never a body, header or key.
                    tracing::warn!(
                        "model catalog of {} unavailable: {}",
                        provider.name(),
                        error.user_message()
                    );
                }
                Observation::Failed
            }
        }
    }
}
