//! Wire-neutral request and result types for one model turn, and the events a turn emits.

use serde_json::Value;

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Instructions for the model.
    System(String),
    /// What the user said.
    User(String),
    /// An earlier model turn.
    Assistant {
        /// Its text.
        text: String,
        /// The tool calls it made.
        calls: Vec<ToolCall>,
        /// Responses output items to replay unchanged (reasoning, encrypted state, native
        /// search calls, function calls). When nonempty, a Responses request sends these
        /// instead of rebuilding the turn from `text` and `calls`; Chat Completions ignores
        /// them.
        opaque: Vec<Value>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call's ID.
        call_id: String,
        /// The result text.
        content: String,
        /// Whether the tool failed (the text then describes the failure).
        is_error: bool,
    },
}

/// A function tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The function name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// A JSON Schema for its arguments.
    pub parameters: Value,
}

/// One model turn to request.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// The model ID; `None` uses the provider's configured model.
    pub model: Option<String>,
    /// The complete conversation, replayed every turn.
    pub messages: Vec<Message>,
    /// Function tools offered this turn.
    pub tools: Vec<ToolSpec>,
    /// Whether tools (function and native) are offered at all. With `false`, the request
    /// carries no tool definitions and no tool choice, whatever the provider's tool-choice
    /// mode: a turn without tools offers none.
    pub tools_enabled: bool,
    /// The output-token limit, sent in the provider's own field.
    pub max_output_tokens: Option<u32>,
    /// Stream a Chat Completions answer (Responses always streams).
    pub stream: bool,
}

impl TurnRequest {
    /// A single user prompt without tools, no output limit and no streaming.
    #[must_use]
    pub fn prompt(text: impl Into<String>) -> Self {
        Self {
            model: None,
            messages: vec![Message::User(text.into())],
            tools: Vec::new(),
            tools_enabled: false,
            max_output_tokens: None,
            stream: false,
        }
    }
}

/// A function call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call ID to answer with.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments exactly as sent (a JSON string, not validated here).
    pub arguments: String,
}

/// Token usage of a turn. Every field keeps "not reported" apart from zero: a provider
/// that omits a count has not said it was free, and cost labels must never invent a zero.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Input (prompt) tokens, `None` when not reported.
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens, `None` when not reported.
    pub output_tokens: Option<u64>,
    /// The provider-reported cost (`usage.cost`), in the provider's unit, `None` when not
    /// reported.
    pub cost: Option<f64>,
}

/// A completed model turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// The assistant's text.
    pub text: String,
    /// Tool calls to run. Only a finished response yields them.
    pub calls: Vec<ToolCall>,
    /// Responses output items to replay next turn unchanged (empty for Chat Completions).
    pub opaque: Vec<Value>,
    /// The finish reason (Chat Completions) or status (Responses).
    pub finish_reason: Option<String>,
    /// Usage, when reported.
    pub usage: Option<Usage>,
}

/// Something that happened while a turn streamed, delivered as it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// A whole assistant message item finished (Responses).
    MessageCompleted(String),
    /// A native (server-side) search call changed status (Responses).
    NativeSearch {
        /// The item type, e.g. `web_search_call`.
        kind: String,
        /// The status reported, e.g. `in_progress` or `completed`.
        status: String,
    },
    /// A function-call item finished streaming. Informational only: calls become
    /// executable only through the completed [`Turn`].
    FunctionCallItem {
        /// The function name.
        name: String,
    },
    /// Usage was reported.
    Usage(Usage),
    /// The response completed.
    Completed,
}
