//! OpenCode Zen's verified-free rule, which automatic Zen choices follow everywhere (`zen`
//! without a model, `ai default zen ...`, and `ai` prompts routed to a Zen runtime default).
//!
//! A model is chosen in this order: `--model` (a deliberate choice, which may be charged),
//! the provider's configured `:model` (never replaced by a free one), a runtime default on
//! Zen that is still free, then the first free model of the catalog that the toolset's
//! provider/model rules allow. "Free" means the catalog, fetched for this request, states
//! every price of the model and each is exactly zero ([`Pricing::is_free`]). When nothing
//! qualifies the command fails before sending anything: there is no paid fallback.
//!
//! [`Pricing::is_free`]: yetibot_ai_providers::Pricing::is_free

use yetibot_ai_providers::{Billing, ModelInfo, Price, Provider};
use yetibot_conversation::Provenance;
use yetibot_tool_policy::{Denial, RequestContext, Selection};

use crate::cost::CostSource;
use crate::flags;
use crate::request::cost_source;
use crate::services::AiServices;

/// The name of the provider the `zen` command always uses.
pub(crate) const ZEN: &str = "zen";

/// Whether `provider` is OpenCode Zen: the provider the `zen` command uses, or one whose
/// billing is Zen's credits. Automatic choices of a Zen model must be verified free.
pub(crate) fn is_zen(provider: &Provider) -> bool {
    provider.name() == ZEN || provider.capabilities().billing == Billing::ZenCredits
}

/// The cost source of an answer from a model verified free for this request.
pub(crate) fn free_cost_source(provider: &Provider) -> CostSource {
    match cost_source(provider) {
        CostSource::Zen { .. } => CostSource::Zen {
            verified_free: true,
        },
        other => other,
    }
}

/// Checks that `model` is in `provider`'s catalog, fetched now, and verified free.
///
/// # Errors
///
/// A message saying why not (not listed, not free, or the catalog could not be read);
/// nothing was sent to the model.
pub(crate) async fn verify_free(
    services: &AiServices,
    provider: &Provider,
    model: &str,
) -> Result<(), String> {
    let list = services
        .client
        .list_models(provider)
        .await
        .map_err(|error| catalog_failure(provider, &error))?;
    match list.models.iter().find(|m| m.id == model) {
        None => Err(format!(
            "{} does not list model {model} now, so it cannot be verified free; `ai models {}` lists its models",
            provider.name(),
            provider.name()
        )),
        Some(info) if info.is_verified_free() => Ok(()),
        Some(info) => Err(format!(
            "{} model {model} is not verified free now: {}",
            provider.name(),
            why_not_free(info)
        )),
    }
}

/// For an `ai` prompt: when it was routed by the runtime default (no `--provider`,
/// `--model` or pinned provider, and not the configured default) to a Zen provider, checks
/// again that the model is free. Returns whether it was verified free.
///
/// # Errors
///
/// Why the runtime default cannot be used now; nothing was sent.
pub(crate) async fn recheck_runtime_default(
    services: &AiServices,
    options: &flags::Options,
    pinned: Option<&str>,
    route: &yetibot_ai_providers::Route,
    provider: &Provider,
) -> Result<bool, String> {
    let automatic = pinned.is_none() && options.provider.is_none() && options.model.is_none();
    let configured = services
        .providers
        .default_provider()
        .is_some_and(|p| p.name() == route.provider && p.model() == Some(route.model.as_str()));
    if !automatic || configured || !is_zen(provider) {
        return Ok(false);
    }
    verify_free(services, provider, &route.model)
        .await
        .map(|()| true)
        .map_err(|reason| {
            format!("{reason}; the runtime AI default was not used and nothing was sent (`ai default reset` restores the configured default)")
        })
}

/// The route of an `ai` prompt sent to the Zen provider `name` when no model is named or
/// configured anywhere, and whether its model was verified free: the toolset's rules that do
/// not depend on the model, and tool calling for a named toolset, are checked before the
/// catalog (and its credential) is read; then the verified-free choice.
///
/// # Errors
///
/// Why no model can be chosen; nothing was sent.
pub(crate) async fn free_route(
    services: &AiServices,
    options: &flags::Options,
    selection: &Selection<'_>,
    provenance: &Provenance,
    name: &str,
) -> Result<(yetibot_ai_providers::Route, bool), String> {
    let Some(provider) = services.providers.get(name) else {
        return Err(format!("no provider is named {name}"));
    };
    match selection.authorize(&context(provenance, name, "")) {
        Ok(()) | Err(yetibot_tool_policy::Error::Denied(Denial::ProviderModel)) => {}
        Err(error) => return Err(error.to_string()),
    }
    if !options.no_tools
        && options.toolset.is_some()
        && let Err(error) = yetibot_tool_policy::check_tool_calling(provider.tool_calling(), false)
    {
        return Err(error.to_string());
    }
    let choice = choose_model(services, provider, None, selection, provenance).await?;
    Ok((
        yetibot_ai_providers::Route {
            provider: name.to_owned(),
            model: choice.model,
        },
        choice.verified_free,
    ))
}

