//! Ready-made provider payloads for scripting the fixture: Chat Completions chunks,
//! Responses stream events (text, native search, encrypted reasoning, function calls) and
//! Cloudflare catalog pages. Each returns JSON text for [`Reply`](crate::Reply) builders.

/// A Chat Completions stream chunk carrying a text delta.
#[must_use]
pub fn chat_text_chunk(text: &str) -> String {
    format!(
        r#"{{"choices":[{{"index":0,"delta":{{"content":{}}},"finish_reason":null}}]}}"#,
        quote(text)
    )
}

/// The final Chat Completions chunk with a finish reason and usage.
#[must_use]
pub fn chat_finish_chunk(reason: &str, prompt_tokens: u64, completion_tokens: u64) -> String {
    format!(
        r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":{}}}],"usage":{{"prompt_tokens":{prompt_tokens},"completion_tokens":{completion_tokens}}}}}"#,
        quote(reason)
    )
}

/// A complete (non-streamed) Chat Completions reply with text only.
#[must_use]
pub fn chat_completion(text: &str) -> String {
    format!(
        r#"{{"choices":[{{"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":1,"completion_tokens":1}}}}"#,
        quote(text)
    )
}

/// A complete (non-streamed) Chat Completions reply that calls one function, `name`, with
/// `arguments` (JSON text) under the call ID `id`.
#[must_use]
pub fn chat_tool_call(id: &str, name: &str, arguments: &str) -> String {
    serde_json::json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            ]},
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    })
    .to_string()
}

/// The contents of the tool results in the last Chat Completions request `fixture` received
/// at `path`, in order: what the model was sent back.
#[must_use]
pub fn tool_results(fixture: &crate::Fixture, path: &str) -> Vec<String> {
    let requests = fixture.requests();
    let Some(last) = requests.iter().rfind(|r| r.path == path) else {
        return Vec::new();
    };
    let body: serde_json::Value = serde_json::from_slice(&last.body).unwrap_or_default();
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// A Responses `response.output_text.delta` event.
#[must_use]
pub fn text_delta(text: &str) -> String {
    format!(
        r#"{{"type":"response.output_text.delta","delta":{}}}"#,
        quote(text)
    )
}

/// A native search call item (`web_search_call` or `x_search_call`) added or done.
#[must_use]
pub fn search_call(kind: &str, status: &str, done: bool) -> String {
    let event = if done { "done" } else { "added" };
    format!(
        r#"{{"type":"response.output_item.{event}","item":{{"type":{},"id":"ws_1","status":{}}}}}"#,
        quote(kind),
        quote(status)
    )
}

/// An encrypted reasoning output item (the JSON object, for a completed response's output).
#[must_use]
pub fn reasoning_item(encrypted: &str) -> String {
    format!(
        r#"{{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":{}}}"#,
        quote(encrypted)
    )
}

/// An assistant message output item.
#[must_use]
pub fn message_item(text: &str) -> String {
    format!(
        r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":{}}}]}}"#,
        quote(text)
    )
}

/// A function call output item.
#[must_use]
pub fn function_call_item(call_id: &str, name: &str, arguments: &str) -> String {
    format!(
        r#"{{"type":"function_call","call_id":{},"name":{},"arguments":{},"status":"completed"}}"#,
        quote(call_id),
        quote(name),
        quote(arguments)
    )
}

/// A `response.output_item.done` event for an item made by the functions above.
#[must_use]
pub fn item_done(item: &str) -> String {
    format!(r#"{{"type":"response.output_item.done","item":{item}}}"#)
}

/// A `response.completed` event whose output lists `items` (JSON objects).
#[must_use]
pub fn completed(items: &[String], input_tokens: u64, output_tokens: u64) -> String {
    format!(
        r#"{{"type":"response.completed","response":{{"status":"completed","output":[{}],"usage":{{"input_tokens":{input_tokens},"output_tokens":{output_tokens}}}}}}}"#,
        items.join(",")
    )
}

/// A terminal failure event: `response.failed`, `response.incomplete` or `error`.
#[must_use]
pub fn failure(kind: &str) -> String {
    format!(r#"{{"type":{},"message":"scripted failure"}}"#, quote(kind))
}

/// One page of a Cloudflare Workers AI catalog search listing `names`, reporting
/// `total_count` models at 100 per page.
#[must_use]
pub fn cloudflare_page(page: u64, names: &[&str], total_count: u64) -> String {
    let records: Vec<String> = names
        .iter()
        .map(|n| {
            format!(
                r#"{{"id":"uuid-{page}","name":{},"task":{{"name":"Text Generation"}},"properties":[]}}"#,
                quote(n)
            )
        })
        .collect();
    format!(
        r#"{{"success":true,"result":[{}],"result_info":{{"page":{page},"per_page":100,"count":{},"total_count":{total_count}}}}}"#,
        records.join(","),
        names.len()
    )
}

/// A JSON string literal for `text`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
