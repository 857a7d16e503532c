//! Responses: `POST {base}/responses` with `stream: true` and `store: false`, parsed from SSE
//! (or from a JSON reply sent by a proxy) into typed events and one completed turn.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::{Value, json};
use yetibot_conversation::{Message, ReplayItem, ToolCall};

use crate::chat::malformed;
use crate::config::{Provider, ToolChoiceMode};
use crate::error::{Error, Result};
use crate::sse::Events;
use crate::transport::{Client, is_event_stream};
use crate::turn::{Turn, TurnEvent, TurnRequest};
use crate::usage;

/// Builds the JSON request body. The complete conversation is replayed every turn, with
/// opaque output items (reasoning, encrypted state, search calls) passed back unchanged.
pub(crate) fn body(provider: &Provider, model: &str, request: &TurnRequest) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::System(text) => input.push(json!({ "role": "system", "content": text })),
            Message::User(text) => input.push(json!({ "role": "user", "content": text })),
            Message::Assistant { opaque, .. } if !opaque.is_empty() => {
                input.extend(opaque.iter().map(|item| item.as_value().clone()));
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
                        "name": call.function_name,
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
                "name": t.function_name(),
                "description": t.description(),
                "parameters": t.parameters(),
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
            Some(crate::transport::Payload::json(bytes)),
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
    // Only a finished response may yield tool calls: one still queued or in progress, or one
    // that does not say, has calls nobody may run yet.
    match value.get("status").and_then(Value::as_str) {
        Some("completed") => {}
        Some("failed") => return Err(failed_with_code(provider, "the response failed", &value)),
        Some("incomplete") => return incomplete(provider, &value, on_event),
        Some(_) => return Err(failed(provider, "the response has not completed")),
        None => return Err(malformed(provider, "the response has no status")),
    }
    completed(provider, &value, on_event)
}

/// Reads a Responses event stream until `response.completed`.
pub(crate) async fn read_stream(
    provider: &Provider,
    events: &mut Events,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    let mut order = StreamOrder::default();
    while let Some(event) = events.next(provider).await? {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        // Most events are small and typed; only the ones that carry items or the final
        // response are decoded into a JSON tree.
        let head = serde_json::from_str::<EventHead<'_>>(data).ok();
        let value = match &head {
            Some(_) => None,
            None => Some(
                serde_json::from_str::<Value>(data)
                    .map_err(|_| malformed(provider, "a stream event is not JSON"))?,
            ),
        };
        let head = match head {
            Some(head) => head,
            None => EventHead::of(value.as_ref().unwrap_or(&Value::Null)),
        };
        let kind = match head.kind.as_deref() {
            Some(kind) => Kind::of(kind),
            None => Kind::of(event.event),
        };
        order.sequence(provider, head.sequence_number)?;
        match kind {
            Kind::TextDelta => {
                if let Some(delta) = head.delta {
                    on_event(TurnEvent::TextDelta(delta.into_owned()));
                }
                continue;
            }
            Kind::ArgumentsDelta => {
                order.arguments_started(head.call_key());
                continue;
            }
            Kind::ArgumentsDone => {
                order.arguments_done(&head.call_key());
                continue;
            }
            Kind::Failed => {
                let value: Value = serde_json::from_str(data).unwrap_or(Value::Null);
                return Err(failed_with_code(provider, "the response failed", &value));
            }
            Kind::Incomplete => {
                // The answer so far, cut off: only when the event carries the response.
                let value: Value = serde_json::from_str(data)
                    .map_err(|_| malformed(provider, "a stream event is not JSON"))?;
                let Some(response) = value.get("response") else {
                    return Err(failed(provider, "the response is incomplete"));
                };
                let turn = incomplete(provider, response, on_event);
                events.finish().await;
                return turn;
            }
            Kind::Error => {
                let value: Value = serde_json::from_str(data).unwrap_or(Value::Null);
                return Err(failed_with_code(
                    provider,
                    "the stream reported an error",
                    &value,
                ));
            }
            Kind::Other => continue,
            Kind::ItemAdded | Kind::ItemDone | Kind::Completed => {}
        }
        let value = match value {
            Some(value) => value,
            None => serde_json::from_str::<Value>(data)
                .map_err(|_| malformed(provider, "a stream event is not JSON"))?,
        };
        if kind == Kind::Completed {
            let response = value
                .get("response")
                .ok_or_else(|| malformed(provider, "response.completed lacks the response"))?;
            match response.get("status").and_then(Value::as_str) {
                None | Some("completed") => {}
                Some(_) => return Err(failed(provider, "the response has not completed")),
            }
            if order.unfinished_arguments() {
                return Err(malformed(
                    provider,
                    "a function call's arguments never finished streaming",
                ));
            }
            let turn = completed(provider, response, on_event);
            events.finish().await;
            return turn;
        }
        if let Some(item) = value.get("item") {
            item_event(item, kind == Kind::ItemDone, on_event);
        }
    }
    Err(malformed(
        provider,
        "the stream ended before the response completed",
    ))
}

