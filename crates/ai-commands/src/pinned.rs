//! The providers some commands are pinned to, and what is special about each, as data: the
//! name a command always uses, what it says when no such provider is configured, and
//! whether its interim replies are shown as they come. The xAI key's stand-in Grok provider
//! (its base URL, default model and server-side searches) is defined here too. The command
//! path takes these names and rules from the entries rather than spelling them out.

use yetibot_ai_providers::{Provider, ProviderConfig, ProviderSet};
use yetibot_redaction::Secret;

/// A provider a command is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pinned {
    /// The provider's configured name.
    pub(crate) name: &'static str,
    /// What the command says when no provider of that name (or stand-in) is configured.
    pub(crate) missing: &'static str,
    /// Whether its interim messages (text sent with tool calls) are shown as they come,
    /// where the platform can.
    pub(crate) interim_replies: bool,
}

/// `grok`: the provider named `grok`, or the one the xAI key supplies.
pub(crate) const GROK: Pinned = Pinned {
    name: "grok",
    missing: "grok needs a provider named grok under :yetibot :ai :providers, or an xAI key at :yetibot :xai :key",
    interim_replies: true,
};

/// The name `grok` always uses.
pub const GROK_PROVIDER: &str = GROK.name;
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
pub fn xai_provider(
    key: &Secret,
    base_url: Option<&str>,
) -> Result<Provider, Vec<yetibot_ai_providers::Error>> {
    let config = ProviderConfig {
        name: Some(GROK.name.to_owned()),
        url: Some(base_url.unwrap_or(XAI_BASE_URL).to_owned()),
        key: Some(key.clone()),
        model: Some(XAI_DEFAULT_MODEL.to_owned()),
        api: Some("responses".to_owned()),
        native_tools: Some(vec!["web_search".to_owned(), "x_search".to_owned()]),
        ..ProviderConfig::default()
    };
    let set = ProviderSet::from_config(None, &[config])?;
    set.providers().first().cloned().ok_or_else(|| {
        vec![yetibot_ai_providers::Error::InvalidConfig {
            path: "xai.key".to_owned(),
            reason: "could not be made into a provider".to_owned(),
        }]
    })
}
