//! Clef's and Clairic's wire format in one place: the request body each model takes and the
//! reply it gives, read into answers and rendered as readable lines.
//!
//! Clef's is Cloudflare's published model record (`@cf/cloudflare/clef`): `{model, state,
//! questions, images}` in, `{model, answers, usage}` out, each answer typed `noul` (`noul`,
//! the probability of yes), `choice` (`choice`, `probabilities`, `confidence`) or `score`
//! (`score`, `legend`, `probabilities`, `confidence`). No Clairic record is published, so its
//! side is an assumption kept here and in the crate README: the model `@cf/cloudflare/clairic`
//! takes `{model: "clairic", state, fields, images}` and answers `{model, answers, usage}`,
//! each answer holding `value` (`null` when the source does not give it), and optionally
//! `confidence`, `guess`, `null_reason`, `spans` and `distribution`; `usage` may report
//! `image_tokens`; a reply may say `truncated` (or `input_truncated`) when the state was cut
//! to fit the model.

use serde_json::{Map, Value, json};

/// Which model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    /// Decisions.
    Clef,
    /// Extractions.
    Clairic,
}

impl Model {
    /// The command and tool name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Clef => "clef",
            Self::Clairic => "clairic",
        }
    }

    /// The Workers AI catalog ID the request runs.
    pub(crate) fn catalog_id(self) -> &'static str {
        match self {
            Self::Clef => "@cf/cloudflare/clef",
            Self::Clairic => "@cf/cloudflare/clairic",
        }
    }

    /// The request key of the schema.
    pub(crate) fn schema_key(self) -> &'static str {
        match self {
            Self::Clef => "questions",
            Self::Clairic => "fields",
        }
    }
}

/// One embedded image as the request carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EmbeddedImage {
    /// `image/png`, `image/jpeg` or `image/webp`.
    pub(crate) content_type: &'static str,
    /// The bytes, base64-encoded.
    pub(crate) base64: String,
}

impl EmbeddedImage {
    /// A loaded image, as the request embeds it.
    pub(crate) fn of(image: &yetibot_image_fetch::Image) -> Self {
        Self {
            content_type: image.media_type(),
            base64: image.to_base64(),
        }
    }
}

/// The request body.
pub(crate) fn body(
    model: Model,
    state: &Value,
    schema: &Map<String, Value>,
    images: &[EmbeddedImage],
) -> Value {
    let mut body = json!({
        "model": model.name(),
        "state": state,
        model.schema_key(): schema,
    });
    if !images.is_empty()
        && let Value::Object(object) = &mut body
    {
        object.insert(
            "images".to_owned(),
            images
                .iter()
                .map(|image| json!({"content_type": image.content_type, "base64": image.base64}))
                .collect(),
        );
    }
    body
}

/// A reply, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// The model that answered, if it said.
    pub(crate) model: Option<String>,
    /// The answers, by question or field ID, as the model gave them.
    pub(crate) answers: Map<String, Value>,
    /// The usage, as the model reported it.
    pub(crate) usage: Option<Value>,
    /// Whether the model says the input was cut to fit.
    pub(crate) truncated: bool,
}

/// Reads a model's result.
///
/// # Errors
///
/// A fixed reason when the result has no `answers` map, or an answer is not a map.
pub(crate) fn reply(result: &Value) -> Result<Reply, &'static str> {
    let answers = result
        .get("answers")
        .and_then(Value::as_object)
        .ok_or("the reply has no answers")?;
    if answers.values().any(|answer| !answer.is_object()) {
        return Err("an answer in the reply is not a map");
    }
    let truncated = ["truncated", "input_truncated"]
        .iter()
        .any(|key| result.get(*key) == Some(&Value::Bool(true)));
    Ok(Reply {
        model: result
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
        answers: answers.clone(),
        usage: result
            .get("usage")
            .filter(|usage| usage.is_object())
            .cloned(),
        truncated,
    })
}

impl Reply {
    /// Whether the model says it read no image tokens (and so may not have seen an image).
    pub(crate) fn zero_image_tokens(&self) -> bool {
        self.usage
            .as_ref()
            .and_then(|usage| usage.get("image_tokens"))
            .and_then(Value::as_u64)
            == Some(0)
    }

    /// One readable line per answer, in the request's order, with probabilities and
    /// confidence where the answer has them. `ids` are the request's IDs; an ID the reply
    /// left out says so. The number of the field `out_of_ten` (the `rate` preset's) reads as
    /// a rating, `8/10`.
    pub(crate) fn lines<'a>(
        &self,
        model: Model,
        ids: impl Iterator<Item = &'a String>,
        out_of_ten: Option<&str>,
    ) -> Vec<String> {
        ids.map(|id| match self.answers.get(id) {
            None => format!("{id}: (no answer)"),
            Some(answer) => match model {
                Model::Clef => decision_line(id, answer),
                Model::Clairic => extraction_line(id, answer, out_of_ten == Some(id.as_str())),
            },
        })
        .collect()
    }
}

