//! Choosing the provider and model of one request: explicit provider, pinned provider,
//! exact-ID ownership from the discovery cache, runtime default, configured default.

use std::sync::{Arc, Mutex, MutexGuard};

use yetibot_discovery_cache::{Ownership, Uncertainty};

use crate::config::ProviderSet;

/// The provider and model a request will use. It is an owned value taken when the request is
/// prepared, so a later change of the runtime default does not alter it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The provider's name.
    pub provider: String,
    /// The exact model ID.
    pub model: String,
}

/// What a request asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteRequest<'a> {
    /// `--provider NAME`: authoritative, never consults catalogs.
    pub provider: Option<&'a str>,
    /// The provider a command pins (`grok` pins `grok`); also authoritative.
    pub pinned: Option<&'a str>,
    /// `--model ID`.
    pub model: Option<&'a str>,
}

/// Why a request cannot be routed. Every message tells the user what to do; none sends a
/// request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No provider is configured.
    #[error("no AI provider is configured; add one under :yetibot :ai :providers")]
    NoProviders,
    /// The named provider is not configured.
    #[error("no provider is named {0}; `ai providers` lists them")]
    UnknownProvider(String),
    /// `--provider` was given to a command that pins its own provider.
    #[error("this command always uses provider {0}; use `ai --provider NAME` for another one")]
    PinnedProvider(String),
    /// Neither the request nor any default names a model.
    #[error("provider {0} has no default model; add --model ID (see `ai models {0}`)")]
    NoModel(String),
    /// Several providers advertise the model.
    #[error("model {model} is offered by {}; add --provider NAME", providers.join(", "))]
    Collision {
        /// The model ID.
        model: String,
        /// The providers that advertise it.
        providers: Vec<String>,
    },
    /// No provider advertises the model.
    #[error(
        "no provider lists model {0}; check `ai models`, or add --provider NAME to use it anyway"
    )]
    NotAdvertised(String),
    /// The catalogs cannot settle the owner.
    #[error("cannot tell which provider offers model {model}: {}; add --provider NAME", reason.user_message())]
    Uncertain {
        /// The model ID.
        model: String,
        /// Why.
        reason: Uncertainty,
    },
}

/// Resolves a request in the documented order:
///
/// 1. an explicit `--provider`, or a command's pinned provider: authoritative, with
///    `--model` or that provider's configured model;
/// 2. `--model` alone: with one configured provider it passes straight through; with several
///    it routes only to the `Unique` owner reported by `ownership` (which requires fresh,
///    complete catalogs of every provider);
/// 3. neither: the runtime default if set, else the configured default provider and its
///    model.
///
/// # Errors
///
/// A [`RouteError`] whenever the choice is not certain; no request should be sent then.
pub fn route(
    providers: &ProviderSet,
    defaults: &RuntimeDefaults,
    ownership: impl FnOnce(&str) -> Ownership,
    request: RouteRequest<'_>,
) -> Result<Route, RouteError> {
    if providers.is_empty() {
        return Err(RouteError::NoProviders);
    }
    let authoritative = match (request.pinned, request.provider) {
        (Some(pinned), Some(_)) => return Err(RouteError::PinnedProvider(pinned.to_owned())),
        (Some(name), None) | (None, Some(name)) => Some(name),
        (None, None) => None,
    };
    if let Some(name) = authoritative {
        let provider = providers
            .get(name)
            .ok_or_else(|| RouteError::UnknownProvider(name.to_owned()))?;
        let model = request
            .model
            .or(provider.model())
            .ok_or_else(|| RouteError::NoModel(name.to_owned()))?;
        return Ok(Route {
            provider: name.to_owned(),
            model: model.to_owned(),
        });
    }
    if let Some(model) = request.model {
        if let [only] = providers.providers() {
            return Ok(Route {
                provider: only.name().to_owned(),
                model: model.to_owned(),
            });
        }
        return match ownership(model) {
            Ownership::Unique(provider) if providers.get(&provider).is_some() => Ok(Route {
                provider,
                model: model.to_owned(),
            }),
            Ownership::Unique(_) => Err(RouteError::Uncertain {
                model: model.to_owned(),
                reason: Uncertainty::IncompleteSet,
            }),
            Ownership::Collision(list) => Err(RouteError::Collision {
                model: model.to_owned(),
                providers: list,
            }),
            Ownership::NotAdvertised => Err(RouteError::NotAdvertised(model.to_owned())),
            Ownership::Uncertain(reason) => Err(RouteError::Uncertain {
                model: model.to_owned(),
                reason,
            }),
        };
    }
    if let Some(route) = defaults.get() {
        return Ok(route);
    }
    let provider = providers
        .default_provider()
        .ok_or(RouteError::NoProviders)?;
    let model = provider
        .model()
        .ok_or_else(|| RouteError::NoModel(provider.name().to_owned()))?;
    Ok(Route {
        provider: provider.name().to_owned(),
        model: model.to_owned(),
    })
}

