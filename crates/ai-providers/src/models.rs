//! Model listing: OpenAI-style `GET /models` and Cloudflare's paginated catalog search,
//! with bounded metadata and, for OpenAI-style listings, each model's advertised prices.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::capability::ModelListing;
use crate::chat::malformed;
use crate::config::Provider;
use crate::error::{Error, Result};
use crate::pricing::{self, Pricing};
use crate::transport::Client;

/// The most model IDs kept per provider.
pub const MAX_MODELS: usize = 8192;
/// The longest model ID kept, in UTF-8 bytes.
pub const MAX_MODEL_ID_BYTES: usize = 512;
/// Cloudflare catalog entries requested per page.
pub const CLOUDFLARE_PAGE_SIZE: u64 = 100;
/// The most Cloudflare catalog pages read.
pub const CLOUDFLARE_MAX_PAGES: u64 = 20;
/// The largest projected Cloudflare record, in UTF-8 JSON bytes.
pub const MAX_RECORD_BYTES: usize = 8000;
/// The longest string kept in a projected record, in characters.
pub const MAX_RECORD_STRING_CHARS: usize = 2000;
/// The most entries kept in one array or object of a projected record.
pub const MAX_RECORD_ENTRIES: usize = 32;
/// The deepest nesting kept in a projected record.
pub const MAX_RECORD_DEPTH: usize = 5;
/// The longest Workers AI task name (and category ID made from it) that names a category,
/// in characters; a longer one leaves its model uncategorized.
pub const MAX_TASK_NAME_CHARS: usize = 100;
/// The category ID of Workers AI entries without a usable task name.
pub const UNCATEGORIZED: &str = "uncategorized";

/// The inference interface a Workers AI catalog entry describes, read from its official
/// record (its task name and input schema), never guessed from its model ID.
///
/// A task is not an interface: Cloudflare files its decision and extraction models under
/// Text Generation too, so the input schema decides first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelInterface {
    /// A Text Generation entry that takes chat prompts.
    Chat,
    /// A decision model such as Clef: its input is a state and typed `questions`.
    Decision,
    /// An extraction model such as Clairic: its input names typed `fields`.
    Extraction,
    /// A task that takes or makes images (text-to-image, image-to-text, classification,
    /// detection).
    Image,
    /// A task over speech or other audio (recognition, synthesis, voice activity).
    Audio,
    /// A text embedding task.
    Embedding,
    /// Any other task (translation, summarization, text classification, ...), or none: the
    /// model has its own, model-specific input.
    Unknown,
}

impl ModelInterface {
    /// The short label shown beside the model: `chat`, `decision`, `extraction`, `image`,
    /// `audio`, `embedding` or `unknown`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Decision => "decision",
            Self::Extraction => "extraction",
            Self::Image => "image",
            Self::Audio => "audio",
            Self::Embedding => "embedding",
            Self::Unknown => "unknown",
        }
    }
}

/// A Workers AI catalog category: the entry's task name as Cloudflare reports it, and an ID
/// made from it (lower case, each run of other characters one `-`: `Text Generation` is
/// `text-generation`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskCategory {
    /// The category ID.
    pub id: String,
    /// The task name, trimmed and redacted of credentials.
    pub name: String,
}

/// One listed model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The exact model ID.
    pub id: String,
    /// The context window in tokens, when the listing reports one (`context_length`,
    /// `max_model_len`, or Cloudflare's `context_window` property).
    pub context_length: Option<u64>,
    /// The bounded Cloudflare catalog record (see the crate docs), `None` elsewhere.
    pub record: Option<Value>,
    /// The interface a Cloudflare catalog record describes; `None` for other listings.
    pub interface: Option<ModelInterface>,
    /// The category of a Cloudflare catalog record; `None` when its task name is missing or
    /// unusable (the [`UNCATEGORIZED`] entries), and for other listings.
    pub category: Option<TaskCategory>,
    /// The prices the listing advertises for the model (see [`Pricing`] for the shape read),
    /// `None` when its record states none.
    pub pricing: Option<Pricing>,
}

