//! Imgflip memes: the `meme` command ([`command`]) and the `meme` native tool ([`tool`]) over
//! one Imgflip account. Both search templates the same way ([`find`]: the popular catalog
//! first, then at most one search page when nothing in it matches) and caption the same
//! way ([`caption`]). Captions and queries are data: they are sent to Imgflip as form fields
//! and never run as commands. A request that quotes a configured credential is refused
//! before anything is sent, and everything returned is redacted of them.

pub(crate) mod command;
pub(crate) mod tool;
pub(crate) mod wire;

use yetibot_redaction::Secrets;

pub(crate) use crate::config::ImgflipAccount;

use crate::services::AiServices;
use wire::{IMGFLIP, MAX_REPLY_BYTES, Meme, Problem, Template};

/// The most templates a search returns.
pub(crate) const MAX_FOUND: usize = 20;
/// The longest search query, in characters.
pub(crate) const MAX_QUERY_CHARS: usize = 200;
/// The longest caption, in characters.
pub(crate) const MAX_CAPTION_CHARS: usize = 1_000;

/// Why a request produced nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing was sent, or Imgflip answered that it did nothing.
    Refused(String),
    /// A caption request was sent and its outcome is unknown: a meme may exist.
    Unknown(String),
}

impl Failure {
    /// The message.
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::Refused(message) | Self::Unknown(message) => message,
        }
    }
}

/// What to say when no account is configured.
pub(crate) const NOT_CONFIGURED: &str =
    "meme needs an Imgflip account: set :yetibot :imgflip :username and :password";

/// The account, or why there is none.
pub(crate) fn account(services: &AiServices) -> Result<&ImgflipAccount, Failure> {
    services
        .imgflip
        .as_ref()
        .ok_or_else(|| Failure::Refused(NOT_CONFIGURED.to_owned()))
}

/// Refuses texts that quote a configured credential, before anything is sent.
pub(crate) fn refuse_credentials<'t>(
    secrets: &Secrets,
    texts: impl IntoIterator<Item = &'t str>,
) -> Result<(), Failure> {
    if texts.into_iter().any(|text| secrets.contains_secret(text)) {
        Err(Failure::Refused(
            "meme: the request quotes a configured credential, so nothing was sent to Imgflip"
                .to_owned(),
        ))
    } else {
        Ok(())
    }
}

/// Where a search's templates came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The popular-template catalog.
    Popular,
    /// Imgflip's search.
    Search,
}

impl Source {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Popular => "popular",
            Self::Search => "search",
        }
    }
}

/// The popular-template catalog.
pub(crate) async fn popular(
    services: &AiServices,
    account: &ImgflipAccount,
) -> Result<Vec<Template>, Failure> {
    let url = wire::popular_url(account);
    let call = yetibot_ai_providers::ServiceCall::get(IMGFLIP, &url, MAX_REPLY_BYTES);
    let reply = send(services, call, false).await?;
    wire::templates(&reply)
        .map(|templates| tidy(services, templates))
        .map_err(|problem| problem_failure(&problem, "the template catalog"))
}

/// Templates with their names redacted of every credential, then cut to
/// [`wire::MAX_NAME_CHARS`] (in that order, so no cut can hide part of one).
fn tidy(services: &AiServices, templates: Vec<Template>) -> Vec<Template> {
    templates
        .into_iter()
        .map(|mut template| {
            let redacted = services.client.secrets().redact_text(&template.name);
            template.name = crate::args::one_line(&redacted, wire::MAX_NAME_CHARS);
            template
        })
        .collect()
}

/// Up to [`MAX_FOUND`] templates whose names contain `query` (literally, ignoring case)
/// from the popular catalog; when none does, the first page of Imgflip's search.
pub(crate) async fn find(
    services: &AiServices,
    account: &ImgflipAccount,
    query: &str,
) -> Result<(Vec<Template>, Source), Failure> {
    let wanted = query.to_lowercase();
    let matching: Vec<Template> = popular(services, account)
        .await?
        .into_iter()
        .filter(|template| template.name.to_lowercase().contains(&wanted))
        .take(MAX_FOUND)
        .collect();
    if !matching.is_empty() {
        return Ok((matching, Source::Popular));
    }
    let (url, form) = wire::search_request(account, query);
    let reply = post(services, &url, form, false).await?;
    let found = wire::templates(&reply).map_err(|problem| match problem {
        Problem::Refused { login: false } => Failure::Refused(
            "meme: Imgflip refused the search (its search API needs an API Premium account); \
             the popular templates had no match"
                .to_owned(),
        ),
        other => problem_failure(&other, "the search"),
    })?;
    Ok((
        tidy(services, found.into_iter().take(MAX_FOUND).collect()),
        Source::Search,
    ))
}

/// Captions the template `template_id` once. Nothing is retried: a failure after the
/// request went out is [`Failure::Unknown`].
pub(crate) async fn caption(
    services: &AiServices,
    account: &ImgflipAccount,
    template_id: &str,
    top: &str,
    bottom: &str,
) -> Result<Meme, Failure> {
    let (url, form) = wire::caption_request(account, template_id, top, bottom);
    let reply = post(services, &url, form, true).await?;
    wire::meme(&reply).map_err(|problem| match problem {
        Problem::Malformed(reason) => Failure::Unknown(format!(
            "meme: Imgflip's reply was unusable ({reason}); a meme may have been made"
        )),
        refused => problem_failure(&refused, "the caption"),
    })
}

/// Posts `form` to `url` once (see [`send`]).
async fn post(
    services: &AiServices,
    url: &str,
    form: Vec<u8>,
    creates: bool,
) -> Result<Vec<u8>, Failure> {
    let body = yetibot_ai_providers::ServiceBody::Form(form);
    let call = yetibot_ai_providers::ServiceCall::post(IMGFLIP, url, body, MAX_REPLY_BYTES);
    send(services, call, creates).await
}

/// Sends one call. A failure after the request may have arrived is [`Failure::Unknown`]
/// when `creates` (the call makes something), else a refusal like the rest.
async fn send(
    services: &AiServices,
    call: yetibot_ai_providers::ServiceCall<'_>,
    creates: bool,
) -> Result<Vec<u8>, Failure> {
    services.client.call_service(call).await.map_err(|error| {
        let message = format!(
            "meme: {}",
            services.client.secrets().redact_text(&error.to_string())
        );
        if creates && !error.never_sent() && !error.refused() {
            Failure::Unknown(format!(
                "{message} (a meme may have been made; not retried)"
            ))
        } else {
            Failure::Refused(message)
        }
    })
}

fn problem_failure(problem: &Problem, what: &str) -> Failure {
    Failure::Refused(match problem {
        Problem::Refused { login: true } => {
            "meme: Imgflip refused the account's user name or password (check :yetibot \
             :imgflip)"
                .to_owned()
        }
        Problem::Refused { login: false } => format!("meme: Imgflip refused {what}"),
        Problem::Malformed(reason) => {
            format!("meme: Imgflip's reply to {what} was unusable ({reason})")
        }
    })
}