/// The stream events this reader acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    TextDelta,
    ArgumentsDelta,
    ArgumentsDone,
    ItemAdded,
    ItemDone,
    Completed,
    Failed,
    Incomplete,
    Error,
    Other,
}

impl Kind {
    fn of(name: &str) -> Self {
        match name {
            "response.output_text.delta" => Self::TextDelta,
            "response.function_call_arguments.delta" => Self::ArgumentsDelta,
            "response.function_call_arguments.done" => Self::ArgumentsDone,
            "response.output_item.added" => Self::ItemAdded,
            "response.output_item.done" => Self::ItemDone,
            "response.completed" => Self::Completed,
            "response.failed" => Self::Failed,
            "response.incomplete" => Self::Incomplete,
            "error" => Self::Error,
            _ => Self::Other,
        }
    }
}

/// The fields every event may carry, decoded without building a JSON tree.
#[derive(Debug, Default, serde::Deserialize)]
struct EventHead<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    sequence_number: Option<u64>,
    #[serde(default, borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<u64>,
}

impl<'a> EventHead<'a> {
    /// The same fields read from an event whose typed view did not fit (a field of an
    /// unexpected type); fields of the wrong type count as absent.
    fn of(value: &'a Value) -> Self {
        let text = |k: &str| value.get(k).and_then(Value::as_str).map(Cow::Borrowed);
        let number = |k: &str| value.get(k).and_then(Value::as_u64);
        Self {
            kind: text("type"),
            delta: text("delta"),
            sequence_number: number("sequence_number"),
            item_id: text("item_id"),
            output_index: number("output_index"),
        }
    }

    /// Which function call an argument event belongs to: its item, else its output index.
    fn call_key(&self) -> String {
        match (&self.item_id, self.output_index) {
            (Some(id), _) => format!("item:{id}"),
            (None, Some(index)) => format!("index:{index}"),
            (None, None) => String::new(),
        }
    }
}

/// What the order of a stream's events must satisfy: sequence numbers only ever increase
/// (a repeat or a step back means replayed or reordered events), and every function call
/// whose arguments streamed has finished them before the response completes.
#[derive(Debug, Default)]
struct StreamOrder {
    last_sequence: Option<u64>,
    open_arguments: HashSet<String>,
}

impl StreamOrder {
    fn sequence(&mut self, provider: &Provider, number: Option<u64>) -> Result<()> {
        let Some(number) = number else {
            return Ok(());
        };
        if self.last_sequence.is_some_and(|last| number <= last) {
            return Err(malformed(provider, "stream events arrived out of sequence"));
        }
        self.last_sequence = Some(number);
        Ok(())
    }

    fn arguments_started(&mut self, key: String) {
        self.open_arguments.insert(key);
    }

    fn arguments_done(&mut self, key: &str) {
        self.open_arguments.remove(key);
    }

    fn unfinished_arguments(&self) -> bool {
        !self.open_arguments.is_empty()
    }
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
                            function_name: name,
                            arguments: field("arguments").unwrap_or_default(),
                        });
                    }
                    _ => return Err(malformed(provider, "a function call lacks its id or name")),
                }
            }
            _ => {}
        }
    }
    let usage = usage::of_body(response);
    if let Some(u) = usage {
        on_event(TurnEvent::Usage(u));
    }
    on_event(TurnEvent::Completed);
    Ok(Turn {
        text,
        calls,
        opaque: output.iter().cloned().map(ReplayItem::new).collect(),
        finish_reason: response
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage,
    })
}

/// Turns an incomplete response object into a [`Turn`] that keeps the answer's text and
/// says why it was cut off; it has no tool calls and nothing to replay, since an item of a
/// cut-off response may itself be cut off.
fn incomplete(
    provider: &Provider,
    response: &Value,
    on_event: &mut (dyn FnMut(TurnEvent) + Send),
) -> Result<Turn> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(provider, "the response has no output list"))?;
    let text: String = output
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .map(message_text)
        .collect();
    let reason = response
        .get("incomplete_details")
        .and_then(|details| details.get("reason"))
        .and_then(Value::as_str);
    let finish = match reason {
        Some("max_output_tokens") => "length",
        Some("content_filter") => "content_filter",
        _ => "incomplete",
    };
    let usage = usage::of_body(response);
    if let Some(u) = usage {
        on_event(TurnEvent::Usage(u));
    }
    on_event(TurnEvent::Completed);
    Ok(Turn {
        text,
        calls: Vec::new(),
        opaque: Vec::new(),
        finish_reason: Some(finish.to_owned()),
        usage,
    })
}

fn failed(provider: &Provider, reason: &'static str) -> Error {
    Error::ProviderFailed {
        provider: provider.name().to_owned(),
        reason,
        code: None,
    }
}

/// A failed response with the error code the provider gave in it (`error.code` of the
/// response, or of the event itself).
fn failed_with_code(provider: &Provider, reason: &'static str, value: &Value) -> Error {
    let code = value
        .get("response")
        .unwrap_or(value)
        .get("error")
        .and_then(|error| error.get("code"))
        .and_then(Value::as_str);
    Error::ProviderFailed {
        provider: provider.name().to_owned(),
        reason,
        code: crate::error::plain_code(code),
    }
}
