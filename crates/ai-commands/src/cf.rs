//! The `cf` command: Cloudflare Workers AI through the provider named `cloudflare`. `cf
//! models` lists its whole bounded catalog, its categories, or one category; `cf <prompt>`
//! asks one catalogued chat model once, with no history and no tools.
//!
//! A prompt reads the catalog (a metadata GET) before it sends the paid request, and goes
//! on only when the catalog labels the model a chat interface: a task is not an interface,
//! and decision, extraction, image, audio, embedding and unlisted models do not take chat
//! prompts.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use yetibot_ai_providers::{
    ModelInfo, ModelInterface, ModelList, ModelListing, Provider, RouteError, RouteRequest,
    UNCATEGORIZED,
};
use yetibot_conversation::Message;
use yetibot_json_util::Value;
use yetibot_tool_policy::{RequestContext, Selection};

use futures_util::future::BoxFuture;
use yetibot_command::{Call, CommandSpec, Handler, Outcome, PathStep};

use crate::flags::Command;
use crate::request::{PIPE_ONLY_PROMPT, SingleHop, cost_source, provenance};
use crate::services::AiServices;

/// The provider `cf` always uses.
pub(crate) const PROVIDER: &str = "cloudflare";
/// The output-token cap of every `cf` request.
const MAX_OUTPUT_TOKENS: u32 = 2048;
/// The catalog listing's usage line.
const MODELS_USAGE: &str = "cf models [--categories | --category <id>] # list the Workers AI catalog with task and interface labels, its categories, or one category";
/// The prompt's usage line.
const PROMPT_USAGE: &str = "cf [--model <id>] [--toolset <name>] [--] <prompt> # ask a catalogued Workers AI chat model once, with no history or tools";
/// The longest model ID an error message repeats, in characters.
const MAX_SHOWN_ID_CHARS: usize = 200;

/// The `cf` command over these services.
pub(crate) fn spec(services: Arc<AiServices>) -> CommandSpec {
    let cf = Cf { services };
    CommandSpec::new("cf", &[crate::request::CATEGORY])
        .hints(yetibot_command::Hints {
            may_cost: true,
            ..yetibot_command::Hints::default()
        })
        .route(Some(r"^models\b"), MODELS_USAGE, cf.clone())
        .route(None, PROMPT_USAGE, cf)
}

/// The `cf` handler. Like `ai`, it reads the arguments as typed, so piped text never selects
/// a sub-command.
#[derive(Clone)]
struct Cf {
    services: Arc<AiServices>,
}

impl Handler for Cf {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let services = self.services.as_ref();
            let typed = call.typed_args();
            let (word, rest) = match typed.split_once(char::is_whitespace) {
                Some((word, rest)) => (word, rest.trim()),
                None => (typed, ""),
            };
            if word == "models" {
                return match View::parse(rest) {
                    Some(view) => models(services, &view).await,
                    None => Outcome::error(format!("usage: {MODELS_USAGE}")),
                };
            }
            prompt(services, &call, typed).await
        })
    }
}

/// What `cf models` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum View {
    /// The whole catalog.
    All,
    /// One row per category, with its model count.
    Categories,
    /// The models of one category (its ID, lower-cased).
    Category(String),
}

impl View {
    /// The view the words after `models` ask for; `None` when they are not one.
    fn parse(rest: &str) -> Option<Self> {
        let words: Vec<&str> = rest.split_whitespace().take(3).collect();
        match words.as_slice() {
            [] => Some(Self::All),
            ["--categories"] => Some(Self::Categories),
            ["--category", id] if !id.starts_with("--") => Some(Self::Category(id.to_lowercase())),
            _ => None,
        }
    }
}

/// The provider named `cloudflare` when it is configured with a Workers AI account URL (the
/// one kind of provider with a catalog that labels interfaces): the service of `cf`.
pub(crate) fn workers_ai(services: &AiServices) -> Option<&Provider> {
    services.providers.get(PROVIDER).filter(|provider| {
        matches!(
            provider.capabilities().listing,
            ModelListing::CloudflareSearch { .. }
        )
    })
}

/// The `cloudflare` provider, when it is configured with a Workers AI account URL, or the
/// message that says how to configure it.
fn cloudflare(services: &AiServices) -> Result<&Provider, Outcome> {
    let Some(provider) = services.providers.get(PROVIDER) else {
        return Err(Outcome::error(
            "cf uses the AI provider named cloudflare, and none is configured; add it under \
             :yetibot :ai :providers with the Workers AI URL \
             https://api.cloudflare.com/client/v4/accounts/ACCOUNT_ID/ai/v1",
        ));
    };
    if !matches!(
        provider.capabilities().listing,
        ModelListing::CloudflareSearch { .. }
    ) {
        return Err(Outcome::error(
            "the cloudflare provider's URL is not a Workers AI account URL \
             (https://api.cloudflare.com/client/v4/accounts/ACCOUNT_ID/ai/v1), so cf has no \
             catalog to read; use `ai --provider cloudflare` for it",
        ));
    }
    Ok(provider)
}

