//! Chat Completions: `POST {base}/chat/completions`, as one JSON reply or a stream.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Value, json};
use yetibot_conversation::{Message, ToolCall};

use crate::config::{Provider, ToolChoiceMode};
use crate::error::{Error, Result};
use crate::sse::Events;
use crate::transport::{Client, is_event_stream};
use crate::turn::{Turn, TurnEvent, TurnRequest};
use crate::usage;

/// Builds the JSON request body.
pub(crate) fn body(provider: &Provider, model: &str, request: &TurnRequest) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message).collect();
    let mut body = json!({ "model": model, "messages": messages });
    // Tools are offered only when enabled for this turn: a definition in the request is a
    // tool the model can call, whatever `tool_choice` says (and `:tool-choice "omit"` sends
    // no choice at all), so a turn without tools carries none.
    if request.tools_enabled && provider.tool_calling() && !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.function_name(),
                        "description": t.description(),
                        "parameters": t.parameters(),
                    }
                })
            })
            .collect();
        if provider.tool_choice() == ToolChoiceMode::Standard {
            body["tool_choice"] = json!("auto");
        }
    }
    if let Some(limit) = request.max_output_tokens {
        body[provider.capabilities().output_tokens.field()] = json!(limit);
    }
    if request.stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({ "include_usage": true });
    }
    body
}

fn message(message: &Message) -> Value {
    match message {
        Message::System(text) => json!({ "role": "system", "content": text }),
        Message::User(text) => json!({ "role": "user", "content": text }),
        Message::Assistant { text, calls, .. } => {
            let mut value = json!({ "role": "assistant", "content": text });
            if !calls.is_empty() {
                value["tool_calls"] = calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": { "name": c.function_name, "arguments": c.arguments },
                        })
                    })
                    .collect();
            }
            value
        }
        Message::ToolResult {
            call_id, content, ..
        } => json!({ "role": "tool", "tool_call_id": call_id, "content": content }),
    }
}

/// Sends one Chat Completions turn.
pub(crate) async fn turn(
    client: &Client,
    provider: &Provider,
    bearer: Option<&yetibot_redaction::Secret>,
    body: Value,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    let url = format!("{}/chat/completions", provider.base_url());
    let accept = if body.get("stream").is_some() {
        "text/event-stream, application/json"
    } else {
        "application/json"
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let response = client
        .send(
            provider,
            http::Method::POST,
            &url,
            bearer,
            Some(crate::transport::Payload::json(bytes)),
            accept,
        )
        .await?;
    if is_event_stream(&response) {
        let mut events = Events::from_body(response.into_body(), client.options());
        return stream(provider, &mut events, on_event).await;
    }
    let limit = client.options().max_json_bytes;
    let bytes = client
        .read_bounded(provider, response.into_body(), limit, "JSON reply")
        .await?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|_| malformed(provider, "not JSON"))?;
    let turn = parse_completion(provider, &value)?.without_cut_off_calls();
    if let Some(usage) = turn.usage {
        on_event(TurnEvent::Usage(usage));
    }
    on_event(TurnEvent::Completed);
    Ok(turn)
}

/// Parses a complete (non-streamed) Chat Completions reply.
pub(crate) fn parse_completion(provider: &Provider, value: &Value) -> Result<Turn> {
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| malformed(provider, "no choices"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed(provider, "no message"))?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut calls = Vec::new();
    if let Some(list) = message.get("tool_calls").and_then(Value::as_array) {
        for call in list {
            calls.push(tool_call(provider, call)?);
        }
    }
    Ok(Turn {
        text,
        calls,
        opaque: Vec::new(),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: usage::of_body(value),
    })
}

fn tool_call(provider: &Provider, call: &Value) -> Result<ToolCall> {
    let function = call.get("function");
    let field = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let id = field(call.get("id")).filter(|s| !s.is_empty());
    let name = field(function.and_then(|f| f.get("name"))).filter(|s| !s.is_empty());
    match (id, name) {
        (Some(id), Some(name)) => Ok(ToolCall {
            id,
            function_name: name,
            arguments: field(function.and_then(|f| f.get("arguments"))).unwrap_or_default(),
        }),
        _ => Err(malformed(provider, "a tool call lacks its id or name")),
    }
}

// Typed views of a stream chunk: decoding into borrowed fields avoids building a JSON tree
// for every small event. Unknown fields are ignored.
#[derive(serde::Deserialize)]
struct StreamChunk<'a> {
    #[serde(default, borrow)]
    choices: FirstChoice<'a>,
    #[serde(default)]
    usage: Option<Value>,
    /// OpenCode Zen's charged dollars, sent beside `usage` rather than inside it.
    #[serde(default)]
    cost: Option<Value>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

