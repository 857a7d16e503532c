//! The standalone `clef` and `clairic` commands.
//!
//! `clef <question>` asks one yes/no question (the answer `decision`, with P(yes)) about the
//! state piped in or an image; `clef --questions '<EDN>'` asks typed questions. `clairic
//! demo` is a real request on built-in text; `clairic count|how many|rate|read|list …` are
//! the quick presets, whose fields are built here; `clairic --fields '<EDN>'` asks for typed
//! fields. Everything typed is checked, and usage returned, before the configuration is read
//! or anything is fetched or sent.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use yetibot_command::{Call, CommandSpec, Handler, Outcome};

use super::schema::{self, Preset, Strictness};
use super::wire::Model;
use super::{Failure, Job, MAX_SCHEMA_CHARS, MAX_STATE_CHARS};
use crate::images;
use crate::services::AiServices;

/// The longest readable answer line, in characters.
pub(crate) const MAX_LINE_CHARS: usize = 160;

const CLEF_USAGE: &str = "clef <yes/no question> [image URL] # P(yes) as the answer `decision`, about the state piped in or an image";
const CLEF_QUESTIONS_USAGE: &str = "clef --questions '<EDN map of 1-64 questions>' [state] # typed :noul, :choice and :score questions about the state given inline, piped in or as images";
const CLAIRIC_USAGE: &str = "clairic demo | clairic count|how many|rate|read|list <what> [image URL] # quick typed extraction from the text piped in or images";
const CLAIRIC_FIELDS_USAGE: &str = "clairic --fields '<EDN map of 1-64 fields>' [state] # typed extraction: text, number, date, time, datetime, duration, list, estimate, forecast";

/// The text `clairic demo` extracts from, and the count it expects.
const DEMO_STATE: &str = "Balloon count: 3.";
const DEMO_COUNT: u64 = 3;

/// The `clef` and `clairic` commands over these services.
pub(crate) fn specs(services: &Arc<AiServices>) -> Vec<CommandSpec> {
    let clef = Standalone {
        services: Arc::clone(services),
        model: Model::Clef,
    };
    let clairic = Standalone {
        services: Arc::clone(services),
        model: Model::Clairic,
    };
    vec![
        CommandSpec::new("clef", &[crate::request::CATEGORY])
            .hints(crate::request::PAID)
            .route(Some(r"^--questions\b"), CLEF_QUESTIONS_USAGE, clef.clone())
            .route(None, CLEF_USAGE, clef),
        CommandSpec::new("clairic", &[crate::request::CATEGORY])
            .hints(crate::request::PAID)
            .route(Some(r"^--fields\b"), CLAIRIC_FIELDS_USAGE, clairic.clone())
            .route(None, CLAIRIC_USAGE, clairic),
    ]
}

#[derive(Clone)]
struct Standalone {
    services: Arc<AiServices>,
    model: Model,
}

impl Handler for Standalone {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let request = match read(self.model, call.typed_args()) {
                Ok(request) => request,
                Err(problem) => return Outcome::error(problem),
            };
            answer(&self.services, self.model, &call, request).await
        })
    }
}

/// A request as typed, checked.
#[derive(Debug, Clone, PartialEq)]
struct Typed {
    schema: Map<String, Value>,
    /// State typed after the schema (image URLs taken out).
    state: String,
    /// Image URLs typed anywhere in the request.
    urls: Vec<String>,
    /// The demo: built-in state, nothing piped, no images.
    demo: bool,
    /// The quick preset the request used, if any.
    preset: Option<Preset>,
}

/// Reads the typed arguments: every problem is the command's usage, with what was wrong. A
/// plain question or a preset's request is held to the schema bound too, as the schema it
/// becomes.
fn read(model: Model, typed: &str) -> Result<Typed, String> {
    let read = read_request(model, typed)?;
    let chars = Value::Object(read.schema.clone())
        .to_string()
        .chars()
        .count();
    if chars > MAX_SCHEMA_CHARS {
        return Err(usage(
            model,
            &format!("the request is over {MAX_SCHEMA_CHARS} characters as questions or fields"),
        ));
    }
    Ok(read)
}

/// The command's usage lines after `problem`.
fn usage(model: Model, problem: &str) -> String {
    let (plain, schema) = match model {
        Model::Clef => (CLEF_USAGE, CLEF_QUESTIONS_USAGE),
        Model::Clairic => (CLAIRIC_USAGE, CLAIRIC_FIELDS_USAGE),
    };
    format!("{problem}\nusage: {plain}\nusage: {schema}")
}