impl ModelInfo {
    /// Whether the listing advertised this model's prices and every one of them is exactly
    /// zero ([`Pricing::is_free`]). A model without advertised prices is never free.
    #[must_use]
    pub fn is_verified_free(&self) -> bool {
        self.pricing.as_ref().is_some_and(Pricing::is_free)
    }
}

/// A provider's model list, sorted by ID without duplicates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelList {
    /// The models.
    pub models: Vec<ModelInfo>,
    /// Whether IDs were dropped for exceeding a bound (count, ID length, page cap).
    pub truncated: bool,
}

impl ModelList {
    /// The model IDs.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.models.iter().map(|m| m.id.as_str())
    }

    /// Context-window detection: the reported context length of `id`, if any.
    #[must_use]
    pub fn context_window(&self, id: &str) -> Option<u64> {
        self.models
            .iter()
            .find(|m| m.id == id)
            .and_then(|m| m.context_length)
    }

    fn from_entries(entries: Vec<ModelInfo>, mut truncated: bool) -> Self {
        let mut by_id = BTreeMap::new();
        for entry in entries {
            if entry.id.is_empty() || entry.id.len() > MAX_MODEL_ID_BYTES {
                truncated |= !entry.id.is_empty();
                continue;
            }
            by_id.entry(entry.id.clone()).or_insert(entry);
        }
        let mut models: Vec<ModelInfo> = by_id.into_values().collect();
        if models.len() > MAX_MODELS {
            models.truncate(MAX_MODELS);
            truncated = true;
        }
        Self { models, truncated }
    }
}

pub(crate) async fn list(
    client: &Client,
    provider: &Provider,
    bearer: Option<&yetibot_redaction::Secret>,
) -> Result<ModelList> {
    match &provider.capabilities().listing {
        ModelListing::Standard { url } | ModelListing::Separate { url } => {
            let bytes = get_bytes(client, provider, url, bearer).await?;
            let value = serde_json::from_slice(&bytes)
                .map_err(|_| malformed(provider, "the listing is not JSON"))?;
            let mut list = standard(provider, &value)?;
            attach_prices(&bytes, &value, &mut list);
            Ok(list)
        }
        ModelListing::CloudflareSearch { url } => cloudflare(client, provider, url, bearer).await,
    }
}

async fn get_json(
    client: &Client,
    provider: &Provider,
    url: &str,
    bearer: Option<&yetibot_redaction::Secret>,
) -> Result<Value> {
    let bytes = get_bytes(client, provider, url, bearer).await?;
    serde_json::from_slice(&bytes).map_err(|_| malformed(provider, "the listing is not JSON"))
}

/// One listing GET, its body read under the listing bound.
async fn get_bytes(
    client: &Client,
    provider: &Provider,
    url: &str,
    bearer: Option<&yetibot_redaction::Secret>,
) -> Result<bytes::Bytes> {
    let response = client
        .send(
            provider,
            http::Method::GET,
            url,
            bearer,
            None,
            "application/json",
        )
        .await?;
    let limit = client.options().max_listing_bytes;
    client
        .read_bounded(provider, response.into_body(), limit, "model listing")
        .await
}

/// Gives each listed model the prices of the record it came from, read a second time from
/// the body's text so that each stays exact. When several records share an ID, the first
/// one's prices go with it, as its other fields do. Only the kept models' records are read
/// for prices, so a huge listing costs no more than its IDs.
fn attach_prices(body: &[u8], value: &Value, list: &mut ModelList) {
    let (Some(records), Some(data)) = (
        pricing::records(body),
        value.get("data").and_then(Value::as_array),
    ) else {
        return;
    };
    if records.len() != data.len() {
        return;
    }
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, record) in data.iter().enumerate() {
        if let Some(id) = record.get("id").and_then(Value::as_str) {
            first.entry(id).or_insert(index);
        }
    }
    for model in &mut list.models {
        model.pricing = first
            .get(model.id.as_str())
            .and_then(|&index| records.get(index))
            .and_then(|record| pricing::of_record(record));
    }
}