/// `cf models [--categories | --category ID]`: metadata only. A failed listing stops the
/// pipeline.
async fn models(services: &AiServices, view: &View) -> Outcome {
    let provider = match cloudflare(services) {
        Ok(provider) => provider,
        Err(outcome) => return outcome,
    };
    let list = match services.client.list_models(provider).await {
        Ok(list) => list,
        Err(error) => return Outcome::error(format!("{PROVIDER}: {}", error.user_message())),
    };
    if list.models.is_empty() {
        return Outcome::text("the Workers AI catalog lists no models");
    }
    match view {
        View::All => model_listing(&list, list.models.iter().collect(), None),
        View::Categories => category_listing(&list),
        View::Category(id) => {
            let matching: Vec<&ModelInfo> = list
                .models
                .iter()
                .filter(|m| category_id(m) == id.as_str())
                .collect();
            if matching.is_empty() {
                return Outcome::error(
                    "no Workers AI model is in that category; `cf models --categories` lists \
                     the category IDs",
                );
            }
            model_listing(&list, matching, Some(id))
        }
    }
}

/// A model's category ID.
fn category_id(model: &ModelInfo) -> &str {
    model
        .category
        .as_ref()
        .map_or(UNCATEGORIZED, |c| c.id.as_str())
}

/// A model's interface label.
fn interface_label(model: &ModelInfo) -> &'static str {
    model.interface.unwrap_or(ModelInterface::Unknown).label()
}

/// One row per model (`ID (category, interface)`), each paired with its catalog record at
/// `models` in the data.
fn model_listing(list: &ModelList, models: Vec<&ModelInfo>, category: Option<&str>) -> Outcome {
    let mut rows = Vec::with_capacity(models.len());
    let mut records = Vec::with_capacity(models.len());
    for model in models {
        rows.push(Value::String(format!(
            "{} ({}, {})",
            model.id,
            category_id(model),
            interface_label(model)
        )));
        records.push(match &model.record {
            Some(record) => record.clone(),
            None => json!({"id": model.id, "interface": interface_label(model)}),
        });
    }
    let mut data = json!({"provider": PROVIDER, "truncated": list.truncated, "models": records});
    if let Some(id) = category {
        data["category"] = json!(id);
    }
    let Some(data) = crate::args::pipeline_data(&data) else {
        // Each record is bounded, but a whole catalog of large ones is more than a pipeline
        // carries; a category is smaller.
        return Outcome::error(
            "the Workers AI catalog's records are over 1 MiB together; list one category with \
             `cf models --category ID` (see `cf models --categories`)",
        );
    };
    Outcome::Data {
        value: Value::Array(rows),
        data: Some(data),
        path: Some(vec![PathStep::Key("models".to_owned())]),
    }
}

/// One row per category, sorted by ID, each paired with its record (`id`, `name`, `count`)
/// at `categories` in the data. Two task names with the same ID count together under the
/// first name seen.
fn category_listing(list: &ModelList) -> Outcome {
    let mut counts: BTreeMap<&str, (&str, usize)> = BTreeMap::new();
    for model in &list.models {
        let (id, name) = match &model.category {
            Some(category) => (category.id.as_str(), category.name.as_str()),
            None => (UNCATEGORIZED, "no usable task name"),
        };
        counts.entry(id).or_insert((name, 0)).1 += 1;
    }
    let mut rows = Vec::with_capacity(counts.len());
    let mut records = Vec::with_capacity(counts.len());
    for (id, (name, count)) in counts {
        let noun = if count == 1 { "model" } else { "models" };
        rows.push(Value::String(format!("{id}: {count} {noun} ({name})")));
        records.push(json!({"id": id, "name": name, "count": count}));
    }
    let data = json!({"provider": PROVIDER, "truncated": list.truncated, "categories": records});
    // At most 8,192 short records: always within the pipeline's bounds.
    Outcome::Data {
        value: Value::Array(rows),
        data: crate::args::pipeline_data(&data),
        path: Some(vec![PathStep::Key("categories".to_owned())]),
    }
}