fn read_request(model: Model, typed: &str) -> Result<Typed, String> {
    let usage = |problem: &str| usage(model, problem);
    let typed = typed.trim();
    let flag = match model {
        Model::Clef => "--questions",
        Model::Clairic => "--fields",
    };
    if let Some(rest) = typed.strip_prefix(flag)
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    {
        let (text, rest) = argument(rest.trim_start())
            .ok_or_else(|| usage(&format!("{flag} needs one quoted EDN map")))?;
        if text.chars().count() > MAX_SCHEMA_CHARS {
            return Err(usage(&format!(
                "the {} are over {MAX_SCHEMA_CHARS} characters",
                model.schema_key()
            )));
        }
        let value = yetibot_json_util::edn::parse(text)
            .map_err(|error| usage(&format!("{flag} is not an EDN map: {error}")))?;
        let schema = match model {
            Model::Clef => schema::questions(&value, Strictness::Command),
            Model::Clairic => schema::fields(&value, Strictness::Command),
        }
        .map_err(|problem| usage(&problem))?;
        let (state, urls) = take_urls(rest);
        return Ok(Typed {
            schema,
            state,
            urls,
            demo: false,
            preset: None,
        });
    }
    if typed.starts_with("--") {
        let option = typed.split_whitespace().next().unwrap_or_default();
        return Err(usage(&format!(
            "unknown option {}",
            option.chars().take(40).collect::<String>()
        )));
    }
    let (request, urls) = take_urls(typed);
    match model {
        Model::Clef => {
            if request.is_empty() {
                return Err(usage("ask a yes/no question"));
            }
            let mut schema = Map::new();
            schema.insert(
                "decision".to_owned(),
                json!({"type": "noul", "instructions": request}),
            );
            Ok(Typed {
                schema,
                state: String::new(),
                urls,
                demo: false,
                preset: None,
            })
        }
        Model::Clairic if request.eq_ignore_ascii_case("demo") && urls.is_empty() => Ok(Typed {
            schema: Preset::Count.fields("the balloons"),
            state: DEMO_STATE.to_owned(),
            urls: Vec::new(),
            demo: true,
            preset: Some(Preset::Count),
        }),
        Model::Clairic => match Preset::parse(&request) {
            Some((_, "")) | None => Err(usage(
                "start the request with count, how many, rate, read or list, and say what",
            )),
            Some((preset, what)) => Ok(Typed {
                schema: preset.fields(what),
                state: String::new(),
                urls,
                demo: false,
                preset: Some(preset),
            }),
        },
    }
}

/// One argument: text in single or double quotes (ended by the first matching quote that is
/// followed by whitespace or the end), or, unquoted, the whole rest. Returns the argument
/// and what follows it.
fn argument(text: &str) -> Option<(&str, &str)> {
    let Some(quote) = text.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
        return (!text.is_empty()).then_some((text, ""));
    };
    let body = &text[1..];
    let mut from = 0;
    while let Some(at) = body[from..].find(quote) {
        let at = from + at;
        let after = &body[at + 1..];
        if after.is_empty() || after.starts_with(char::is_whitespace) {
            return Some((&body[..at], after.trim_start()));
        }
        from = at + 1;
    }
    None
}

/// The text without its image URLs, and those URLs.
fn take_urls(text: &str) -> (String, Vec<String>) {
    let urls: Vec<String> = yetibot_image_fetch::image_urls_in(text)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let rest: Vec<&str> = text
        .split_whitespace()
        .filter(|word| !urls.iter().any(|url| url == word))
        .collect();
    (rest.join(" "), urls)
}