/// Parses `{"data": [{"id": ...}, ...]}`.
pub(crate) fn standard(provider: &Provider, value: &Value) -> Result<ModelList> {
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(provider, "the listing has no data list"))?;
    let entries = data
        .iter()
        .filter_map(|m| {
            let id = m.get("id")?.as_str()?.to_owned();
            // vLLM and most gateways say it at the top of the record; llama.cpp's server
            // says the window it serves in its `meta` object.
            let context_length = ["context_length", "max_model_len", "context_window"]
                .iter()
                .find_map(|k| m.get(*k).and_then(Value::as_u64))
                .or_else(|| m.get("meta")?.get("n_ctx")?.as_u64());
            Some(ModelInfo {
                id,
                context_length,
                record: None,
                interface: None,
                category: None,
                pricing: None,
            })
        })
        .collect();
    Ok(ModelList::from_entries(entries, false))
}

#[derive(Debug, PartialEq)]
struct PageInfo {
    per_page: Option<u64>,
    total_count: Option<u64>,
    total_pages: Option<u64>,
}

async fn cloudflare(
    client: &Client,
    provider: &Provider,
    url: &str,
    bearer: Option<&yetibot_redaction::Secret>,
) -> Result<ModelList> {
    // Every configured credential and this request's own key, which may come from a key
    // file and so be in no configured set.
    let secrets =
        client
            .secrets()
            .with_extra(bearer)
            .map_err(|_| Error::CredentialUnavailable {
                provider: provider.name().to_owned(),
            })?;
    let mut entries = Vec::new();
    let mut first: Option<PageInfo> = None;
    let mut last_page = 1;
    let mut page = 1;
    while page <= last_page {
        let page_url = format!("{url}?page={page}&per_page={CLOUDFLARE_PAGE_SIZE}");
        let value = get_json(client, provider, &page_url, bearer).await?;
        if value.get("success").and_then(Value::as_bool) == Some(false) {
            return Err(malformed(provider, "the catalog reported a failure"));
        }
        let records = value
            .get("result")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed(provider, "a catalog page has no result list"))?;
        let info = value
            .get("result_info")
            .ok_or_else(|| malformed(provider, "a catalog page has no page metadata"))?;
        let field = |k: &str| info.get(k).and_then(Value::as_u64);
        if field("page").is_some_and(|p| p != page) {
            return Err(malformed(
                provider,
                "a catalog page reported the wrong page number",
            ));
        }
        let current = PageInfo {
            per_page: field("per_page"),
            total_count: field("total_count"),
            total_pages: field("total_pages"),
        };
        match &first {
            None => {
                let per_page = current.per_page.unwrap_or(CLOUDFLARE_PAGE_SIZE).max(1);
                last_page = current
                    .total_pages
                    .or_else(|| current.total_count.map(|t| t.div_ceil(per_page)))
                    .unwrap_or(1)
                    .max(1);
                first = Some(current);
            }
            Some(first) if *first != current => {
                return Err(malformed(
                    provider,
                    "the catalog's page metadata changed between pages",
                ));
            }
            Some(_) => {}
        }
        entries.extend(records.iter().filter_map(|r| project(r, &secrets)));
        page += 1;
        if page > CLOUDFLARE_MAX_PAGES {
            break;
        }
    }
    Ok(ModelList::from_entries(
        entries,
        last_page > CLOUDFLARE_MAX_PAGES,
    ))
}

/// Catalog properties that state a model's size limits.
const LIMIT_PROPERTIES: &[&str] = &[
    "context_window",
    "max_input_tokens",
    "max_total_tokens",
    "max_output_tokens",
    "max_batch_prefill_tokens",
];