/// The model a prompt uses, and whether it was verified free for it.
pub(crate) struct Choice {
    pub(crate) model: String,
    pub(crate) verified_free: bool,
}

/// Chooses the model in the documented order (see the module docs). Only the automatic
/// choice reads the catalog.
pub(crate) async fn choose_model(
    services: &AiServices,
    provider: &Provider,
    flag: Option<&str>,
    selection: &Selection<'_>,
    provenance: &Provenance,
) -> Result<Choice, String> {
    let given = |model: &str| Choice {
        model: model.to_owned(),
        verified_free: false,
    };
    if let Some(model) = flag {
        return Ok(given(model));
    }
    if let Some(model) = provider.model() {
        return Ok(given(model));
    }
    let list = services
        .client
        .list_models(provider)
        .await
        .map_err(|error| catalog_failure(provider, &error))?;
    let free: Vec<&str> = list
        .models
        .iter()
        .filter(|m| m.is_verified_free())
        .map(|m| m.id.as_str())
        .collect();
    let allowed = |model: &str| {
        selection
            .authorize(&context(provenance, provider.name(), model))
            .is_ok()
    };
    let runtime = services
        .defaults
        .get()
        .filter(|route| route.provider == provider.name())
        .map(|route| route.model);
    let picked = runtime
        .as_deref()
        .filter(|model| free.contains(model) && allowed(model))
        .or_else(|| free.iter().copied().find(|model| allowed(model)));
    match picked {
        Some(model) => Ok(Choice {
            model: model.to_owned(),
            verified_free: true,
        }),
        None if free.is_empty() => Err(format!(
            "{} lists no model whose prices are all stated and zero right now, so none was chosen and nothing was sent; configure :model for {}, or pass --model <id> (which may be charged)",
            provider.name(),
            provider.name()
        )),
        None => Err(format!(
            "no free {} model is allowed by this toolset's provider/model rules, so nothing was sent",
            provider.name()
        )),
    }
}

pub(crate) fn context(provenance: &Provenance, provider: &str, model: &str) -> RequestContext {
    RequestContext {
        provenance: provenance.clone(),
        provider: provider.to_owned(),
        model: model.to_owned(),
    }
}

pub(crate) fn catalog_failure(provider: &Provider, error: &yetibot_ai_providers::Error) -> String {
    format!(
        "cannot check {}'s current prices: {}; nothing was sent",
        provider.name(),
        error.user_message()
    )
}

/// Why a listed model is not verified free, in words safe to show.
fn why_not_free(model: &ModelInfo) -> &'static str {
    let Some(pricing) = &model.pricing else {
        return "the catalog states no prices for it";
    };
    let prices = [pricing.input, pricing.output]
        .into_iter()
        .chain(pricing.cache.iter().map(|(_, p)| *p));
    let mut missing = false;
    let mut unreadable = false;
    for price in prices {
        missing |= price == Price::Missing;
        unreadable |= price == Price::Unreadable;
    }
    if missing {
        "the catalog does not state its input and output prices"
    } else if unreadable {
        "a price the catalog states for it is not a number"
    } else if !pricing.unknown.is_empty() || pricing.unknown_truncated {
        "the catalog lists a cost for it that this bot does not know"
    } else {
        "the catalog prices it above zero"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yetibot_ai_providers::{Amount, ModelInfo, Pricing};

    fn model(pricing: Option<Pricing>) -> ModelInfo {
        ModelInfo {
            id: "m".into(),
            context_length: None,
            record: None,
            interface: None,
            category: None,
            pricing,
        }
    }

    fn priced(input: Price, output: Price) -> Pricing {
        Pricing {
            input,
            output,
            cache: Vec::new(),
            tiers: Vec::new(),
            unknown: Vec::new(),
            unknown_truncated: false,
        }
    }

    #[test]
    fn each_reason_a_model_is_not_free_is_named() {
        let zero = Price::Exact(Amount::ZERO);
        let paid = Price::Exact(Amount::parse("0.6").expect("amount"));
        assert_eq!(
            why_not_free(&model(None)),
            "the catalog states no prices for it"
        );
        assert_eq!(
            why_not_free(&model(Some(priced(Price::Missing, zero)))),
            "the catalog does not state its input and output prices"
        );
        assert_eq!(
            why_not_free(&model(Some(priced(Price::Unreadable, zero)))),
            "a price the catalog states for it is not a number"
        );
        let mut unknown = priced(zero, zero);
        unknown.unknown.push("reasoning".into());
        assert_eq!(
            why_not_free(&model(Some(unknown))),
            "the catalog lists a cost for it that this bot does not know"
        );
        assert_eq!(
            why_not_free(&model(Some(priced(zero, paid)))),
            "the catalog prices it above zero"
        );
    }
}
