//! The public operations of [`Client`]: one model turn, model listing and the doctor probe.

use serde_json::json;
use yetibot_conversation::{Message, ToolDefinition, ToolId};
use yetibot_redaction::Secrets;

use crate::config::{Provider, ProviderSet, WireApi};
use crate::credential::{Purpose, bearer};
use crate::error::{Error, Result};
use crate::models::{self, ModelList};
use crate::transport::Client;
use crate::turn::{Turn, TurnEvent, TurnRequest};
use crate::{chat, responses};

/// The outcome of [`Client::probe`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    /// Whether the model answered the probe with a real, structured tool call.
    pub tool_call: bool,
    /// The completed turn.
    pub turn: Turn,
}

/// The function name the doctor probe's tool is offered under: the wire form of the host's
/// own tool `yetibot/report_probe` (see [`probe_tool`]).
pub const PROBE_TOOL: &str = "yetibot__report_probe";

/// The output-token limit of the doctor probe's one request ([`Client::probe`]): enough for
/// a tool call with a one-word argument, and small enough that the probe costs next to
/// nothing on a paid provider.
pub const PROBE_MAX_OUTPUT_TOKENS: u32 = 256;

/// The function tool the doctor probe offers, the host's own `yetibot/report_probe`: it takes
/// one string argument, `status`.
#[must_use]
pub fn probe_tool() -> ToolDefinition {
    ToolDefinition::new(
        ToolId::native("report_probe"),
        "Reports that tool calling works.",
        json!({
            "type": "object",
            "properties": { "status": { "type": "string" } },
            "required": ["status"],
        }),
    )
}

impl Client {
    /// Runs one model turn on `provider`, calling `on_event` as events arrive.
    ///
    /// The request is sent once. Tool calls are returned only from a finished response; a
    /// disconnect, a provider error or a malformed stream fails the turn.
    ///
    /// # Errors
    ///
    /// [`Error::Setup`] before sending when no model is given or configured, when the key is
    /// a placeholder, or when tools are requested from a provider with `:tool-calling false`;
    /// [`Error::CredentialUnavailable`] when the key file is unusable; otherwise a transport,
    /// status or stream error (see [`Error::category`]).
    pub async fn turn(
        &self,
        provider: &Provider,
        request: &TurnRequest,
        on_event: &mut (dyn FnMut(TurnEvent) + Send),
    ) -> Result<Turn> {
        let setup = |reason| Error::Setup {
            provider: provider.name().to_owned(),
            reason,
        };
        let model = request
            .model
            .as_deref()
            .or(provider.model())
            .ok_or_else(|| setup("no model: configure :model or pass one"))?;
        if request.tools_enabled && !request.tools.is_empty() && !provider.tool_calling() {
            return Err(setup("tool calling is disabled for this provider"));
        }
        self.within_ceiling(provider, async {
            let token = bearer(provider, Purpose::Prompt).await?;
            match provider.api() {
                WireApi::ChatCompletions => {
                    let body = chat::body(provider, model, request);
                    chat::turn(self, provider, token.as_ref(), body, on_event).await
                }
                WireApi::Responses => {
                    let body = responses::body(provider, model, request);
                    responses::turn(self, provider, token.as_ref(), body, on_event).await
                }
            }
        })
        .await
    }

    /// The credentials to redact from everything one request to `provider` produces (the
    /// model's answer, tool results, progress): this client's set (see
    /// [`Client::with_secrets`]) plus the provider's own key, read now from its key file
    /// when it has one, since a key-file token is in no configured set. Call it once per
    /// request; the shared set is not copied.
    ///
    /// # Errors
    ///
    /// [`Error::CredentialUnavailable`] when the key file is unusable.
    pub async fn request_secrets(&self, provider: &Provider) -> Result<Secrets> {
        let token = bearer(provider, Purpose::Listing).await?;
        self.secrets()
            .with_extra(token.as_ref())
            .map_err(|_| Error::CredentialUnavailable {
                provider: provider.name().to_owned(),
            })
    }

