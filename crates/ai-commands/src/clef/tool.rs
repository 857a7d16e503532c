//! The `clef` and `clairic` native tools: the same requests as the commands, with the
//! bounded argument subset their schemas publish. Arguments are checked as a whole before any
//! image is fetched or anything is sent; results keep only the typed answers, their
//! confidence and null metadata, the model and the truncation flags.

use serde_json::{Map, Value, json};
use yetibot_redaction::Secrets;
use yetibot_tool_policy::Execution;

use super::schema::{self, Strictness};
use super::wire::Model;
use super::{Failure, Job};
use crate::args::ToolArgs;
use crate::images;
use crate::services::AiServices;

// The longest arguments text, schema and escaping included: the shared catalog's bound,
// checked here too so that the tool's own error names it.
use yetibot_conversation::limits::MAX_ARGUMENT_CHARS;
/// The longest `input`, in characters.
pub(crate) const MAX_INPUT_CHARS: usize = 12_000;
/// The longest result, as JSON text, in characters.
pub(crate) const MAX_RESULT_CHARS: usize = 18_000;

/// What Clef's tool is told.
pub(crate) const CLEF_DESCRIPTION: &str = "Cloudflare Clef: grounded yes/no, choice and score \
decisions with probabilities about the given input text and/or images. Ask one plain yes/no \
`question` (answered as `decision`, the probability of yes) or 1-64 typed `questions`. It \
classifies; it does not write text or grant any permission. The input and images are sent to \
Cloudflare and may be charged; a failed call is not retried.";

/// What Clairic's tool is told.
pub(crate) const CLAIRIC_DESCRIPTION: &str = "Cloudflare Clairic: extracts 1-64 typed `fields` \
(text, number, date, time, datetime, duration, list, estimate, forecast) from the given input \
text and/or images. A field the source does not give comes back as null. It extracts; it does \
not write text or grant any permission. The input and images are sent to Cloudflare and may \
be charged; a failed call is not retried.";

fn images_schema() -> Value {
    json!({
        "type": "array",
        "maxItems": images::MAX_IMAGES,
        "items": {"type": "string", "maxLength": 4096},
        "description": "Public https URLs of PNG, JPEG or WebP images to fetch and include (at most 4, with the message's own attachments). URLs written in input stay text."
    })
}

fn input_schema() -> Value {
    json!({
        "type": "string",
        "maxLength": MAX_INPUT_CHARS,
        "description": "The text to judge or extract from (at most 12,000 characters)."
    })
}

/// Clef's argument schema.
pub(crate) fn clef_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "maxLength": 2000, "description": "One plain yes/no question; the answer is named decision."},
            "questions": {
                "type": "object",
                "description": "1-64 questions by ID (letters, digits, _ . -, at most 100 characters).",
                "minProperties": 1,
                "maxProperties": 64,
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "enum": ["noul", "choice", "score"]},
                        "instructions": {"type": "string", "maxLength": 2000},
                        "criteria": {"description": "noul: optional {\"true\": text, \"false\": text}; choice: 2-255 option IDs mapped to descriptions; score: 2-10 level descriptions, lowest first."}
                    },
                    "required": ["type", "instructions"],
                    "additionalProperties": false
                }
            },
            "input": input_schema(),
            "images": images_schema()
        },
        "additionalProperties": false
    })
}

/// Clairic's argument schema.
pub(crate) fn clairic_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "fields": {
                "type": "object",
                "description": "1-64 fields by ID (starting with a letter or _, then letters, digits, _ . -, at most 64 characters).",
                "minProperties": 1,
                "maxProperties": 64,
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "enum": schema::FIELD_TYPES},
                        "instructions": {"type": "string", "maxLength": 2000},
                        "unit": {"type": "string", "description": "number: any unit; duration: seconds, minutes, hours, days, weeks, months or years."},
                        "decimals": {"type": "integer", "minimum": 0, "maximum": 6},
                        "items": {"type": "string", "enum": schema::LIST_ITEM_TYPES},
                        "min": {"description": "estimate/forecast: a number or YYYY-MM-DD date below max."},
                        "max": {"description": "estimate/forecast: a number or YYYY-MM-DD date above min."}
                    },
                    "required": ["type"],
                    "additionalProperties": false
                }
            },
            "input": input_schema(),
            "images": images_schema()
        },
        "required": ["fields"],
        "additionalProperties": false
    })
}

/// A checked call.
#[derive(Debug)]
pub(crate) struct Call {
    schema: Map<String, Value>,
    input: Option<String>,
    urls: Vec<String>,
}

