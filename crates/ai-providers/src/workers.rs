//! Cloudflare Workers AI's model endpoint (`POST {api}/accounts/{account}/ai/run/{model}`):
//! one JSON request to a model named by its catalog ID, for the models that are not chat
//! models (Clef's decisions, Clairic's extractions). Chat goes through [`Client::turn`].

use std::path::PathBuf;
use std::time::Duration;

use yetibot_redaction::Secret;

use crate::error::{Error, Result};
use crate::service::{ServiceBody, ServiceCall};
use crate::transport::Client;

/// The name Workers AI requests carry in errors.
pub const WORKERS_AI: &str = "Cloudflare Workers AI";

/// The largest reply read from the model endpoint.
pub const MAX_WORKERS_REPLY_BYTES: usize = 1 << 20;

/// How long the reply's head, and then each piece of its body, may take.
pub const WORKERS_READ_TIMEOUT: Duration = crate::service::SERVICE_READ_TIMEOUT;

/// How long the whole body may take once the head has arrived.
pub const WORKERS_BODY_DEADLINE: Duration = crate::service::SERVICE_BODY_DEADLINE;

pub use crate::capability::DEFAULT_WORKERS_API_URL;

/// A Workers AI account as the model endpoint needs it: the API base, the account ID, the
/// file the token is read from on each request, and an optional AI Gateway.
#[derive(Clone, PartialEq, Eq)]
pub struct WorkersAccount {
    api_url: String,
    account_id: String,
    key_file: PathBuf,
    gateway_id: Option<String>,
}

impl std::fmt::Debug for WorkersAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkersAccount")
            .field("api_url", &self.api_url)
            .field("account_id", &"[redacted]")
            .field("key_file", &"[redacted]")
            .field("gateway_id", &self.gateway_id)
            .finish()
    }
}

impl WorkersAccount {
    /// The account `account_id` at the API base `api_url` (a trailing `/` is ignored),
    /// authorised by the token in `key_file`. The caller has validated these values.
    #[must_use]
    pub fn new(
        api_url: &str,
        account_id: impl Into<String>,
        key_file: impl Into<PathBuf>,
        gateway_id: Option<String>,
    ) -> Self {
        Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
            account_id: account_id.into(),
            key_file: key_file.into(),
            gateway_id,
        }
    }

    /// The URL that runs `model`.
    fn run_url(&self, model: &str) -> String {
        format!(
            "{}/accounts/{}/ai/run/{model}",
            self.api_url, self.account_id
        )
    }
}

impl Client {
    /// The account's token, read from its key file now (the file may be rotated while the
    /// bot runs). Read it before building a request, so that the request can be checked for
    /// it and the reply redacted of it.
    ///
    /// # Errors
    ///
    /// [`Error::CredentialUnavailable`] when the file cannot be used; it names neither the
    /// file nor its content.
    pub async fn workers_token(&self, account: &WorkersAccount) -> Result<Secret> {
        crate::credential::read_key_file(&account.key_file)
            .await
            .ok_or_else(|| Error::CredentialUnavailable {
                provider: WORKERS_AI.to_owned(),
            })
    }

    /// Runs the Workers AI model `model` (a catalog ID such as `@cf/cloudflare/clef`) on
    /// `body` once, authorised by `token` ([`Client::workers_token`]), and returns its
    /// result: the `result` member of Cloudflare's envelope, or the whole reply when it has
    /// none. The reply is bounded to [`MAX_WORKERS_REPLY_BYTES`], each wait to
    /// [`WORKERS_READ_TIMEOUT`] and the whole body to [`WORKERS_BODY_DEADLINE`]. No retry, no redirect. Errors carry no body, not even the
    /// one-line account other status errors may add, and never the token.
    ///
    /// # Errors
    ///
    /// The transport's categories; [`Error::Malformed`] for a reply that is not a JSON
    /// object; [`Error::ProviderFailed`] when the envelope says `success: false`.
    pub async fn run_workers_model(
        &self,
        account: &WorkersAccount,
        token: &Secret,
        model: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value> {
        let url = account.run_url(model);
        let bytes = serde_json::to_vec(body).map_err(|_| Error::Setup {
            provider: WORKERS_AI.to_owned(),
            reason: "the request could not be written",
        })?;
        let call = ServiceCall::post(
            WORKERS_AI,
            &url,
            ServiceBody::Json(bytes),
            MAX_WORKERS_REPLY_BYTES,
        )
        .bearer(token)
        .gateway(account.gateway_id.as_deref());
        let reply = self.call_service(call).await?;
        unwrap_envelope(&reply)
    }
}

/// The model's result from Cloudflare's `{"result", "success", "errors"}` envelope.
fn unwrap_envelope(reply: &[u8]) -> Result<serde_json::Value> {
    let malformed = |reason| Error::Malformed {
        provider: WORKERS_AI.to_owned(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(reply).map_err(|_| malformed("the reply is not JSON"))?;
    let serde_json::Value::Object(mut object) = value else {
        return Err(malformed("the reply is not a JSON object"));
    };
    if object.get("success") == Some(&serde_json::Value::Bool(false)) {
        return Err(Error::ProviderFailed {
            provider: WORKERS_AI.to_owned(),
            reason: "the model reported a failure",
            code: None,
        });
    }
    match object.remove("result") {
        Some(result @ serde_json::Value::Object(_)) => Ok(result),
        Some(_) => Err(malformed("the reply's result is not a JSON object")),
        None => Ok(serde_json::Value::Object(object)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_unwrapped_and_failures_are_reported() {
        let result = unwrap_envelope(br#"{"result":{"answers":{}},"success":true}"#);
        assert_eq!(result.ok(), Some(serde_json::json!({"answers": {}})));
        let bare = unwrap_envelope(br#"{"answers":{}}"#);
        assert_eq!(bare.ok(), Some(serde_json::json!({"answers": {}})));
        assert!(matches!(
            unwrap_envelope(br#"{"success":false,"errors":[{"message":"secret"}]}"#),
            Err(Error::ProviderFailed { .. })
        ));
        for bad in [&b"[]"[..], b"nope", br#"{"result":3}"#] {
            assert!(matches!(unwrap_envelope(bad), Err(Error::Malformed { .. })));
        }
    }

    #[test]
    fn the_run_url_is_below_the_api_base() {
        let account = WorkersAccount::new("http://127.0.0.1:9/v4/", "abc", "/k", None);
        assert_eq!(
            account.run_url("@cf/cloudflare/clef"),
            "http://127.0.0.1:9/v4/accounts/abc/ai/run/@cf/cloudflare/clef"
        );
        assert!(!format!("{account:?}").contains("abc"));
    }
}