    /// Lists the models of one provider, using its listing kind.
    ///
    /// # Errors
    ///
    /// [`Error::CredentialUnavailable`] when the key file is unusable; otherwise a transport,
    /// status or format error.
    pub async fn list_models(&self, provider: &Provider) -> Result<ModelList> {
        self.within_ceiling(provider, async {
            let token = bearer(provider, Purpose::Listing).await?;
            models::list(self, provider, token.as_ref()).await
        })
        .await
    }

    /// Lists every provider's models concurrently: one result per provider, in
    /// configuration order, so one failure never hides the others.
    pub async fn list_all(&self, providers: &ProviderSet) -> Vec<(String, Result<ModelList>)> {
        let jobs = providers
            .providers()
            .iter()
            .map(|p| async move { (p.name().to_owned(), self.list_models(p).await) });
        futures_util::future::join_all(jobs).await
    }

    /// Context-window detection from the provider's model listing: the `context_length`
    /// or `max_model_len` it reports for `model` (vLLM, many gateways), or `None` when the
    /// listing does not say.
    ///
    /// # Errors
    ///
    /// As [`Client::list_models`].
    pub async fn context_window(&self, provider: &Provider, model: &str) -> Result<Option<u64>> {
        Ok(self.list_models(provider).await?.context_window(model))
    }

    /// Context-window detection through Ollama's native API. The window of a loaded model
    /// comes from `GET {origin}/api/ps` (what the server actually runs with); otherwise
    /// `POST {origin}/api/show` for `model` gives the configured `num_ctx` parameter, else the
    /// model's trained `*.context_length`. Only call this for a provider known to be Ollama;
    /// it sends at most two metadata requests and no prompt.
    ///
    /// # Errors
    ///
    /// As [`Client::list_models`].
    pub async fn ollama_context_window(
        &self,
        provider: &Provider,
        model: &str,
    ) -> Result<Option<u64>> {
        let origin = url::Url::parse(provider.base_url())
            .map(|u| u.origin().ascii_serialization())
            .map_err(|_| Error::Setup {
                provider: provider.name().to_owned(),
                reason: "the base URL has no origin",
            })?;
        self.within_ceiling(provider, self.ollama_window(provider, &origin, model))
            .await
    }

    /// The body of [`Client::ollama_context_window`], under its caller's ceiling.
    async fn ollama_window(
        &self,
        provider: &Provider,
        origin: &str,
        model: &str,
    ) -> Result<Option<u64>> {
        let token = bearer(provider, Purpose::Listing).await?;
        if let Some(running) = self
            .ollama_running_window(provider, origin, token.as_ref(), model)
            .await?
        {
            return Ok(Some(running));
        }
        let body = serde_json::to_vec(&json!({ "model": model })).unwrap_or_default();
        let value = self
            .ollama_json(
                provider,
                http::Method::POST,
                &format!("{origin}/api/show"),
                token.as_ref(),
                Some(body),
                "model details",
            )
            .await?;
        let configured = value
            .get("parameters")
            .and_then(serde_json::Value::as_str)
            .and_then(|p| {
                p.lines().find_map(|line| {
                    let mut words = line.split_whitespace();
                    (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok())?
                })
            });
        let trained = value
            .get("model_info")
            .and_then(serde_json::Value::as_object)
            .and_then(|info| {
                info.iter()
                    .find(|(k, _)| k.ends_with(".context_length"))
                    .and_then(|(_, v)| v.as_u64())
            });
        Ok(configured.or(trained))
    }