/// The state piped in: text as it is, a collection of strings one per line; any other
/// collection or structure is structured state for Clef and JSON text for Clairic.
fn piped_state(model: Model, raw: &yetibot_json_util::Value) -> Option<Value> {
    use yetibot_json_util::Value as V;
    match raw {
        V::String(text) if text.trim().is_empty() => None,
        V::String(text) => Some(Value::String(text.clone())),
        V::Array(items) if items.is_empty() => None,
        V::Array(items) if items.iter().all(|item| matches!(item, V::String(_))) => {
            Some(Value::String(
                items
                    .iter()
                    .filter_map(V::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
            ))
        }
        V::Array(_) | V::Object(_) => {
            let json = raw.to_json();
            match model {
                Model::Clef => serde_json::from_str(&json).ok(),
                Model::Clairic => Some(Value::String(json)),
            }
        }
        V::Null => None,
        other => Some(Value::String(other.to_json())),
    }
}

/// The state's size in characters, as text or JSON text.
fn state_chars(state: &Value) -> usize {
    match state {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}

/// Runs a checked request and shapes its answer.
async fn answer(services: &AiServices, model: Model, call: &Call<'_>, typed: Typed) -> Outcome {
    let name = model.name();
    // The state: what was typed after the schema, then what was piped in (the demo takes
    // neither pipe nor attachments).
    let piped = if typed.demo {
        None
    } else {
        piped_state(model, call.raw)
    };
    let piped_text = match &piped {
        Some(Value::String(text)) => text.clone(),
        _ => String::new(),
    };
    let state = match (typed.state.is_empty(), piped) {
        (true, None) => Value::String(String::new()),
        (true, Some(piped)) => piped,
        (false, None) => Value::String(typed.state.clone()),
        (false, Some(Value::String(piped))) => Value::String(format!("{}\n{piped}", typed.state)),
        (false, Some(structured)) => json!({"text": typed.state, "data": structured}),
    };
    if state_chars(&state) > MAX_STATE_CHARS {
        return Outcome::error(format!(
            "{name}: the input is over {MAX_STATE_CHARS} characters; select less of it"
        ));
    }
    // Image URLs typed, then piped: collecting stops one past the bound, which the check
    // below refuses.
    let mut urls = typed.urls.clone();
    for url in yetibot_image_fetch::image_urls_in(&piped_text) {
        if urls.len() > images::MAX_IMAGES {
            break;
        }
        if !urls.iter().any(|u| u == url) {
            urls.push(url.to_owned());
        }
    }
    let attached = if typed.demo {
        Vec::new()
    } else {
        images::attached(call.runner.caller())
    };
    let sources = match images::check(&urls, attached) {
        Ok(sources) => sources,
        Err(problem) => return Outcome::error(format!("{name}: {problem}")),
    };
    if state == Value::String(String::new()) && sources.is_empty() {
        return Outcome::error(format!(
            "{name}: nothing to read: pipe text into it, add the state after the schema, or give \
             an image URL (a question is not its own state)"
        ));
    }
    // The token is read, and the request checked for credentials (its text and every URL
    // it would fetch), before anything is fetched or sent.
    let body = super::wire::body(model, &state, &typed.schema, &[]).to_string();
    let texts = std::iter::once(body.as_str()).chain(sources.iter().map(images::Source::url));
    let credentials = match super::credentials(services, model, texts).await {
        Ok(credentials) => credentials,
        Err(Failure::NotSent(message) | Failure::Unknown(message)) => {
            return Outcome::error(message);
        }
    };
    let fetched = match images::fetch(services, call.runner.caller(), &sources).await {
        Ok(fetched) => fetched,
        Err(problem) => return Outcome::error(format!("{name}: {problem}")),
    };
    let image_count = fetched.len();
    let job = Job {
        model,
        state,
        schema: typed.schema,
        images: fetched,
    };
    let done = match super::run(services, &job, credentials).await {
        Ok(done) => done,
        Err(Failure::NotSent(message) | Failure::Unknown(message)) => {
            return Outcome::error(message);
        }
    };
    let reply = &done.reply;
    let mut notes = Vec::new();
    let rating = (typed.preset == Some(Preset::Rate)).then(|| Preset::Rate.field());
    let mut lines = reply.lines(model, job.schema.keys(), rating);
    if typed.demo {
        let count = reply
            .answers
            .get("count")
            .and_then(|answer| answer.get("value"));
        let passed = count.and_then(Value::as_f64) == Some(DEMO_COUNT as f64);
        lines.insert(
            0,
            if passed {
                format!("demo passed: Clairic read the count {DEMO_COUNT} from \"{DEMO_STATE}\"")
            } else {
                format!("demo failed: Clairic was asked for the count in \"{DEMO_STATE}\" and did not answer {DEMO_COUNT}")
            },
        );
    }
    let mut shortened = false;
    for line in &mut lines {
        if line.chars().count() > MAX_LINE_CHARS {
            *line = line.chars().take(MAX_LINE_CHARS - 1).collect::<String>() + "…";
            shortened = true;
        }
    }
    if shortened {
        notes.push(format!(
            "long answer lines are shortened to {MAX_LINE_CHARS} characters; the data holds every answer whole"
        ));
    }
    if reply.truncated {
        notes.push(
            "Cloudflare cut the input to fit the model: the answers may have missed part of it"
                .to_owned(),
        );
    }
    if image_count > 0 && reply.zero_image_tokens() {
        notes.push(
            "Cloudflare reports zero image tokens: the image may not have been read (see data $.usage.image_tokens)"
                .to_owned(),
        );
    }
    let mut request = Map::new();
    request.insert("model".to_owned(), json!(model.catalog_id()));
    request.insert(
        model.schema_key().to_owned(),
        Value::Object(job.schema.clone()),
    );
    request.insert("images".to_owned(), json!(image_count));
    request.insert("state_chars".to_owned(), json!(state_chars(&job.state)));
    let mut data = json!({
        "model": reply.model,
        "answers": reply.answers,
        "usage": reply.usage,
        "truncated": reply.truncated,
        "request": request,
    });
    if typed.demo
        && let Value::Object(object) = &mut data
    {
        let count = reply
            .answers
            .get("count")
            .and_then(|a| a.get("value"))
            .cloned();
        object.insert(
            "demo".to_owned(),
            json!({"expected": DEMO_COUNT, "value": count, "passed": lines[0].starts_with("demo passed")}),
        );
    }
    let data = done.secrets.redact_json(&data);
    let Ok(data) = yetibot_json_util::Value::parse(&data.to_string()) else {
        return Outcome::error(format!(
            "{name}: the answer is too large to keep as data (the request did run)"
        ));
    };
    Outcome::Data {
        value: yetibot_json_util::Value::String(lines.join("\n")),
        data: Some(data),
        path: None,
    }
    .with_notes(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_questions_become_the_decision() {
        let typed = read(
            Model::Clef,
            "Is this a receipt? https://example.com/receipt.png",
        )
        .unwrap();
        assert_eq!(
            typed.schema["decision"]["instructions"],
            "Is this a receipt?"
        );
        assert_eq!(typed.urls, ["https://example.com/receipt.png"]);
        assert!(read(Model::Clef, "").unwrap_err().contains("usage: clef"));
    }

    #[test]
    fn schemas_are_one_quoted_edn_argument_and_state_may_follow() {
        let typed = read(
            Model::Clef,
            r#"--questions '{:x {:type :noul :instructions "Bad?"}}' the service is down"#,
        )
        .unwrap();
        assert_eq!(typed.schema["x"]["type"], "noul");
        assert_eq!(typed.state, "the service is down");
        let fields = read(Model::Clairic, r#"--fields '{:amount :number}'"#).unwrap();
        assert_eq!(fields.schema["amount"], json!({"type": "number"}));
        let unquoted = read(Model::Clairic, "--fields {:x :number}").unwrap();
        assert_eq!(unquoted.schema["x"], json!({"type": "number"}));
        for (bad, says) in [
            ("--questions", "needs one quoted EDN map"),
            ("--questions '{:x (System/exit 0)}'", "is not an EDN map"),
            (
                "--questions '{:x {:type :noul}}'",
                "non-empty :instructions",
            ),
            ("--questions '{:x 1", "needs one quoted EDN map"),
            ("--verbose hi", "unknown option --verbose"),
        ] {
            let error = read(Model::Clef, bad).unwrap_err();
            assert!(
                error.contains(says) && error.contains("usage: clef"),
                "{bad}: {error}"
            );
        }
        let long = format!("--fields '{{:x \"{}\"}}'", "a".repeat(MAX_SCHEMA_CHARS));
        assert!(
            read(Model::Clairic, &long)
                .unwrap_err()
                .contains("over 16384")
        );
    }

    #[test]
    fn a_plain_question_or_preset_is_held_to_the_schema_bound() {
        let long = "x".repeat(MAX_SCHEMA_CHARS);
        let error = read(Model::Clef, &format!("Is it {long}?")).unwrap_err();
        assert!(error.contains("over 16384 characters") && error.contains("usage: clef"));
        assert!(read(Model::Clairic, &format!("count {long}")).is_err());
        assert!(read(Model::Clef, &"x".repeat(10_000)).is_ok());
    }

    #[test]
    fn clairic_takes_the_demo_and_the_presets_only() {
        let demo = read(Model::Clairic, "demo").unwrap();
        assert!(demo.demo && demo.state == DEMO_STATE);
        let count = read(Model::Clairic, "count helicopters").unwrap();
        assert!(count.schema.contains_key("count") && count.state.is_empty());
        assert!(
            read(Model::Clairic, "what is this")
                .unwrap_err()
                .contains("usage: clairic")
        );
        assert!(read(Model::Clairic, "count").is_err());
    }

    #[test]
    fn piped_values_become_state() {
        use yetibot_json_util::Value as V;
        let lines = V::Array(vec![V::String("a".into()), V::String("b".into())]);
        assert_eq!(piped_state(Model::Clef, &lines), Some(json!("a\nb")));
        let records = V::parse(r#"[{"x":1}]"#).unwrap();
        assert_eq!(piped_state(Model::Clef, &records), Some(json!([{"x": 1}])));
        assert_eq!(
            piped_state(Model::Clairic, &records),
            Some(json!(r#"[{"x":1}]"#))
        );
        assert_eq!(piped_state(Model::Clef, &V::String(" ".into())), None);
    }

    #[test]
    fn a_quoted_argument_ends_at_a_quote_before_whitespace() {
        assert_eq!(
            argument("'{:a \"it's\"}' rest"),
            Some(("{:a \"it's\"}", "rest"))
        );
        assert_eq!(argument("\"x\""), Some(("x", "")));
        assert_eq!(argument("'open"), None);
    }
}
