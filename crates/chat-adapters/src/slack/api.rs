//! The Slack Web API calls the adapter makes, through slack-morphism's client: JSON in and
//! out, each call under a deadline, a `429` waited out as `Retry-After` says and sent again
//! (Slack did not run the call), and nothing else ever resent.
//!
//! A call whose outcome is unknown (the connection failed, the deadline passed, a `5xx`)
//! is reported as such and never repeated: a second `chat.postMessage` could post twice.
//! Errors keep Slack's short error code and, for `missing_scope`, the scope it names; they
//! never keep a response body or a header, so no token or message text can travel in one.

use std::sync::Arc;
use std::time::Duration;

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::Value;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

/// The connector every Slack client of the adapter uses.
pub(crate) type Connector = SlackClientHyperConnector<HttpsConnector<HttpConnector>>;

/// How calls are paced and bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiBounds {
    /// How long one HTTP call may take, answer included.
    pub call_timeout: Duration,
    /// How many times a call refused with `429` is sent again.
    pub rate_limit_retries: u32,
    /// The longest `Retry-After` waited out; a longer one fails the call.
    pub max_retry_after: Duration,
}

impl Default for ApiBounds {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(20),
            rate_limit_retries: 3,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApiError {
    /// Slack answered `ok: false` with this error code (`channel_not_found`, ...); for
    /// `missing_scope`, `needed` is the scope Slack asked for when it named one.
    Refused {
        code: String,
        needed: Option<String>,
    },
    /// Slack kept refusing with `429`.
    RateLimited,
    /// The outcome is unknown: no answer, a timeout, a server error or an unreadable reply.
    Unconfirmed(&'static str),
}

impl ApiError {
    pub(crate) fn code(&self) -> Option<&str> {
        match self {
            Self::Refused { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// The host Slack serves private files from.
pub(crate) const SLACK_FILE_HOST: &str = "files.slack.com";

/// The Web API with the bot token.
#[derive(Clone)]
pub(crate) struct Api {
    client: Arc<SlackClient<Connector>>,
    token: SlackApiToken,
    /// The same token, for Slack's file host only ([`Api::file_token`]).
    secret: yetibot_redaction::Secret,
    bounds: ApiBounds,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("bounds", &self.bounds)
            .finish_non_exhaustive()
    }
}

/// A client for `api_url` (HTTPS, or plain HTTP when the URL says so, which configuration
/// allows only for loopback hosts), with `ring` as the TLS provider.
///
/// # Errors
///
/// When the TLS configuration cannot be built (a build without TLS 1.2 and 1.3).
pub(crate) fn client(api_url: &str) -> Result<Arc<SlackClient<Connector>>, &'static str> {
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
        .map_err(|_| "the TLS configuration for Slack could not be built")?;
    let builder = if api_url.starts_with("http://") {
        builder.https_or_http()
    } else {
        builder.https_only()
    };
    let connector = builder.enable_http1().enable_http2().build();
    Ok(Arc::new(SlackClient::new(
        SlackClientHyperConnector::with_connector(connector).with_slack_api_url(api_url),
    )))
}

/// Whether a Slack code says the message (or file) is already gone.
pub(crate) fn is_gone(error: &ApiError) -> bool {
    matches!(
        error.code(),
        Some("message_not_found" | "file_not_found" | "file_deleted" | "thread_not_found")
    )
}

impl Api {
    pub(crate) fn new(
        client: Arc<SlackClient<Connector>>,
        token: &yetibot_redaction::Secret,
        bounds: ApiBounds,
    ) -> Self {
        Self {
            client,
            token: SlackApiToken::new(SlackApiTokenValue(token.expose().to_owned())),
            secret: token.clone(),
            bounds,
        }
    }

    /// The bot token when `url` is a private file URL on Slack's own file host
    /// (`https://files.slack.com/...`, nothing else: no other host, scheme or port), so a
    /// file shared with a command can be fetched and the token never reaches another host.
    pub(crate) fn file_token(&self, url: &str) -> Option<yetibot_redaction::Secret> {
        let parsed = url::Url::parse(url).ok()?;
        let slack = parsed.scheme() == "https"
            && parsed.host_str() == Some(SLACK_FILE_HOST)
            && parsed.port().is_none()
            && parsed.username().is_empty()
            && parsed.password().is_none();
        slack.then(|| self.secret.clone())
    }

    /// `POST {api}/{method}` with a JSON body.
    pub(crate) async fn post(&self, method: &str, body: &Value) -> Result<Value, ApiError> {
        self.with_retries(|| async {
            let session = self.client.open_session(&self.token);
            session
                .http_session_api
                .http_post::<Value, Value>(method, body, None)
                .await
        })
        .await
    }

    /// `GET {api}/{method}?params`.
    pub(crate) async fn get(
        &self,
        method: &str,
        params: &[(&str, &str)],
    ) -> Result<Value, ApiError> {
        let params: Vec<(&str, Option<&str>)> =
            params.iter().map(|(k, v)| (*k, Some(*v))).collect();
        self.with_retries(|| async {
            let session = self.client.open_session(&self.token);
            session
                .http_session_api
                .http_get::<Value, _, &str>(method, &params, None)
                .await
        })
        .await
    }

    /// Sends a file's bytes to the upload URL Slack handed out.
    pub(crate) async fn upload(&self, url: &str, content: &[u8]) -> Result<(), ApiError> {
        let Ok(url) = url::Url::parse(url) else {
            return Err(ApiError::Unconfirmed(
                "Slack returned an unusable upload address",
            ));
        };
        self.with_retries(|| async {
            let session = self.client.open_session(&self.token);
            session
                .http_session_api
                .http_post_uri_binary::<Value>(
                    url.clone(),
                    "text/markdown; charset=utf-8".to_owned(),
                    content,
                    None,
                )
                .await
        })
        .await
        .map(|_| ())
    }

    async fn with_retries<F, Fut>(&self, call: F) -> Result<Value, ApiError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ClientResult<Value>>,
    {
        let mut retries = 0;
        loop {
            let Ok(outcome) = tokio::time::timeout(self.bounds.call_timeout, call()).await else {
                return Err(ApiError::Unconfirmed("Slack did not answer in time"));
            };
            match outcome {
                Ok(value) => return Ok(value),
                Err(SlackClientError::RateLimitError(limit)) => {
                    // A 429 means Slack did not run the call, so sending it again after the
                    // wait it asked for cannot repeat anything.
                    let wait = limit.retry_after.unwrap_or(Duration::from_secs(1));
                    if retries >= self.bounds.rate_limit_retries
                        || wait > self.bounds.max_retry_after
                    {
                        return Err(ApiError::RateLimited);
                    }
                    retries += 1;
                    tracing::info!(
                        wait_seconds = wait.as_secs(),
                        "Slack is rate limiting the bot; waiting as asked"
                    );
                    tokio::time::sleep(wait).await;
                }
                Err(SlackClientError::ApiError(error)) => {
                    let needed = (error.code == "missing_scope")
                        .then(|| needed_scope(error.http_response_body.as_deref()))
                        .flatten();
                    return Err(ApiError::Refused {
                        code: short_code(&error.code),
                        needed,
                    });
                }
                Err(SlackClientError::HttpError(error)) if error.status_code.is_client_error() => {
                    return Err(ApiError::Refused {
                        code: format!("http_{}", error.status_code.as_u16()),
                        needed: None,
                    });
                }
                Err(SlackClientError::HttpError(_)) => {
                    return Err(ApiError::Unconfirmed("Slack answered with a server error"));
                }
                Err(SlackClientError::ProtocolError(_)) => {
                    return Err(ApiError::Unconfirmed("Slack's answer could not be read"));
                }
                Err(_) => return Err(ApiError::Unconfirmed("Slack could not be reached")),
            }
        }
    }
}

/// Slack's error codes are short identifiers; anything else is not kept.
fn short_code(code: &str) -> String {
    if code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
    {
        code.to_owned()
    } else {
        "unknown_error".to_owned()
    }
}

/// The scope a `missing_scope` answer names (`"needed": "channels:history"`), when it is
/// a well-formed scope name.
fn needed_scope(body: Option<&str>) -> Option<String> {
    let value: Value = serde_json::from_str(body?).ok()?;
    let needed = value.get("needed")?.as_str()?;
    (needed.len() <= 200
        && needed
            .bytes()
            .all(|b| b.is_ascii_lowercase() || matches!(b, b':' | b'.' | b'_' | b','))
        && !needed.is_empty())
    .then(|| needed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bot_token_is_given_for_slacks_file_host_only() {
        let client = client("https://slack.com/api/").expect("client");
        let token = yetibot_redaction::Secret::new("xoxb-test-1");
        let api = Api::new(client, &token, ApiBounds::default());
        let private = "https://files.slack.com/files-pri/T1-F1/cats.png";
        assert_eq!(api.file_token(private), Some(token));
        for other in [
            "http://files.slack.com/files-pri/T1-F1/cats.png",
            "https://files.slack.com:8443/files-pri/T1-F1/cats.png",
            "https://files.slack.com.evil.test/cats.png",
            "https://evil.test/files.slack.com/cats.png",
            "https://user@files.slack.com/cats.png",
            "https://cdn.discordapp.com/attachments/1/2/cats.png",
            "not a url",
        ] {
            assert_eq!(api.file_token(other), None, "{other}");
        }
    }

    #[test]
    fn only_well_formed_codes_and_scopes_are_kept() {
        assert_eq!(short_code("channel_not_found"), "channel_not_found");
        assert_eq!(short_code("Bearer xoxb-1"), "unknown_error");
        assert_eq!(
            needed_scope(Some(
                r#"{"ok":false,"error":"missing_scope","needed":"groups:history"}"#
            )),
            Some("groups:history".to_owned())
        );
        assert_eq!(needed_scope(Some(r#"{"needed":"xoxb-SECRET <x>"}"#)), None);
        assert_eq!(needed_scope(Some("not json")), None);
    }
}
