//! Responses: `POST {base}/responses` with `stream: true` and `store: false`, parsed from SSE
//! (or from a JSON reply sent by a proxy) into typed events and one completed turn.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::chat::{malformed, usage};
use crate::config::{Provider, ToolChoiceMode};
use crate::error::{Error, Result};
use crate::sse::Events;
use crate::transport::{Client, is_event_stream};
use crate::turn::{Message, ToolCall, Turn, TurnEvent, TurnRequest};

/// Builds the JSON request body. The complete conversation is replayed every turn, with
/// opaque output items (reasoning, encrypted state, search calls) passed back unchanged.
pub(crate) fn body(provider: &Provider, model: &str, request: &TurnRequest) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::System(text) => input.push(json!({ "role": "system", "content": text })),
            Message::User(text) => input.push(json!({ "role": "user", "content": text })),
            Message::Assistant { opaque, .. } if !opaque.is_empty() => {
                input.extend(opaque.iter().cloned());
            }
            Message::Assistant { text, calls, .. } => {
                if !text.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{ "type": "output_text", "text": text }],
                    }));
                }
                for call in calls {
                    input.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": call.arguments,
                    }));
                }
            }
            Message::ToolResult {
                call_id, content, ..
            } => input.push(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": content,
            })),
        }
    }
    let mut body = json!({
        "model": model,
        "input": input,
        "stream": true,
        "store": false,
    });
    let tools_on = request.tools_enabled && provider.tool_calling();
    let mut tools: Vec<Value> = Vec::new();
    if tools_on {
        tools.extend(request.tools.iter().map(|t| {
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            })
        }));
    }
    // Native tools are server-side and controlled by `:native-tools` alone, not by
    // `:tool-calling`; `--no-tools` (tools_enabled = false) still removes them.
    if request.tools_enabled {
        tools.extend(provider.native_tools().iter().map(|t| json!({ "type": t })));
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        if provider.tool_choice() == ToolChoiceMode::Standard {
            body["tool_choice"] = json!("auto");
        }
    }
    if provider.capabilities().sends_max_turns && request.tools_enabled {
        body["max_turns"] = json!(provider.max_turns());
    }
    if let Some(limit) = request.max_output_tokens {
        body[provider.capabilities().output_tokens.field()] = json!(limit);
    }
    body
}

/// Sends one Responses turn and reads it to completion.
pub(crate) async fn turn(
    client: &Client,
    provider: &Provider,
    bearer: Option<&yetibot_redaction::Secret>,
    body: Value,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    let url = format!("{}/responses", provider.base_url());
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let response = client
        .send(
            provider,
            http::Method::POST,
            &url,
            bearer,
            Some(bytes),
            "text/event-stream, application/json",
        )
        .await?;
    if is_event_stream(&response) {
        let mut events = Events::from_body(response.into_body(), client.options());
        return read_stream(provider, &mut events, on_event).await;
    }
    // A proxy may answer with the finished response as JSON: same byte bound, no deltas.
    let limit = client.options().max_turn_bytes;
    let bytes = client
        .read_bounded(provider, response.into_body(), limit, "streamed turn")
        .await?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|_| malformed(provider, "not JSON"))?;
    let value = value.get("response").cloned().unwrap_or(value);
    match value.get("status").and_then(Value::as_str) {
        Some("failed") => return Err(failed(provider, "the response failed")),
        Some("incomplete") => return Err(failed(provider, "the response is incomplete")),
        _ => {}
    }
    completed(provider, &value, on_event)
}

/// Reads a Responses event stream until `response.completed`.
pub(crate) async fn read_stream(
    provider: &Provider,
    events: &mut Events,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    while let Some(event) = events.next(provider).await? {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        // Text deltas are most of a stream: decode their two fields without a JSON tree.
        // Any event this typed view cannot read takes the general path below.
        if let Ok(head) = serde_json::from_str::<EventHead<'_>>(data)
            && head.kind.as_deref() == Some("response.output_text.delta")
        {
            if let Some(delta) = head.delta {
                on_event(TurnEvent::TextDelta(delta.into_owned()));
            }
            continue;
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|_| malformed(provider, "a stream event is not JSON"))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        if kind == "response.output_text.delta" {
            if let Some(delta) = value.get("delta").and_then(Value::as_str) {
                on_event(TurnEvent::TextDelta(delta.to_owned()));
            }
            continue;
        }
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(item) = value.get("item") {
                    item_event(item, kind == "response.output_item.done", on_event);
                }
            }
            "response.completed" => {
                let response = value
                    .get("response")
                    .ok_or_else(|| malformed(provider, "response.completed lacks the response"))?;
                events.finish().await;
                return completed(provider, response, on_event);
            }
            "response.failed" => return Err(failed(provider, "the response failed")),
            "response.incomplete" => {
                return Err(failed(provider, "the response is incomplete"));
            }
            "error" => return Err(failed(provider, "the stream reported an error")),
            _ => {}
        }
    }
    Err(malformed(
        provider,
        "the stream ended before the response completed",
    ))
}

#[derive(serde::Deserialize)]
struct EventHead<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
}

fn item_event(item: &Value, done: bool, on_event: &mut (dyn FnMut(TurnEvent) + Send)) {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "message" if done => on_event(TurnEvent::MessageCompleted(message_text(item))),
        "function_call" if done => on_event(TurnEvent::FunctionCallItem {
            name: item
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }),
        k if k.ends_with("_search_call") => on_event(TurnEvent::NativeSearch {
            kind: k.to_owned(),
            status: item
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or(if done { "completed" } else { "in_progress" })
                .to_owned(),
        }),
        _ => {}
    }
}

fn message_text(item: &Value) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// Turns a completed response object into a [`Turn`]: its function calls become the batch,
/// and every output item is kept for replay.
fn completed(
    provider: &Provider,
    response: &Value,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(provider, "the response has no output list"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => text.push_str(&message_text(item)),
            Some("function_call") => {
                let field = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
                match (field("call_id"), field("name")) {
                    (Some(id), Some(name)) if !id.is_empty() && !name.is_empty() => {
                        calls.push(ToolCall {
                            id,
                            name,
                            arguments: field("arguments").unwrap_or_default(),
                        });
                    }
                    _ => return Err(malformed(provider, "a function call lacks its id or name")),
                }
            }
            _ => {}
        }
    }
    let usage = response.get("usage").and_then(usage);
    if let Some(u) = usage {
        on_event(TurnEvent::Usage(u));
    }
    on_event(TurnEvent::Completed);
    Ok(Turn {
        text,
        calls,
        opaque: output.clone(),
        finish_reason: response
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage,
    })
}

fn failed(provider: &Provider, reason: &'static str) -> Error {
    Error::ProviderFailed {
        provider: provider.name().to_owned(),
        reason,
    }
}
