//! One bounded request to a service API that is not a chat model: Cloudflare's model
//! endpoint for Clef and Clairic, and the media and finance APIs the native tools call
//! (Imgflip, xAI's images, Wise). They share the provider client's pool, TLS and connect
//! timeout, and its rules: no redirect, no retry, every body bounded as it is read, and
//! errors that never carry the service's own words or the credential.

use std::time::Duration;

use yetibot_redaction::Secret;

use crate::error::{Error, Result};
use crate::transport::{Client, Payload, Peer};

/// How long the reply's head, and then each piece of its body, may take.
pub const SERVICE_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the whole body may take once the head has arrived.
pub const SERVICE_BODY_DEADLINE: Duration = Duration::from_secs(60);

/// The method of a [`ServiceCall`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceMethod {
    /// A read.
    Get,
    /// A request with a body.
    Post,
}

/// The body of a [`ServiceCall`]. Its `Debug` shows the kind and length only: a form may
/// carry a password.
#[derive(Clone, PartialEq, Eq)]
pub enum ServiceBody {
    /// A JSON document (`application/json`).
    Json(Vec<u8>),
    /// URL-encoded form fields (`application/x-www-form-urlencoded`).
    Form(Vec<u8>),
}

impl std::fmt::Debug for ServiceBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Json(bytes) => write!(f, "Json({} bytes)", bytes.len()),
            Self::Form(bytes) => write!(f, "Form({} bytes)", bytes.len()),
        }
    }
}

/// One request to a service: who it is (for errors), the method and absolute URL, an
/// optional bearer token, an optional body and the largest reply read. Its `Debug` shows
/// neither the token nor the body's content.
pub struct ServiceCall<'a> {
    service: &'a str,
    method: ServiceMethod,
    url: &'a str,
    bearer: Option<&'a Secret>,
    body: Option<ServiceBody>,
    max_reply_bytes: usize,
    gateway: Option<&'a str>,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for ServiceCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCall")
            .field("service", &self.service)
            .field("method", &self.method)
            .field("url", &self.url)
            .field("bearer", &self.bearer.map(|_| "[redacted]"))
            .field("body", &self.body)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .finish_non_exhaustive()
    }
}

impl<'a> ServiceCall<'a> {
    /// A `GET` of `url` on the service named `service` in errors, reading at most
    /// `max_reply_bytes` of its reply.
    #[must_use]
    pub fn get(service: &'a str, url: &'a str, max_reply_bytes: usize) -> Self {
        Self {
            service,
            method: ServiceMethod::Get,
            url,
            bearer: None,
            body: None,
            max_reply_bytes,
            gateway: None,
            timeout: None,
        }
    }

    /// A `POST` of `body` to `url`.
    #[must_use]
    pub fn post(service: &'a str, url: &'a str, body: ServiceBody, max_reply_bytes: usize) -> Self {
        Self {
            body: Some(body),
            method: ServiceMethod::Post,
            ..Self::get(service, url, max_reply_bytes)
        }
    }

    /// Authorised by `token` as `Authorization: Bearer`.
    #[must_use]
    pub fn bearer(mut self, token: &'a Secret) -> Self {
        self.bearer = Some(token);
        self
    }

    /// Waits at most `timeout` for each read and for the whole body, instead of
    /// [`SERVICE_READ_TIMEOUT`] and [`SERVICE_BODY_DEADLINE`] (for a caller whose own
    /// operation timeout applies, such as the GitHub ancestry reads that share the MCP one).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Through the Cloudflare AI Gateway `gateway`, when set.
    #[must_use]
    pub(crate) fn gateway(mut self, gateway: Option<&'a str>) -> Self {
        self.gateway = gateway;
        self
    }
}

impl Client {
    /// Sends `call` once and returns its whole successful reply. Each wait is bounded by
    /// [`SERVICE_READ_TIMEOUT`], the whole body by [`SERVICE_BODY_DEADLINE`] and the whole
    /// call by the client's ceiling; the reply by the call's byte bound. No redirect, no
    /// retry.
    ///
    /// # Errors
    ///
    /// The transport's categories, named by the call's service. A status error never
    /// carries the service's error body, not even the one-line account other status errors
    /// may add; [`Error::ConnectionLost`] and a timeout after the head mean the request
    /// reached the service.
    pub async fn call_service(&self, call: ServiceCall<'_>) -> Result<Vec<u8>> {
        let client = self.with_read_timeout(call.timeout.unwrap_or(SERVICE_READ_TIMEOUT));
        let peer = Peer::gateway(call.service, call.gateway);
        let body = call.body.map(|body| match body {
            ServiceBody::Json(bytes) => Payload::json(bytes),
            ServiceBody::Form(bytes) => Payload {
                bytes,
                content_type: "application/x-www-form-urlencoded",
            },
        });
        let method = match call.method {
            ServiceMethod::Get => http::Method::GET,
            ServiceMethod::Post => http::Method::POST,
        };
        client
            .within_ceiling(peer, async {
                let response = client
                    .send(
                        peer,
                        method,
                        call.url,
                        call.bearer,
                        body,
                        "application/json",
                    )
                    .await
                    .map_err(without_detail)?;
                // The body has one deadline as a whole, besides the one on each read: a
                // reply that trickles in is not waited for past it.
                let reply = tokio::time::timeout(
                    call.timeout.unwrap_or(SERVICE_BODY_DEADLINE),
                    client.read_bounded(peer, response.into_body(), call.max_reply_bytes, "reply"),
                )
                .await
                .map_err(|_| Error::Timeout {
                    provider: call.service.to_owned(),
                    phase: "reading the response body",
                })??;
                Ok(reply.to_vec())
            })
            .await
    }
}

/// A status error without the service's own account of it.
fn without_detail(error: Error) -> Error {
    match error {
        Error::HttpStatus {
            provider,
            status,
            reason,
            ..
        } => Error::HttpStatus {
            provider,
            status,
            reason,
            detail: None,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_shows_neither_the_token_nor_the_body() {
        let token = Secret::new("service-token-canary".to_owned());
        let call = ServiceCall::post(
            "Imgflip",
            "https://api.imgflip.com/caption_image",
            ServiceBody::Form(b"username=bot&password=form-password-canary".to_vec()),
            1024,
        )
        .bearer(&token);
        let shown = format!("{call:?}");
        assert!(!shown.contains("canary"), "{shown}");
        assert!(!shown.contains("112, 97, 115"), "no bytes: {shown}");
        assert!(shown.contains("Form(42 bytes)"), "{shown}");
    }
}