/// Optional fields of a projected record, in the order they are given up when the record is
/// still over [`MAX_RECORD_BYTES`] after every string has been cut to its bound: the bulky
/// parts first, then the small ones. `id` (at most [`MAX_MODEL_ID_BYTES`]) always stays.
const DROP_ORDER: &[&str] = &[
    "schema",
    "properties",
    "tags",
    "description",
    "limits",
    "source",
    "created-at",
    "uuid",
    "task",
    "task-id",
    "function-calling",
];

/// Projects one Workers AI catalog record into its bounded form.
fn project(record: &Value, secrets: &yetibot_redaction::Secrets) -> Option<ModelInfo> {
    let id = record.get("name")?.as_str()?.to_owned();
    let task_name = record
        .get("task")
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str);
    // Both come from the whole record, before anything is cut, so a record that has to give
    // up its schema or task to fit still keeps its label and category.
    let interface = interface_of(task_name, record.get("schema"));
    let category = task_name.and_then(|name| category_of(&secrets.redact_text(name)));
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    out.insert("interface".into(), json!(interface.label()));
    out.insert(
        "category".into(),
        json!(category.as_ref().map_or(UNCATEGORIZED, |c| c.id.as_str())),
    );
    for (from, to) in [
        ("id", "uuid"),
        ("source", "source"),
        ("created_at", "created-at"),
        ("tags", "tags"),
        ("description", "description"),
    ] {
        if let Some(v) = record.get(from).filter(|v| !v.is_null()) {
            out.insert(to.into(), v.clone());
        }
    }
    if let Some(task) = record.get("task") {
        let task_field = |k: &str| task.get(k).and_then(Value::as_str);
        if let Some(name) = task_field("name") {
            out.insert("task".into(), json!(name));
        }
        if let Some(task_id) = task_field("id") {
            out.insert("task-id".into(), json!(task_id));
        }
    }
    let mut properties = Map::new();
    for p in record
        .get("properties")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(key) = p.get("property_id").and_then(Value::as_str) {
            properties.insert(
                key.to_owned(),
                p.get("value").cloned().unwrap_or(Value::Null),
            );
        }
    }
    let context_length = ["context_window", "max_input_tokens"].iter().find_map(|k| {
        let v = properties.get(*k)?;
        v.as_u64().or_else(|| v.as_str()?.parse().ok())
    });
    let schema = record.get("schema");
    out.insert(
        "function-calling".into(),
        function_calling(&properties, schema),
    );
    if let Some(schema) = schema {
        out.insert("schema".into(), schema_summary(schema));
    }
    // Size limits are lifted out of the properties so that callers need not know their IDs;
    // schema defaults such as `max_tokens` are deliberately not treated as limits.
    let limits: Map<String, Value> = LIMIT_PROPERTIES
        .iter()
        .filter_map(|k| Some(((*k).to_owned(), properties.get(*k)?.clone())))
        .collect();
    if !limits.is_empty() {
        out.insert("limits".into(), Value::Object(limits));
    }
    if !properties.is_empty() {
        out.insert("properties".into(), Value::Object(properties));
    }
    let mut truncated = false;
    let mut value = Value::Object(out);
    // Credentials are masked before anything is cut, so a cut can never expose a fragment.
    redact_record(&mut value, secrets);
    let mut value = bound(&value, 0, &mut truncated);
    // Cut strings can still add up (and escaping can make a 2,000-character string several
    // times longer in JSON), so the serialized size is what decides.
    for drop in DROP_ORDER {
        if serde_json::to_vec(&value).map_or(0, |b| b.len()) <= MAX_RECORD_BYTES {
            break;
        }
        if let Some(map) = value.as_object_mut() {
            truncated |= map.remove(*drop).is_some();
        }
    }
    if truncated && let Some(map) = value.as_object_mut() {
        map.insert("metadata-truncated".into(), json!(true));
    }
    Some(ModelInfo {
        id,
        context_length,
        record: Some(value),
        interface: Some(interface),
        category,
        pricing: None,
    })
}

