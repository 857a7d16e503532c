//! Clef (decisions with probabilities) and Clairic (typed extraction): Cloudflare Workers AI
//! models that are not chat models, run through their own endpoint on the intent router's
//! account. The standalone `clef` and `clairic` commands ([`command`]) and the native tools
//! of the same names ([`tool`]) share everything below them: the schemas and their bounds
//! ([`schema`]), the wire format ([`wire`]), image loading ([`images`]), the request's
//! [`credentials`] (the token, read now, and a refusal of any text or image URL that quotes a
//! credential, before anything is fetched) and one [`run`], which sends the request once and
//! reads the reply.
//!
//! Neither ever enables the intent router, reaches an MCP server or touches a repository.

pub(crate) mod command;
pub(crate) mod schema;
pub(crate) mod tool;
pub(crate) mod wire;

use serde_json::{Map, Value};
use yetibot_redaction::{Secret, Secrets};

use crate::services::AiServices;
use wire::{EmbeddedImage, Model, Reply};

/// The longest input state of the standalone commands, in characters.
pub(crate) const MAX_STATE_CHARS: usize = 60_000;
/// The longest schema text (`--questions`, `--fields`), in characters.
pub(crate) const MAX_SCHEMA_CHARS: usize = 16_384;

/// Why a run produced no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing was sent: a check failed, the account is not configured, the token could not
    /// be read, or an image could not be loaded.
    NotSent(String),
    /// The request was sent and failed; it may still have run and been charged.
    Unknown(String),
}

/// One request, checked and with its images loaded.
pub(crate) struct Job {
    pub(crate) model: Model,
    pub(crate) state: Value,
    pub(crate) schema: Map<String, Value>,
    pub(crate) images: Vec<yetibot_image_fetch::Image>,
}

/// A finished run: the reply, redacted of every credential the request knew.
pub(crate) struct Done {
    pub(crate) reply: Reply,
    /// The credentials the run knew (the configured set and the account's token), for
    /// redacting anything derived from the reply.
    pub(crate) secrets: Secrets,
}

/// What to say when the account is not configured.
pub(crate) fn not_configured(model: Model) -> String {
    format!(
        "{} needs the Cloudflare account of :yetibot :ai :intent-router (:account-id and an \
         absolute :key-file); no AI provider entry is needed and :enabled may stay false",
        model.name()
    )
}

/// What a request is authorised with and must not quote: the account's token, read from its
/// key file now, and every configured credential with it.
pub(crate) struct Credentials {
    account: yetibot_ai_providers::WorkersAccount,
    token: Secret,
    secrets: Secrets,
}

/// Reads the account's token and refuses a request whose `texts` (its state and schema as
/// sent, and every image URL it would fetch) quote any configured credential or the token,
/// before anything is fetched or sent.
///
/// # Errors
///
/// [`Failure::NotSent`]: no account, an unusable token file, or a quoted credential. The
/// messages never carry the token, its file or the text that quoted it.
pub(crate) async fn credentials<'t>(
    services: &AiServices,
    model: Model,
    texts: impl IntoIterator<Item = &'t str>,
) -> Result<Credentials, Failure> {
    let name = model.name();
    let account = services
        .workers
        .as_ref()
        .ok_or_else(|| Failure::NotSent(not_configured(model)))?;
    let token = services.client.workers_token(account).await.map_err(|_| {
        Failure::NotSent(format!(
            "{name}: the intent router's token file cannot be used (it must be an absolute \
             path to a readable file, not writable by others, holding one token)"
        ))
    })?;
    let secrets = services
        .client
        .secrets()
        .with_extra([&token])
        .map_err(|_| Failure::NotSent(format!("{name}: the credential set cannot be built")))?;
    if texts.into_iter().any(|text| secrets.contains_secret(text)) {
        return Err(Failure::NotSent(format!(
            "{name}: the request quotes a configured credential, so nothing was fetched or sent"
        )));
    }
    Ok(Credentials {
        account: account.clone(),
        token,
        secrets,
    })
}

/// Runs `job` once on the configured account with `credentials` read for it.
///
/// # Errors
///
/// [`Failure::NotSent`] when nothing was sent, [`Failure::Unknown`] once the request may
/// have reached Cloudflare. Messages never carry the token, its file, or a reply body.
pub(crate) async fn run(
    services: &AiServices,
    job: &Job,
    credentials: Credentials,
) -> Result<Done, Failure> {
    // The input (and any image) leaves for Cloudflare and the answer describes it: both
    // are private, so nothing more of this request reaches the logs.
    yetibot_redaction::private::mark_private();
    let name = job.model.name();
    let Credentials {
        account,
        token,
        secrets,
    } = credentials;
    let embedded: Vec<EmbeddedImage> = job.images.iter().map(EmbeddedImage::of).collect();
    let body = wire::body(job.model, &job.state, &job.schema, &embedded);
    let result = services
        .client
        .run_workers_model(&account, &token, job.model.catalog_id(), &body)
        .await
        .map_err(|error| {
            let message = secrets.redact_text(&error.to_string()).into_owned();
            // Only a request never sent proves nothing ran; any other failure came after
            // the request may have reached the model.
            if error.never_sent() {
                Failure::NotSent(format!("{name}: {message}"))
            } else {
                Failure::Unknown(format!(
                    "{name}: {message} (the request may have run and been charged; it is not \
                     retried)"
                ))
            }
        })?;
    let result = secrets.redact_json(&result);
    let reply = wire::reply(&result).map_err(|reason| {
        Failure::Unknown(format!("{name}: Cloudflare's reply was unusable: {reason}"))
    })?;
    Ok(Done { reply, secrets })
}