/// Reads and checks a call with no I/O.
///
/// # Errors
///
/// A message naming what is wrong, never quoting the arguments.
pub(crate) fn read(model: Model, arguments: &str, secrets: &Secrets) -> Result<Call, String> {
    if arguments.chars().count() > MAX_ARGUMENT_CHARS {
        return Err(format!(
            "the arguments are over {MAX_ARGUMENT_CHARS} characters"
        ));
    }
    if secrets.contains_secret(arguments) {
        return Err("the arguments quote a configured credential".to_owned());
    }
    let args = ToolArgs::parse(arguments).map_err(str::to_owned)?;
    let to_serde = |value: &yetibot_json_util::Value| -> Result<Value, String> {
        serde_json::from_str(&value.to_json())
            .map_err(|_| "the arguments cannot be read".to_owned())
    };
    let schema = match model {
        Model::Clef => {
            args.only(
                &["question", "questions", "input", "images"],
                "clef accepts only question, questions, input and images",
            )
            .map_err(str::to_owned)?;
            match (args.get("question"), args.get("questions")) {
                (Some(question), None) => {
                    let question = to_serde(question)?;
                    let mut questions = Map::new();
                    questions.insert(
                        "decision".to_owned(),
                        json!({"type": "noul", "instructions": question}),
                    );
                    schema::questions(&Value::Object(questions), Strictness::Tool).map_err(
                        |_| "question must be non-empty text of at most 2000 characters".to_owned(),
                    )?
                }
                (None, Some(questions)) => {
                    schema::questions(&to_serde(questions)?, Strictness::Tool)?
                }
                _ => return Err("give either question or questions".to_owned()),
            }
        }
        Model::Clairic => {
            args.only(
                &["fields", "input", "images"],
                "clairic accepts only fields, input and images",
            )
            .map_err(str::to_owned)?;
            let fields = args.get("fields").ok_or("fields is required")?;
            schema::fields(&to_serde(fields)?, Strictness::Tool)?
        }
    };
    let input = args
        .text(
            "input",
            0..=MAX_INPUT_CHARS,
            "input must be text of at most 12,000 characters",
        )
        .map_err(str::to_owned)?
        .filter(|input| !input.trim().is_empty());
    let urls: Vec<String> = match args.get("images") {
        None => Vec::new(),
        Some(yetibot_json_util::Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or("images must be a list of URLs")?,
        Some(_) => return Err("images must be a list of URLs".to_owned()),
    };
    // Input or an image is checked at run time, when the message's attachments are known.
    images::check(&urls, Vec::new())?;
    Ok(Call {
        schema,
        input,
        urls,
    })
}

/// Runs one call. Failures before the request is sent are tool errors; once it may have
/// reached Cloudflare, the outcome is unknown and never retried.
pub(crate) async fn run(
    services: &AiServices,
    caller: &yetibot_command::Caller,
    model: Model,
    arguments: &str,
    secrets: &Secrets,
) -> Execution {
    let call = match read(model, arguments, secrets) {
        Ok(call) => call,
        Err(problem) => return Execution::ToolError(format!("invalid arguments: {problem}")),
    };
    // The request's own image attachments join the explicit URLs (the model cannot name
    // them), and the whole set is checked again before anything is fetched.
    let sources = match images::check(&call.urls, images::attached(caller)) {
        Ok(sources) => sources,
        Err(problem) => return Execution::ToolError(format!("invalid arguments: {problem}")),
    };
    if call.input.is_none() && sources.is_empty() {
        return Execution::ToolError(
            "invalid arguments: give input text, images, or both".to_owned(),
        );
    }
    let body = super::wire::body(
        model,
        &Value::String(call.input.clone().unwrap_or_default()),
        &call.schema,
        &[],
    )
    .to_string();
    let texts = std::iter::once(body.as_str()).chain(sources.iter().map(images::Source::url));
    let credentials = match super::credentials(services, model, texts).await {
        Ok(credentials) => credentials,
        Err(Failure::NotSent(message) | Failure::Unknown(message)) => {
            return Execution::ToolError(message);
        }
    };
    let images = match images::fetch(services, caller, &sources).await {
        Ok(images) => images,
        Err(problem) => return Execution::ToolError(problem),
    };
    let job = Job {
        model,
        state: Value::String(call.input.unwrap_or_default()),
        schema: call.schema,
        images,
    };
    match super::run(services, &job, credentials).await {
        Ok(done) => {
            let answers = sanitized(model, &done.reply.answers);
            let result = bounded(json!({
                "model": done.reply.model,
                "answers": answers,
                "truncated": done.reply.truncated,
            }));
            let result = secrets.redact_json(&done.secrets.redact_json(&result));
            Execution::Success(result.to_string())
        }
        Err(Failure::NotSent(message)) => Execution::ToolError(message),
        Err(Failure::Unknown(_)) => Execution::Unknown,
    }
}

/// Each answer with only its typed fields.
fn sanitized(model: Model, answers: &Map<String, Value>) -> Map<String, Value> {
    let keep: &[&str] = match model {
        Model::Clef => &[
            "type",
            "noul",
            "choice",
            "score",
            "legend",
            "probabilities",
            "confidence",
        ],
        Model::Clairic => &["value", "confidence", "null_reason"],
    };
    answers
        .iter()
        .map(|(id, answer)| {
            let kept: Map<String, Value> = answer
                .as_object()
                .map(|fields| {
                    fields
                        .iter()
                        .filter(|(key, _)| keep.contains(&key.as_str()))
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect()
                })
                .unwrap_or_default();
            (id.clone(), Value::Object(kept))
        })
        .collect()
}

/// The result within [`MAX_RESULT_CHARS`]: strings and lists shortened step by step, and
/// `output_truncated` set when anything was.
fn bounded(result: Value) -> Value {
    let mut shortened = false;
    let mut current = result.clone();
    for (max_chars, max_items) in [
        (usize::MAX, usize::MAX),
        (2_000, 64),
        (400, 16),
        (80, 4),
        (0, 0),
    ] {
        if max_chars != usize::MAX {
            current = shorten(&result, max_chars, max_items, &mut shortened);
        }
        if current.to_string().chars().count() <= MAX_RESULT_CHARS {
            break;
        }
    }
    if current.to_string().chars().count() > MAX_RESULT_CHARS {
        current = json!({"answers": {}, "output_truncated": true});
    }
    if let Value::Object(object) = &mut current {
        object.insert("output_truncated".to_owned(), Value::Bool(shortened));
    }
    current
}

fn shorten(value: &Value, max_chars: usize, max_items: usize, shortened: &mut bool) -> Value {
    match value {
        Value::String(text) if text.chars().count() > max_chars => {
            *shortened = true;
            Value::String(text.chars().take(max_chars).collect())
        }
        Value::Array(items) => {
            if items.len() > max_items {
                *shortened = true;
            }
            Value::Array(
                items
                    .iter()
                    .take(max_items)
                    .map(|item| shorten(item, max_chars, max_items, shortened))
                    .collect(),
            )
        }
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, item)| (key.clone(), shorten(item, max_chars, max_items, shortened)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clef(arguments: &str) -> Result<Call, String> {
        read(Model::Clef, arguments, &Secrets::empty())
    }

    #[test]
    fn clef_takes_a_question_or_questions_with_input_or_images() {
        let call = clef(r#"{"question": "Is it down?", "input": "service is down"}"#).unwrap();
        assert_eq!(call.schema["decision"]["type"], "noul");
        for (bad, says) in [
            (r#"{"input": "x"}"#, "either question or questions"),
            (
                r#"{"question": "q", "questions": {}, "input": "x"}"#,
                "either question",
            ),
            (
                r#"{"question": "q", "input": "x", "event": "1"}"#,
                "accepts only",
            ),
            (
                r#"{"question": "q", "images": ["http://a.test/x.png"]}"#,
                "https",
            ),
            (
                r#"{"question": "q", "images": ["https://a/1.png","https://a/2.png","https://a/3.png","https://a/4.png","https://a/5.png"]}"#,
                "at most 4",
            ),
        ] {
            let error = clef(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let long_input =
            json!({"question": "q", "input": "x".repeat(MAX_INPUT_CHARS + 1)}).to_string();
        assert!(clef(&long_input).unwrap_err().contains("12,000"));
        let long_args = json!({"question": "q", "input": "\\".repeat(9000)}).to_string();
        assert!(clef(&long_args).unwrap_err().contains("16384"));
    }

    #[test]
    fn clairic_fields_follow_the_tool_subset() {
        let ok = r#"{"fields": {"amount": {"type": "number", "unit": "USD", "decimals": 2}}, "input": "total USD 42"}"#;
        assert!(read(Model::Clairic, ok, &Secrets::empty()).is_ok());
        let boolean = r#"{"fields": {"paid": {"type": "boolean"}}, "input": "x"}"#;
        assert!(read(Model::Clairic, boolean, &Secrets::empty()).is_err());
    }

    #[test]
    fn a_credential_in_the_arguments_is_refused() {
        let secrets = Secrets::new(["sk-live-0123456789abcdef"]).unwrap();
        let error = read(
            Model::Clef,
            r#"{"question": "q", "input": "key sk-live-0123456789abcdef"}"#,
            &secrets,
        )
        .unwrap_err();
        assert!(error.contains("credential") && !error.contains("sk-live"));
    }

    #[test]
    fn results_keep_typed_answers_within_the_bound() {
        let mut answers = Map::new();
        answers.insert(
            "x".to_owned(),
            json!({"value": "v".repeat(30_000), "spans": [1], "raw": "extra"}),
        );
        let kept = sanitized(Model::Clairic, &answers);
        assert_eq!(kept["x"].as_object().unwrap().len(), 1);
        let result = bounded(json!({"answers": kept}));
        assert!(result.to_string().chars().count() <= MAX_RESULT_CHARS);
        assert_eq!(result["output_truncated"], true);
        let small = bounded(json!({"answers": {"x": {"value": 1}}}));
        assert_eq!(small["output_truncated"], false);
    }
}