/// The first element of `choices`; the rest are skipped without being built. A turn asks
/// for one choice, and this saves a vector per chunk.
#[derive(Default)]
struct FirstChoice<'a>(Option<StreamChoice<'a>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Visitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_unit<E: serde::de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

#[derive(serde::Deserialize)]
struct StreamChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<StreamDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct StreamDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(serde::Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(serde::Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The usage reported so far, updated by one chunk: a chunk's `usage` object replaces the
/// counts, and a chunk with only a `cost` adds it to the counts an earlier chunk reported.
fn fold_usage(
    seen: Option<yetibot_conversation::Usage>,
    chunk: &StreamChunk<'_>,
) -> Option<yetibot_conversation::Usage> {
    let usage_object = chunk.usage.as_ref().filter(|u| u.is_object());
    match (usage_object, chunk.cost.as_ref().filter(|c| !c.is_null())) {
        (Some(object), cost) => usage::read(Some(object), cost),
        (None, Some(cost)) => usage::with_outer_cost(seen, cost),
        (None, None) => seen,
    }
}

/// OpenCode Zen streams the charged dollars of a request as one more chunk after `[DONE]`.
/// The answer is complete at `[DONE]`, so what follows is read only for accounting, and the
/// read doubles as the drain that returns the connection to the pool: until the body ends,
/// for at most [`FINISH_GRACE`](crate::sse::FINISH_GRACE) and within the turn's byte bound,
/// chunks that carry `usage` or `cost` are folded in and everything else (text, malformed
/// data) is ignored. A cost that does not arrive in time stays unreported; a body that breaks
/// or crosses a bound is dropped with its connection.
async fn trailing_cost(
    provider: &Provider,
    events: &mut Events,
    usage_seen: Option<yetibot_conversation::Usage>,
) -> Option<yetibot_conversation::Usage> {
    let mut folded = usage_seen;
    let read = async {
        while let Ok(Some(event)) = events.next(provider).await {
            if let Ok(chunk) = serde_json::from_str::<StreamChunk<'_>>(event.data.trim()) {
                folded = fold_usage(folded.take(), &chunk);
            }
        }
    };
    let _ = tokio::time::timeout(crate::sse::FINISH_GRACE, read).await;
    folded
}

async fn stream(
    provider: &Provider,
    events: &mut Events,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    let mut text = String::new();
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    let mut finish_reason = None;
    let mut usage_seen = None;
    let mut done = false;
    while let Some(event) = events.next(provider).await? {
        let data = event.data.trim();
        if data == "[DONE]" {
            done = true;
            usage_seen = trailing_cost(provider, events, usage_seen).await;
            break;
        }
        if data.is_empty() {
            continue;
        }
        let chunk: StreamChunk<'_> = serde_json::from_str(data)
            .map_err(|_| malformed(provider, "a stream chunk is not JSON"))?;
        if chunk.error.is_some() {
            return Err(Error::ProviderFailed {
                provider: provider.name().to_owned(),
                reason: "the stream reported an error",
                code: None,
            });
        }
        usage_seen = fold_usage(usage_seen, &chunk);
        let Some(choice) = chunk.choices.0 else {
            continue;
        };
        if let Some(reason) = choice.finish_reason {
            finish_reason = Some(reason.into_owned());
        }
        let Some(delta) = choice.delta else {
            continue;
        };
        if let Some(piece) = delta.content
            && !piece.is_empty()
        {
            text.push_str(&piece);
            on_event(TurnEvent::TextDelta(piece.into_owned()));
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let entry = calls.entry(call.index.unwrap_or(0)).or_default();
            if let Some(id) = call.id {
                entry.id.push_str(&id);
            }
            if let Some(function) = call.function {
                if let Some(name) = function.name {
                    entry.name.push_str(&name);
                }
                if let Some(args) = function.arguments {
                    entry.arguments.push_str(&args);
                }
            }
        }
    }
    // A stream that stops without `[DONE]` or a finish reason was cut off: its partial tool
    // calls must never run.
    if !done && finish_reason.is_none() {
        return Err(malformed(provider, "the stream ended before it finished"));
    }
    let mut finished = Vec::with_capacity(calls.len());
    for call in calls.into_values() {
        if call.id.is_empty() || call.name.is_empty() {
            return Err(malformed(provider, "a tool call lacks its id or name"));
        }
        finished.push(ToolCall {
            id: call.id,
            function_name: call.name,
            arguments: call.arguments,
        });
    }
    if let Some(u) = usage_seen {
        on_event(TurnEvent::Usage(u));
    }
    on_event(TurnEvent::Completed);
    Ok(Turn {
        text,
        calls: finished,
        opaque: Vec::new(),
        finish_reason,
        usage: usage_seen,
    }
    .without_cut_off_calls())
}

pub(crate) fn malformed(provider: &Provider, reason: &'static str) -> Error {
    Error::Malformed {
        provider: provider.name().to_owned(),
        reason,
    }
}