/// The interface of a catalog entry. The input schema is read first, because a task is not
/// an interface: a state with typed `questions` is a decision model and typed `fields` an
/// extraction model, whatever their task. Otherwise the task name decides.
fn interface_of(task: Option<&str>, schema: Option<&Value>) -> ModelInterface {
    let inputs = input_names(schema);
    if inputs.contains(&"questions") && inputs.contains(&"state") {
        return ModelInterface::Decision;
    }
    if inputs.contains(&"fields") {
        return ModelInterface::Extraction;
    }
    let Some(task) = task.and_then(category_of) else {
        return ModelInterface::Unknown;
    };
    let id = task.id.as_str();
    if id == "text-generation" {
        ModelInterface::Chat
    } else if id.contains("embedding") {
        ModelInterface::Embedding
    } else if id.contains("image") || id == "object-detection" {
        ModelInterface::Image
    } else if ["speech", "audio", "voice"].iter().any(|w| id.contains(w)) {
        ModelInterface::Audio
    } else {
        ModelInterface::Unknown
    }
}

/// The most alternatives (`oneOf`/`anyOf` branches) of an input schema that are read.
const MAX_SCHEMA_BRANCHES: usize = 64;

/// The top-level property names of an input schema, including those of each `oneOf` or
/// `anyOf` alternative (chat models list a prompt form and a messages form).
fn input_names(schema: Option<&Value>) -> Vec<&str> {
    let Some(input) = schema.and_then(|s| s.get("input")) else {
        return Vec::new();
    };
    let branches = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| input.get(*k).and_then(Value::as_array))
        .flat_map(|items| items.iter().take(MAX_SCHEMA_BRANCHES));
    std::iter::once(input)
        .chain(branches)
        .filter_map(|s| s.get("properties").and_then(Value::as_object))
        .flat_map(|props| props.keys().map(String::as_str))
        .collect()
}

/// The category a task name makes, or `None` when the name is unusable: blank, longer than
/// [`MAX_TASK_NAME_CHARS`], holding control characters, or without a letter or digit.
fn category_of(name: &str) -> Option<TaskCategory> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_TASK_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return None;
    }
    let mut id = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_alphanumeric() {
            id.extend(c.to_lowercase());
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_end_matches('-');
    (!id.is_empty() && id.chars().count() <= MAX_TASK_NAME_CHARS).then(|| TaskCategory {
        id: id.to_owned(),
        name: name.to_owned(),
    })
}

/// `supported: false` when reported so, `advertised` when the property says so or the
/// schema mentions `tools`/`tool_calls`, otherwise `unknown`.
fn function_calling(properties: &Map<String, Value>, schema: Option<&Value>) -> Value {
    let reported = properties.get("function_calling").map(|v| match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.parse::<bool>().ok(),
        _ => None,
    });
    match reported.flatten() {
        Some(false) => json!({ "supported": false }),
        Some(true) => json!({ "status": "advertised" }),
        None if schema.is_some_and(|s| mentions_tools(s, 0)) => json!({ "status": "advertised" }),
        None => json!({ "status": "unknown" }),
    }
}

fn mentions_tools(value: &Value, depth: usize) -> bool {
    if depth > 16 {
        return false;
    }
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "tools" || k == "tool_calls" || mentions_tools(v, depth + 1)),
        Value::Array(items) => items.iter().any(|v| mentions_tools(v, depth + 1)),
        _ => false,
    }
}

