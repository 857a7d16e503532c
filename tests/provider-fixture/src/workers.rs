//! A fake Workers AI model endpoint for Clef and Clairic (`POST
//! /accounts/<id>/ai/run/@cf/cloudflare/{clef,clairic}`), answering in the wire format the
//! bot's `clef` module documents: Clef's from Cloudflare's published model record, Clairic's
//! as the bot assumes it. The "model" follows simple, predictable rules so that tests can
//! state the expected answer:
//!
//! - Clef: a `noul` question is 0.93 likely yes when the state mentions "down" and 0.12
//!   otherwise; a `choice` picks its first option (probability 0.9, confidence 0.8); a `score`
//!   lands on level 1 (confidence 0.7).
//! - Clairic: a `number` field is the first whole number in the state, or, failing that,
//!   how often the counted word of its instructions ("Count balloons ...") appears; an
//!   `estimate` is 8; a `text` field is the state's upper-case words; a `list` of text is the
//!   state's capitalised words after the first; other types are `null` with a guess.
//!
//! Usage reports `image_tokens` 256 per image, or 0 when the body's `images` have an empty
//! `base64` (so a test can exercise the zero-image-token warning).

use serde_json::{Map, Value, json};

use crate::{Recorded, Reply};

/// Answers one model request; a body that is not a model request gets a `400` whose body a
/// caller must never echo.
#[must_use]
pub fn answer(request: &Recorded) -> Reply {
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return Reply::status_json(
            400,
            r#"{"success":false,"errors":[{"message":"bad body"}]}"#,
        );
    };
    let state = match &body["state"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let images = body["images"].as_array().cloned().unwrap_or_default();
    let image_tokens: u64 = images
        .iter()
        .map(|image| {
            if image["base64"].as_str().is_some_and(str::is_empty) {
                0
            } else {
                256
            }
        })
        .sum();
    let answers: Map<String, Value> = match body["model"].as_str() {
        Some("clef") => body["questions"]
            .as_object()
            .map(|questions| {
                questions
                    .iter()
                    .map(|(id, q)| (id.clone(), decide(q, &state)))
                    .collect()
            })
            .unwrap_or_default(),
        Some("clairic") => body["fields"]
            .as_object()
            .map(|fields| {
                fields
                    .iter()
                    .map(|(id, f)| (id.clone(), extract(f, &state)))
                    .collect()
            })
            .unwrap_or_default(),
        _ => {
            return Reply::status_json(
                400,
                r#"{"success":false,"errors":[{"message":"unknown model"}]}"#,
            );
        }
    };
    let result = json!({
        "model": body["model"],
        "answers": answers,
        "usage": {
            "input_tokens": state.len() / 4 + 1,
            "output_tokens": 3,
            "image_tokens": image_tokens,
        },
    });
    Reply::json(
        json!({"result": result, "success": true, "errors": [], "messages": []}).to_string(),
    )
}

fn decide(question: &Value, state: &str) -> Value {
    match question["type"].as_str() {
        Some("choice") => {
            let options: Vec<&String> = question["criteria"]
                .as_object()
                .map(|c| c.keys().collect())
                .unwrap_or_default();
            let rest = 0.1 / (options.len().max(2) - 1) as f64;
            let probabilities: Map<String, Value> = options
                .iter()
                .enumerate()
                .map(|(i, o)| ((*o).clone(), json!(if i == 0 { 0.9 } else { rest })))
                .collect();
            json!({"type": "choice", "choice": options.first(), "probabilities": probabilities, "confidence": 0.8})
        }
        Some("score") => {
            let levels = question["criteria"].as_array().cloned().unwrap_or_default();
            let legend: Map<String, Value> = levels
                .iter()
                .enumerate()
                .map(|(i, l)| (i.to_string(), l.clone()))
                .collect();
            let probabilities: Map<String, Value> = (0..levels.len())
                .map(|i| {
                    (
                        i.to_string(),
                        json!(if i == 1 {
                            0.8
                        } else {
                            0.2 / (levels.len() - 1) as f64
                        }),
                    )
                })
                .collect();
            json!({"type": "score", "score": 1.0, "legend": legend, "probabilities": probabilities, "confidence": 0.7})
        }
        _ => {
            let p = if state.contains("down") { 0.93 } else { 0.12 };
            json!({"type": "noul", "noul": p})
        }
    }
}

fn extract(field: &Value, state: &str) -> Value {
    match field["type"].as_str() {
        Some("number") => {
            let number = state
                .split(|c: char| !c.is_ascii_digit())
                .find(|w| !w.is_empty())
                .and_then(|w| w.parse::<u64>().ok());
            let value = number.unwrap_or_else(|| {
                let instructions = field["instructions"].as_str().unwrap_or_default();
                let word = instructions
                    .strip_prefix("Count ")
                    .and_then(|rest| rest.split_whitespace().next())
                    .unwrap_or_default()
                    .trim_end_matches('s')
                    .to_lowercase();
                if word.is_empty() {
                    0
                } else {
                    state.to_lowercase().matches(&word).count() as u64
                }
            });
            json!({"value": value, "confidence": 0.95})
        }
        Some("estimate") => json!({"value": 8, "confidence": 0.4}),
        Some("text") => {
            let upper: Vec<&str> = state
                .split_whitespace()
                .filter(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()))
                .collect();
            let value = if upper.is_empty() {
                state.to_owned()
            } else {
                upper.join(" ")
            };
            json!({"value": value, "confidence": 0.9})
        }
        Some("list") => {
            let names: Vec<&str> = state
                .split_whitespace()
                .skip(1)
                .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
                .collect();
            json!({"value": names, "confidence": 0.85})
        }
        _ => {
            json!({"value": null, "guess": "2026-01-01", "null_reason": "not stated", "confidence": 0.2})
        }
    }
}

/// A Clef reply for intent routing's questions: `intent` chose `choice` with P(code_change)
/// `change`, and `explicit_change` is `explicit`, in Cloudflare's envelope.
#[must_use]
pub fn clef_intent(choice: &str, change: f64, explicit: f64) -> Reply {
    let rest = (1.0 - change) / 2.0;
    let result = json!({
        "model": "clef",
        "answers": {
            "intent": {"type": "choice", "choice": choice,
                       "probabilities": {"code_change": change, "answer": rest, "unclear": rest},
                       "confidence": 0.6},
            "explicit_change": {"type": "noul", "noul": explicit}
        },
        "usage": {"input_tokens": 40, "output_tokens": 3, "image_tokens": 0}
    });
    Reply::json(
        json!({"result": result, "success": true, "errors": [], "messages": []}).to_string(),
    )
}