/// The one global provider/model choice that admins may set at run time. Every caller shares
/// it; reads and writes replace the pair as a whole. It lives in memory only: a restart
/// clears it. Who may change it is decided by the command layer, not here.
#[derive(Debug, Clone, Default)]
pub struct RuntimeDefaults {
    choice: Arc<Mutex<Option<Route>>>,
}

/// Why a runtime default was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefaultError {
    /// The provider is not configured.
    #[error("no provider is named {0}; `ai providers` lists them")]
    UnknownProvider(String),
    /// The model ID is blank or contains whitespace or control characters.
    #[error("the model must be an exact model ID without spaces")]
    InvalidModel,
}

impl RuntimeDefaults {
    /// The current choice, if one is set.
    #[must_use]
    pub fn get(&self) -> Option<Route> {
        self.lock().clone()
    }

    /// Sets the choice. The provider must be configured; the model is an exact ID and is not
    /// checked with an inference request.
    ///
    /// # Errors
    ///
    /// [`DefaultError`] when the provider is unknown or the model ID is malformed; the
    /// previous choice stays.
    pub fn set(
        &self,
        providers: &ProviderSet,
        provider: &str,
        model: &str,
    ) -> Result<(), DefaultError> {
        if providers.get(provider).is_none() {
            return Err(DefaultError::UnknownProvider(provider.to_owned()));
        }
        if model.is_empty() || model.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(DefaultError::InvalidModel);
        }
        *self.lock() = Some(Route {
            provider: provider.to_owned(),
            model: model.to_owned(),
        });
        Ok(())
    }

    /// Clears the choice, restoring the configured defaults.
    pub fn reset(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> MutexGuard<'_, Option<Route>> {
        // The guarded value is a plain pair, valid even after a panic elsewhere.
        self.choice
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;

    fn providers(list: &[(&str, Option<&str>)], default: Option<&str>) -> ProviderSet {
        let configs: Vec<ProviderConfig> = list
            .iter()
            .map(|(name, model)| ProviderConfig {
                name: Some((*name).into()),
                url: Some(format!("https://{name}.example/v1")),
                model: model.map(Into::into),
                ..ProviderConfig::default()
            })
            .collect();
        ProviderSet::from_config(default, &configs).expect("valid providers")
    }

    fn route_of(
        set: &ProviderSet,
        defaults: &RuntimeDefaults,
        owner: Ownership,
        request: RouteRequest<'_>,
    ) -> Result<(String, String), RouteError> {
        let mut consulted = false;
        let result = route(
            set,
            defaults,
            |_| {
                consulted = true;
                owner
            },
            request,
        );
        // Explicit and pinned providers never consult the catalogs.
        if request.provider.is_some() || request.pinned.is_some() {
            assert!(!consulted);
        }
        result.map(|r| (r.provider, r.model))
    }

    fn ok(p: &str, m: &str) -> Result<(String, String), RouteError> {
        Ok((p.to_owned(), m.to_owned()))
    }

    fn req<'a>(
        provider: Option<&'a str>,
        pinned: Option<&'a str>,
        model: Option<&'a str>,
    ) -> RouteRequest<'a> {
        RouteRequest {
            provider,
            pinned,
            model,
        }
    }

    const COLD: Ownership = Ownership::Uncertain(Uncertainty::ColdStart);

    #[test]
    fn explicit_and_pinned_providers_are_authoritative() {
        let set = providers(
            &[
                ("openai", Some("gpt-4o-mini")),
                ("grok", Some("grok-4.7")),
                ("local", None),
            ],
            None,
        );
        let d = RuntimeDefaults::default();
        assert_eq!(
            route_of(&set, &d, COLD, req(Some("grok"), None, None)),
            ok("grok", "grok-4.7")
        );
        assert_eq!(
            route_of(&set, &d, COLD, req(Some("local"), None, Some("llama3.2"))),
            ok("local", "llama3.2")
        );
        assert_eq!(
            route_of(&set, &d, COLD, req(None, Some("grok"), Some("grok-5"))),
            ok("grok", "grok-5")
        );
        assert_eq!(
            route_of(&set, &d, COLD, req(Some("local"), None, None)),
            Err(RouteError::NoModel("local".into()))
        );
        assert_eq!(
            route_of(&set, &d, COLD, req(Some("nope"), None, None)),
            Err(RouteError::UnknownProvider("nope".into()))
        );
        assert_eq!(
            route_of(&set, &d, COLD, req(Some("openai"), Some("grok"), None)),
            Err(RouteError::PinnedProvider("grok".into()))
        );
        // A runtime default does not redirect pinned commands.
        d.set(&set, "openai", "gpt-5").expect("set");
        assert_eq!(
            route_of(&set, &d, COLD, req(None, Some("grok"), None)),
            ok("grok", "grok-4.7")
        );
    }

    #[test]
    fn a_model_alone_routes_only_to_a_unique_owner() {
        let set = providers(&[("a", Some("m1")), ("b", None), ("c", None)], None);
        let d = RuntimeDefaults::default();
        let model = Some("llama3.2");
        assert_eq!(
            route_of(
                &set,
                &d,
                Ownership::Unique("b".into()),
                req(None, None, model)
            ),
            ok("b", "llama3.2")
        );
        assert_eq!(
            route_of(
                &set,
                &d,
                Ownership::Collision(vec!["a".into(), "b".into()]),
                req(None, None, model)
            ),
            Err(RouteError::Collision {
                model: "llama3.2".into(),
                providers: vec!["a".into(), "b".into()]
            })
        );
        assert_eq!(
            route_of(
                &set,
                &d,
                Ownership::Collision(vec!["a".into(), "b".into(), "c".into()]),
                req(None, None, model)
            )
            .map_err(|e| e.to_string()),
            Err("model llama3.2 is offered by a, b, c; add --provider NAME".into())
        );
        assert_eq!(
            route_of(&set, &d, Ownership::NotAdvertised, req(None, None, model)),
            Err(RouteError::NotAdvertised("llama3.2".into()))
        );
        for reason in [
            Uncertainty::ColdStart,
            Uncertainty::Stale,
            Uncertainty::Failed,
            Uncertainty::OverLimit,
            Uncertainty::IncompleteSet,
        ] {
            let got = route_of(
                &set,
                &d,
                Ownership::Uncertain(reason),
                req(None, None, model),
            );
            assert_eq!(
                got,
                Err(RouteError::Uncertain {
                    model: "llama3.2".into(),
                    reason
                })
            );
            let text = got.map_err(|e| e.to_string()).unwrap_err();
            assert!(text.ends_with("add --provider NAME"), "{text}");
        }
        // An owner that the current configuration does not know (a change mid-flight) is uncertain.
        assert!(matches!(
            route_of(
                &set,
                &d,
                Ownership::Unique("gone".into()),
                req(None, None, model)
            ),
            Err(RouteError::Uncertain {
                reason: Uncertainty::IncompleteSet,
                ..
            })
        ));
        // The runtime default never overrides an explicit --model.
        d.set(&set, "a", "m9").expect("set");
        assert_eq!(
            route_of(
                &set,
                &d,
                Ownership::Unique("b".into()),
                req(None, None, model)
            ),
            ok("b", "llama3.2")
        );
    }

    #[test]
    fn with_one_provider_the_model_passes_through() {
        let set = providers(&[("local", None)], None);
        let d = RuntimeDefaults::default();
        let mut consulted = false;
        let got = route(
            &set,
            &d,
            |_| {
                consulted = true;
                COLD
            },
            req(None, None, Some("anything")),
        );
        assert_eq!(got.map(|r| (r.provider, r.model)), ok("local", "anything"));
        assert!(!consulted, "a single provider needs no catalog");
    }

    #[test]
    fn without_a_model_defaults_apply_in_order() {
        let set = providers(
            &[("a", Some("m1")), ("b", Some("m2")), ("c", None)],
            Some("b"),
        );
        let d = RuntimeDefaults::default();
        assert_eq!(
            route_of(&set, &d, COLD, req(None, None, None)),
            ok("b", "m2")
        );
        d.set(&set, "c", "exact-id").expect("set");
        assert_eq!(
            route_of(&set, &d, COLD, req(None, None, None)),
            ok("c", "exact-id")
        );
        d.reset();
        assert_eq!(
            route_of(&set, &d, COLD, req(None, None, None)),
            ok("b", "m2")
        );
        let no_model = providers(&[("x", None), ("y", Some("m"))], None);
        assert_eq!(
            route_of(&no_model, &d, COLD, req(None, None, None)),
            Err(RouteError::NoModel("x".into()))
        );
        let none = ProviderSet::default();
        assert_eq!(
            route_of(&none, &d, COLD, req(None, None, Some("m"))),
            Err(RouteError::NoProviders)
        );
    }

    #[test]
    fn runtime_defaults_are_checked_shared_and_pinned_at_preparation() {
        let set = providers(&[("a", Some("m1")), ("b", None)], None);
        let d = RuntimeDefaults::default();
        assert_eq!(
            d.set(&set, "nope", "m"),
            Err(DefaultError::UnknownProvider("nope".into()))
        );
        assert_eq!(
            d.set(&set, "a", "two words"),
            Err(DefaultError::InvalidModel)
        );
        assert_eq!(d.set(&set, "a", ""), Err(DefaultError::InvalidModel));
        assert_eq!(d.get(), None, "a refused change keeps the previous choice");
        let shared = d.clone();
        shared.set(&set, "b", "m7").expect("set");
        let prepared = route(&set, &d, |_| COLD, req(None, None, None)).expect("route");
        d.set(&set, "a", "m8").expect("set");
        assert_eq!(
            prepared,
            Route {
                provider: "b".into(),
                model: "m7".into()
            },
            "a prepared request keeps its choice"
        );
        assert_eq!(d.get().map(|r| r.model).as_deref(), Some("m8"));
    }
}
