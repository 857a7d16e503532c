//! The `meme` command, in upstream Yetibot's forms: `meme popular` and `meme search <query>`
//! list templates (their names as rows, each paired with its record, so `meme popular |
//! random` picks one), and `meme <template>: <top> / <bottom>` captions a template named by
//! its ID or its name and answers with the image's URL.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::json;
use yetibot_command::{Call, CommandSpec, Handler, Outcome, PathStep};
use yetibot_json_util::Value;

use super::wire::{self, Template};
use super::{Failure, MAX_CAPTION_CHARS, MAX_QUERY_CHARS, Source};
use crate::services::AiServices;

const POPULAR_USAGE: &str = "meme popular # Imgflip's popular meme templates";
const SEARCH_USAGE: &str = "meme search <query> # meme templates whose names contain the query";
const GENERATE_USAGE: &str =
    "meme <template name or ID>: <top text> / <bottom text> # caption a meme template";

/// The `meme` command over these services.
pub(crate) fn spec(services: &Arc<AiServices>) -> CommandSpec {
    let form = |form| MemeCommand {
        services: Arc::clone(services),
        form,
    };
    CommandSpec::new("meme", crate::request::MEDIA_CATEGORIES)
        .hints(crate::request::PAID)
        .route(Some(r"^\s*popular\s*$"), POPULAR_USAGE, form(Form::Popular))
        .route(
            Some(r"^\s*search\s+(\S.*)$"),
            SEARCH_USAGE,
            form(Form::Search),
        )
        .route(
            Some(r"(?s)^\s*([^:]+?)\s*:(.*)$"),
            GENERATE_USAGE,
            form(Form::Generate),
        )
}

#[derive(Clone, Copy)]
enum Form {
    Popular,
    Search,
    Generate,
}

struct MemeCommand {
    services: Arc<AiServices>,
    form: Form,
}

impl Handler for MemeCommand {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let result = match self.form {
                Form::Popular => popular(&self.services).await,
                Form::Search => search(&self.services, call.group(1)).await,
                Form::Generate => generate(&self.services, call.group(1), call.group(2)).await,
            };
            result.unwrap_or_else(|failure| Outcome::error(failure.message()))
        })
    }
}

async fn popular(services: &AiServices) -> Result<Outcome, Failure> {
    let account = super::account(services)?;
    let templates = super::popular(services, account).await?;
    Ok(listing(&templates, Source::Popular))
}

async fn search(services: &AiServices, query: &str) -> Result<Outcome, Failure> {
    let query = query_text(query)?;
    super::refuse_credentials(services.client.secrets(), [query.as_str()])?;
    let account = super::account(services)?;
    let (templates, source) = super::find(services, account, &query).await?;
    if templates.is_empty() {
        return Err(Failure::Refused(format!(
            "meme: no template matches {query:?}"
        )));
    }
    Ok(listing(&templates, source))
}

/// The query as searched: on one line, 1 to [`MAX_QUERY_CHARS`] characters.
fn query_text(raw: &str) -> Result<String, Failure> {
    let query = crate::args::one_line(raw, MAX_QUERY_CHARS + 1);
    if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
        return Err(Failure::Refused(format!(
            "meme: a search query is 1 to {MAX_QUERY_CHARS} characters"
        )));
    }
    Ok(query)
}

async fn generate(services: &AiServices, template: &str, text: &str) -> Result<Outcome, Failure> {
    let (top, bottom) = captions(text)?;
    let template = query_text(template)?;
    super::refuse_credentials(
        services.client.secrets(),
        [template.as_str(), top.as_str(), bottom.as_str()],
    )?;
    let account = super::account(services)?;
    let chosen = if wire::is_template_id(&template) {
        Template {
            id: template.clone(),
            name: template.clone(),
            url: None,
            box_count: None,
        }
    } else {
        let (found, _) = super::find(services, account, &template).await?;
        let wanted = template.to_lowercase();
        let exact = found.iter().position(|t| t.name.to_lowercase() == wanted);
        found.into_iter().nth(exact.unwrap_or(0)).ok_or_else(|| {
            Failure::Refused(format!(
                "meme: no template matches {template:?}; try `meme search <words>`"
            ))
        })?
    };
    let meme = super::caption(services, account, &chosen.id, &top, &bottom).await?;
    let data = json!({
        "url": meme.url,
        "page_url": meme.page_url,
        "template": {"id": chosen.id, "name": chosen.name},
    });
    let data = services.client.secrets().redact_json(&data);
    Ok(Outcome::Data {
        value: Value::String(meme.url),
        data: crate::args::pipeline_data(&data),
        path: None,
    })
}

/// The top and bottom captions of `<top> / <bottom>` (the first ` / `, else the first `/`;
/// without one, all of it is the top). Each is at most [`MAX_CAPTION_CHARS`]; one may be
/// empty, not both.
fn captions(text: &str) -> Result<(String, String), Failure> {
    let (top, bottom) = text
        .split_once(" / ")
        .or_else(|| text.split_once('/'))
        .unwrap_or((text, ""));
    let (top, bottom) = (top.trim(), bottom.trim());
    if top.is_empty() && bottom.is_empty() {
        return Err(Failure::Refused(format!("usage: {GENERATE_USAGE}")));
    }
    if top.chars().count() > MAX_CAPTION_CHARS || bottom.chars().count() > MAX_CAPTION_CHARS {
        return Err(Failure::Refused(format!(
            "meme: each caption is at most {MAX_CAPTION_CHARS} characters"
        )));
    }
    Ok((top.to_owned(), bottom.to_owned()))
}

/// Template names as rows, each paired with its record under `templates`.
fn listing(templates: &[Template], source: Source) -> Outcome {
    let rows = templates
        .iter()
        .map(|t| Value::String(t.name.clone()))
        .collect();
    let records: Vec<serde_json::Value> = templates.iter().map(Template::to_json).collect();
    let data = json!({"source": source.name(), "templates": records});
    Outcome::Data {
        value: Value::Array(rows),
        data: crate::args::pipeline_data(&data),
        path: Some(vec![PathStep::Key("templates".to_owned())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captions_split_at_the_first_slash() {
        assert_eq!(
            captions(" deploy on friday / what could go wrong ").unwrap(),
            ("deploy on friday".into(), "what could go wrong".into())
        );
        assert_eq!(captions("a/b/c").unwrap(), ("a".into(), "b/c".into()));
        assert_eq!(
            captions("only top").unwrap(),
            ("only top".into(), String::new())
        );
        assert_eq!(
            captions(" / bottom").unwrap(),
            (String::new(), "bottom".into())
        );
        assert!(captions(" / ").is_err());
        assert!(captions(&"x".repeat(1001)).is_err());
        assert!(captions(&"x".repeat(1000)).is_ok());
    }

    #[test]
    fn queries_are_one_bounded_line() {
        assert_eq!(query_text(" drake\n hotline ").unwrap(), "drake hotline");
        assert!(query_text("   ").is_err());
        assert!(query_text(&"q".repeat(201)).is_err());
    }
}