/// The top-level property names of the input and output schemas.
fn schema_summary(schema: &Value) -> Value {
    let names = |side: &str| -> Vec<String> {
        let s = schema.get(side);
        let props = s
            .and_then(|s| s.get("properties"))
            .or_else(|| s.and_then(|s| s.get("oneOf")?.get(0)?.get("properties")));
        props
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    json!({ "input": names("input"), "output": names("output") })
}

/// Redacts credentials from every string and key of a record. Keys are rewritten too: a
/// record is data for display, not a schema whose names matter.
fn redact_record(value: &mut Value, secrets: &yetibot_redaction::Secrets) {
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = secrets.redact_text(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_record(v, secrets)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                redact_record(&mut item, secrets);
                let key = match secrets.redact_text(&key) {
                    std::borrow::Cow::Owned(clean) => clean,
                    std::borrow::Cow::Borrowed(_) => key,
                };
                map.insert(key, item);
            }
        }
        _ => {}
    }
}

fn bound(value: &Value, depth: usize, truncated: &mut bool) -> Value {
    match value {
        Value::String(s) if s.chars().count() > MAX_RECORD_STRING_CHARS => {
            *truncated = true;
            Value::String(s.chars().take(MAX_RECORD_STRING_CHARS).collect())
        }
        Value::Array(_) | Value::Object(_) if depth >= MAX_RECORD_DEPTH => {
            *truncated = true;
            Value::Null
        }
        Value::Array(items) => {
            *truncated |= items.len() > MAX_RECORD_ENTRIES;
            items
                .iter()
                .take(MAX_RECORD_ENTRIES)
                .map(|v| bound(v, depth + 1, truncated))
                .collect()
        }
        Value::Object(map) => {
            *truncated |= map.len() > MAX_RECORD_ENTRIES;
            Value::Object(
                map.iter()
                    .take(MAX_RECORD_ENTRIES)
                    .map(|(k, v)| (k.clone(), bound(v, depth + 1, truncated)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any task name gives either no category or a well-formed, bounded ID, and an ASCII
        /// name that differs only in case or separators gives the same one.
        #[test]
        fn category_ids_are_well_formed(name in "\\PC{0,120}|[ -~]{0,40}") {
            if let Some(category) = category_of(&name) {
                let id = &category.id;
                prop_assert!(!id.is_empty());
                prop_assert!(id.chars().count() <= MAX_TASK_NAME_CHARS);
                prop_assert!(!id.starts_with('-') && !id.ends_with('-') && !id.contains("--"));
                prop_assert!(id.chars().all(|c| c == '-' || c.is_alphanumeric()));
                prop_assert_eq!(category.name.as_str(), name.trim());
                if name.is_ascii() {
                    let shouted = category_of(&name.to_ascii_uppercase().replace(' ', "_"));
                    prop_assert_eq!(shouted.map(|c| c.id), Some(id.clone()));
                }
            }
        }

        /// The label never depends on anything but the task and the input schema's names.
        #[test]
        fn interfaces_never_panic(task in proptest::option::of("\\PC{0,40}"), key in "[a-z]{0,10}") {
            let schema = json!({"input": {"oneOf": [{"properties": {key: {}}}]}});
            let _ = interface_of(task.as_deref(), Some(&schema));
        }
    }

    #[test]
    fn task_names_map_to_interfaces() {
        let check = |task: &str, expected: ModelInterface| {
            assert_eq!(interface_of(Some(task), None), expected, "{task}");
        };
        check("Text Generation", ModelInterface::Chat);
        check("text generation", ModelInterface::Chat);
        check("Text Embeddings", ModelInterface::Embedding);
        check("Image Classification", ModelInterface::Image);
        check("Summarization", ModelInterface::Unknown);
        check("Text Classification", ModelInterface::Unknown);
        assert_eq!(interface_of(None, None), ModelInterface::Unknown);
        // One of Clef's two required inputs alone is not enough.
        let questions = json!({"input": {"properties": {"questions": {}}}});
        assert_eq!(
            interface_of(Some("Text Generation"), Some(&questions)),
            ModelInterface::Chat
        );
    }
}