    /// The context window Ollama's `/api/ps` reports for `model` while it is loaded. A model
    /// named without a tag matches its `:latest` entry.
    async fn ollama_running_window(
        &self,
        provider: &Provider,
        origin: &str,
        token: Option<&yetibot_redaction::Secret>,
        model: &str,
    ) -> Result<Option<u64>> {
        let value = self
            .ollama_json(
                provider,
                http::Method::GET,
                &format!("{origin}/api/ps"),
                token,
                None,
                "running models",
            )
            .await?;
        let tagged = if model.contains(':') {
            model.to_owned()
        } else {
            format!("{model}:latest")
        };
        Ok(value
            .get("models")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .find(|m| {
                ["name", "model"].iter().any(|k| {
                    m.get(*k)
                        .and_then(serde_json::Value::as_str)
                        .is_some_and(|n| n == model || n == tagged)
                })
            })
            .and_then(|m| m.get("context_length"))
            .and_then(serde_json::Value::as_u64))
    }

    /// One metadata request to Ollama's native API, its JSON body read under the listing
    /// bound. `what` names the body in errors.
    async fn ollama_json(
        &self,
        provider: &Provider,
        method: http::Method,
        url: &str,
        token: Option<&yetibot_redaction::Secret>,
        body: Option<Vec<u8>>,
        what: &'static str,
    ) -> Result<serde_json::Value> {
        let response = self
            .send(
                provider,
                method,
                url,
                token,
                body.map(crate::transport::Payload::json),
                "application/json",
            )
            .await?;
        let bytes = self
            .read_bounded(
                provider,
                response.into_body(),
                self.options().max_listing_bytes,
                what,
            )
            .await?;
        serde_json::from_slice(&bytes)
            .map_err(|_| crate::chat::malformed(provider, "the reply is not JSON"))
    }

    /// Reads one public document that is not a provider's API, such as a published release
    /// feed: one `GET` without any credential, under the client's connect and read
    /// deadlines and its whole-operation ceiling, a redirect not followed, at most `limit`
    /// bytes. `name` stands for the document's host in errors, which never quote the URL
    /// or the body.
    ///
    /// # Errors
    ///
    /// [`Error::Setup`] for a URL that cannot be requested, and otherwise the transport's
    /// categories ([`Category::Unreachable`](crate::Category::Unreachable),
    /// [`Category::Timeout`](crate::Category::Timeout), a redirect or another status,
    /// [`Category::TooLarge`](crate::Category::TooLarge)).
    pub async fn fetch_document(&self, name: &str, url: &str, limit: usize) -> Result<Vec<u8>> {
        let peer = crate::transport::Peer::named(name);
        self.within_ceiling(peer, async {
            let response = self
                .send(peer, http::Method::GET, url, None, None, "application/json")
                .await?;
            let bytes = self
                .read_bounded(peer, response.into_body(), limit, "document")
                .await?;
            Ok(bytes.to_vec())
        })
        .await
    }

    /// The doctor probe: one small request (at most [`PROBE_MAX_OUTPUT_TOKENS`] output
    /// tokens) offering a single function tool, reporting whether a real, structured tool
    /// call came back. Text that merely looks like a call does not count.
    ///
    /// # Errors
    ///
    /// As [`Client::turn`].
    pub async fn probe(&self, provider: &Provider, model: Option<&str>) -> Result<ProbeReport> {
        let request = TurnRequest {
            model: model.map(str::to_owned),
            messages: vec![Message::User(format!(
                "Call the {PROBE_TOOL} function with status \"ok\". Do not answer in text."
            ))],
            tools: vec![probe_tool()],
            tools_enabled: true,
            max_output_tokens: Some(PROBE_MAX_OUTPUT_TOKENS),
            // Sent the way prompts are: a server that refuses streamed requests fails here,
            // before any user's prompt does (`:stream false` is the cure).
            stream: provider.streams(),
        };
        let turn = self.turn(provider, &request, &mut |_| {}).await?;
        Ok(ProbeReport {
            tool_call: turn.calls.iter().any(|c| c.function_name == PROBE_TOOL),
            turn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_tool_is_offered_under_the_probe_name() {
        // The name is derived from the tool's ID like every other tool's; the constant that
        // callers match calls against must be that derivation.
        assert_eq!(probe_tool().function_name(), PROBE_TOOL);
    }
}