/// A number as a line shows it: at most three decimals, no trailing zeros.
pub(crate) fn number(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

fn probability(answer: &Value, key: &str) -> Option<String> {
    answer.get(key).and_then(Value::as_f64).map(number)
}

fn confidence(answer: &Value) -> String {
    probability(answer, "confidence")
        .map(|c| format!(" (confidence {c})"))
        .unwrap_or_default()
}

/// The options of a `probabilities` map, most likely first, at most five.
fn distribution(answer: &Value) -> String {
    let Some(map) = answer.get("probabilities").and_then(Value::as_object) else {
        return String::new();
    };
    let mut options: Vec<(&String, f64)> = map
        .iter()
        .filter_map(|(option, p)| p.as_f64().map(|p| (option, p)))
        .collect();
    options.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let shown: Vec<String> = options
        .iter()
        .take(5)
        .map(|(option, p)| format!("{option} {}", number(*p)))
        .collect();
    if shown.is_empty() {
        String::new()
    } else {
        format!(" · {}", shown.join(", "))
    }
}

fn decision_line(id: &str, answer: &Value) -> String {
    match answer.get("type").and_then(Value::as_str) {
        Some("noul") => match answer.get("noul").and_then(Value::as_f64) {
            Some(p) => format!(
                "{id}: {} · P(yes) {}",
                if p >= 0.5 { "yes" } else { "no" },
                number(p)
            ),
            None => format!("{id}: (no probability)"),
        },
        Some("choice") => format!(
            "{id}: {}{}{}",
            scalar(answer.get("choice")),
            confidence(answer),
            distribution(answer)
        ),
        Some("score") => {
            let score = answer.get("score").and_then(Value::as_f64);
            let level = score
                .and_then(|s| {
                    let nearest = s.round();
                    (nearest >= 0.0).then(|| format!("{nearest:.0}"))
                })
                .and_then(|index| answer.get("legend")?.get(&index).map(|d| scalar(Some(d))));
            format!(
                "{id}: {}{}{}",
                score.map_or_else(|| "(no score)".to_owned(), number),
                level.map(|l| format!(" ({l})")).unwrap_or_default(),
                confidence(answer)
            )
        }
        _ => format!("{id}: {}", scalar(Some(answer))),
    }
}

fn extraction_line(id: &str, answer: &Value, out_of_ten: bool) -> String {
    let value = answer.get("value").unwrap_or(&Value::Null);
    let shown = match value {
        Value::Null => {
            let guess = answer
                .get("guess")
                .filter(|g| !g.is_null())
                .map(|g| format!(", best guess {}", scalar(Some(g))))
                .unwrap_or_default();
            format!("(not found{guess})")
        }
        Value::Number(n) if out_of_ten => {
            format!("{}/10", n.as_f64().map_or_else(|| n.to_string(), number))
        }
        Value::Array(items) => {
            if items.is_empty() {
                "(none)".to_owned()
            } else {
                items
                    .iter()
                    .map(|item| scalar(Some(item)))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }
        _ => scalar(Some(value)),
    };
    format!("{id}: {shown}{}", confidence(answer))
}

/// A value in a line: text as itself, numbers and other values as compact JSON.
fn scalar(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "(none)".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) => n.as_f64().map_or_else(|| n.to_string(), number),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_the_schema_under_the_models_key() {
        let mut schema = Map::new();
        schema.insert(
            "x".to_owned(),
            json!({"type": "noul", "instructions": "Bad?"}),
        );
        let images = [EmbeddedImage {
            content_type: "image/png",
            base64: "AA==".to_owned(),
        }];
        let clef = body(Model::Clef, &json!("down"), &schema, &images);
        assert_eq!(clef["model"], "clef");
        assert_eq!(clef["questions"]["x"]["type"], "noul");
        assert_eq!(clef["images"][0]["content_type"], "image/png");
        let clairic = body(Model::Clairic, &json!("total 42"), &schema, &[]);
        assert!(clairic.get("fields").is_some() && clairic.get("images").is_none());
    }

    #[test]
    fn every_answer_type_reads_as_a_line() {
        let result = json!({
            "model": "clef",
            "answers": {
                "decision": {"type": "noul", "noul": 0.93},
                "team": {"type": "choice", "choice": "ops", "confidence": 0.8,
                         "probabilities": {"ops": 0.9, "sales": 0.1}},
                "sev": {"type": "score", "score": 1.2, "legend": {"0": "fine", "1": "bad"},
                        "probabilities": {"0": 0.1, "1": 0.9}, "confidence": 0.7}
            },
            "usage": {"input_tokens": 10, "output_tokens": 1}
        });
        let reply = reply(&result).unwrap();
        let ids = ["decision", "team", "sev", "gone"].map(str::to_owned);
        assert_eq!(
            reply.lines(Model::Clef, ids.iter(), None),
            [
                "decision: yes · P(yes) 0.93",
                "team: ops (confidence 0.8) · ops 0.9, sales 0.1",
                "sev: 1.2 (bad) (confidence 0.7)",
                "gone: (no answer)",
            ]
        );
    }

    #[test]
    fn extractions_show_values_nulls_guesses_and_ratings() {
        let result = json!({"answers": {
            "amount": {"value": 42, "confidence": 0.97},
            "date": {"value": null, "guess": "2026-01-01"},
            "rating": {"value": 8},
            "items": {"value": ["Raccoon", "Goose"]}
        }, "usage": {"image_tokens": 0}, "truncated": true});
        let reply = reply(&result).unwrap();
        assert!(reply.truncated && reply.zero_image_tokens());
        let ids = ["amount", "date", "rating", "items"].map(str::to_owned);
        assert_eq!(
            reply.lines(Model::Clairic, ids.iter(), Some("rating")),
            [
                "amount: 42 (confidence 0.97)",
                "date: (not found, best guess 2026-01-01)",
                "rating: 8/10",
                "items: Raccoon, Goose",
            ]
        );
        // Only the rate preset's field is a rating: an explicit field named `rating` is a
        // plain number.
        assert_eq!(
            reply.lines(Model::Clairic, ["rating".to_owned()].iter(), None),
            ["rating: 8"]
        );
    }

    #[test]
    fn a_reply_without_answers_is_refused() {
        assert!(reply(&json!({"result": 1})).is_err());
        assert!(reply(&json!({"answers": {"x": 1}})).is_err());
    }
}