/// Whether the catalog lets `model` take a chat prompt: it must be listed and labelled
/// chat. The message says why not.
pub(crate) fn check_chat(list: &ModelList, model: &str) -> Result<(), String> {
    let shown: String = model
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_SHOWN_ID_CHARS)
        .collect();
    match list.models.iter().find(|m| m.id == model) {
        Some(info) if info.interface == Some(ModelInterface::Chat) => Ok(()),
        Some(info) => Err(format!(
            "{shown} is a {} model in the Workers AI catalog, not a chat model, so cf does not \
             send it a prompt; pick a model labelled chat in `cf models`",
            interface_label(info)
        )),
        None => Err(format!(
            "{shown} is not in the Workers AI catalog, so cf cannot tell that it takes chat \
             prompts; pick a model labelled chat in `cf models`, or use \
             `ai --provider cloudflare --model ID` for a model outside the catalog"
        )),
    }
}

/// `cf [--model ID] [--toolset NAME] <prompt>`.
async fn prompt(services: &AiServices, call: &Call<'_>, typed: &str) -> Outcome {
    let started = (services.clock)();
    // Everything static first: options, budget flags, piped data. No credential, catalog
    // or network work happens before these pass.
    let crate::request::Static {
        options, snapshot, ..
    } = match crate::request::read_static(services, call, typed, Command::TextOnly) {
        Ok(checked) => checked,
        Err(outcome) => return outcome,
    };
    if options.prompt.trim().is_empty() && snapshot.is_none() {
        return if typed.is_empty() {
            Outcome::lines([MODELS_USAGE, PROMPT_USAGE])
        } else {
            Outcome::error(format!("usage: {PROMPT_USAGE}"))
        };
    }
    let selection = match Selection::choose(&services.policy, options.toolset.as_deref()) {
        Ok(selection) => selection,
        Err(error) => return Outcome::error(error.to_string()),
    };
    let provider = match cloudflare(services) {
        Ok(provider) => provider,
        Err(outcome) => return outcome,
    };
    let route = match yetibot_ai_providers::route(
        &services.providers,
        &services.defaults,
        |model| services.owner_of(model),
        RouteRequest {
            provider: None,
            pinned: Some(PROVIDER),
            model: options.model.as_deref(),
        },
    ) {
        Ok(route) => route,
        Err(RouteError::NoModel(_)) => {
            return Outcome::error(
                "the cloudflare provider has no default model; add --model ID (see `cf models`)",
            );
        }
        Err(error) => return Outcome::error(error.to_string()),
    };
    let context = RequestContext {
        provenance: provenance(call.runner.caller()),
        provider: route.provider.clone(),
        model: route.model.clone(),
    };
    if let Err(error) = selection.authorize(&context) {
        return Outcome::error(error.to_string());
    }
    // The provider's credential, resolved only now: its key joins the set this request's
    // output is redacted of.
    let secrets = match services.client.request_secrets(provider).await {
        Ok(secrets) => secrets,
        Err(error) => return Outcome::error(error.user_message()),
    };
    let data_message = match snapshot.as_ref().map(|s| s.data_message(&secrets)) {
        None => None,
        Some(Ok(message)) => Some(message),
        Some(Err(error)) => return Outcome::error(error.to_string()),
    };
    // The catalog is read before the paid request, and decides whether there is one.
    let list = match services.client.list_models(provider).await {
        Ok(list) => list,
        Err(error) => return Outcome::error(format!("{PROVIDER}: {}", error.user_message())),
    };
    if let Err(message) = check_chat(&list, &route.model) {
        return Outcome::error(message);
    }
    let mut messages = Vec::with_capacity(2);
    if let Some(data) = data_message {
        messages.push(Message::User(data));
    }
    let text = if options.prompt.trim().is_empty() {
        PIPE_ONLY_PROMPT
    } else {
        options.prompt.as_str()
    };
    messages.push(Message::User(text.to_owned()));
    let sent = SingleHop {
        provider,
        model: &route.model,
        messages,
        max_output_tokens: MAX_OUTPUT_TOKENS,
        cost: cost_source(provider),
        secrets: &secrets,
        started,
    }
    .send(services)
    .await;
    match sent {
        Ok((text, meta)) => Outcome::Answer {
            value: Value::String(text),
            meta: Box::new(meta.into()),
        },
        Err(error) => Outcome::error(secrets.redact_text(&error.user_message()).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use yetibot_ai_providers::TaskCategory;

    use super::*;

    fn model(id: &str, task: Option<&str>, interface: ModelInterface) -> ModelInfo {
        let category = task.map(|name| TaskCategory {
            id: name.to_lowercase().replace(' ', "-"),
            name: name.to_owned(),
        });
        ModelInfo {
            id: id.to_owned(),
            context_length: None,
            record: Some(json!({
                "id": id,
                "interface": interface.label(),
                "category": category.as_ref().map_or(UNCATEGORIZED, |c| c.id.as_str()),
            })),
            interface: Some(interface),
            pricing: None,
            category,
        }
    }

    fn catalog() -> ModelList {
        ModelList {
            models: vec![
                model("@cf/a/chat", Some("Text Generation"), ModelInterface::Chat),
                model(
                    "@cf/b/clef",
                    Some("Text Generation"),
                    ModelInterface::Decision,
                ),
                model("@cf/c/flux", Some("Text-to-Image"), ModelInterface::Image),
                model("@cf/d/odd", None, ModelInterface::Unknown),
            ],
            truncated: false,
        }
    }

    #[test]
    fn catalog_options_are_exact() {
        let check = |rest: &str, expected: Option<View>| {
            assert_eq!(View::parse(rest), expected, "{rest:?}");
        };
        check("", Some(View::All));
        check("--categories", Some(View::Categories));
        check(
            "--category Text-Generation",
            Some(View::Category("text-generation".into())),
        );
        check("--category", None);
        check("--category --categories", None);
        check("--category a b", None);
        check("--categories x", None);
        check("--frobnicate", None);
        check("gemma", None);
    }

    fn rows(outcome: &Outcome) -> Vec<String> {
        match outcome {
            Outcome::Data {
                value: Value::Array(rows),
                ..
            } => rows
                .iter()
                .map(|r| match r {
                    Value::String(s) => s.clone(),
                    other => other.to_json(),
                })
                .collect(),
            other => panic!("not a listing: {other:?}"),
        }
    }

    fn records(outcome: &Outcome, key: &str) -> Vec<String> {
        let Outcome::Data {
            data: Some(data),
            path,
            ..
        } = outcome
        else {
            panic!("no data");
        };
        assert_eq!(path.as_deref(), Some(&[PathStep::Key(key.to_owned())][..]));
        let found = yetibot_command::value::get_in(data, &[PathStep::Key(key.to_owned())]);
        match found {
            Some(Value::Array(items)) => items.iter().map(Value::to_json).collect(),
            other => panic!("no records: {other:?}"),
        }
    }

    #[test]
    fn every_model_row_is_labelled_and_paired_with_its_record() {
        let list = catalog();
        let outcome = model_listing(&list, list.models.iter().collect(), None);
        assert_eq!(
            rows(&outcome),
            [
                "@cf/a/chat (text-generation, chat)",
                "@cf/b/clef (text-generation, decision)",
                "@cf/c/flux (text-to-image, image)",
                "@cf/d/odd (uncategorized, unknown)",
            ]
        );
        let records = records(&outcome, "models");
        assert_eq!(records.len(), 4);
        assert!(
            records[1].contains(r#""interface":"decision""#),
            "{records:?}"
        );
    }

    #[test]
    fn categories_count_models_by_id() {
        let outcome = category_listing(&catalog());
        assert_eq!(
            rows(&outcome),
            [
                "text-generation: 2 models (Text Generation)",
                "text-to-image: 1 model (Text-to-Image)",
                "uncategorized: 1 model (no usable task name)",
            ]
        );
        assert_eq!(
            records(&outcome, "categories"),
            [
                r#"{"count":2,"id":"text-generation","name":"Text Generation"}"#,
                r#"{"count":1,"id":"text-to-image","name":"Text-to-Image"}"#,
                r#"{"count":1,"id":"uncategorized","name":"no usable task name"}"#,
            ]
        );
    }

    #[test]
    fn only_catalogued_chat_models_take_prompts() {
        let list = catalog();
        assert_eq!(check_chat(&list, "@cf/a/chat"), Ok(()));
        let denied = |id: &str| check_chat(&list, id).expect_err(id);
        assert!(denied("@cf/b/clef").contains("decision model"));
        assert!(denied("@cf/c/flux").contains("image model"));
        assert!(denied("@cf/d/odd").contains("unknown model"));
        assert!(denied("@cf/e/absent").contains("not in the Workers AI catalog"));
        // Exact IDs only.
        assert!(denied("@cf/a/CHAT").contains("not in the Workers AI catalog"));
        let long = format!("x{}\u{7}", "y".repeat(500));
        let message = denied(&long);
        assert!(!message.contains('\u{7}'));
        assert!(!message.contains(&"y".repeat(MAX_SHOWN_ID_CHARS)));
    }
}
