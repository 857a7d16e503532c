//! Wire-neutral request and result types for one model turn, and the events a turn emits.
//! The messages, calls, tool definitions and usage inside them are the shared vocabulary of
//! `yetibot-conversation`.

use yetibot_conversation::{Message, ModelResponse, ReplayItem, ToolCall, ToolDefinition, Usage};

/// One model turn to request.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// The model ID; `None` uses the provider's configured model.
    pub model: Option<String>,
    /// The complete conversation, replayed every turn.
    pub messages: Vec<Message>,
    /// Function tools offered this turn, each under its
    /// [`ToolDefinition::function_name`].
    pub tools: Vec<ToolDefinition>,
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

/// A completed model turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// The assistant's text.
    pub text: String,
    /// Tool calls to run. Only a finished response yields them.
    pub calls: Vec<ToolCall>,
    /// Responses output items to replay next turn unchanged (empty for Chat Completions).
    pub opaque: Vec<ReplayItem>,
    /// The finish reason (Chat Completions) or status (Responses).
    pub finish_reason: Option<String>,
    /// Usage, when reported.
    pub usage: Option<Usage>,
}

/// How a turn's answer ended: complete, or cut off, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The model finished (or stopped to call tools).
    Complete,
    /// The model reached its output-token limit (`finish_reason: "length"`, or a Responses
    /// answer incomplete for `max_output_tokens`).
    Length,
    /// The provider's content filter stopped the answer.
    ContentFilter,
    /// The provider ended the answer early for another reason (a Responses `incomplete`).
    Incomplete,
}

impl Ending {
    /// The ending as scripts read it: `stop`, `length`, `content_filter` or `incomplete`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "stop",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::Incomplete => "incomplete",
        }
    }
}

impl Turn {
    /// How the turn's answer ended, from its finish reason (Chat Completions) or status
    /// (Responses).
    #[must_use]
    pub fn ending(&self) -> Ending {
        match self.finish_reason.as_deref() {
            Some("length") => Ending::Length,
            Some("content_filter") => Ending::ContentFilter,
            Some("incomplete") => Ending::Incomplete,
            _ => Ending::Complete,
        }
    }

    /// A turn cut off before it finished keeps its text but none of its tool calls: a
    /// call in a cut-off turn may be cut off too, and only a finished turn's calls run.
    pub(crate) fn without_cut_off_calls(mut self) -> Self {
        if self.ending() != Ending::Complete {
            self.calls.clear();
            self.opaque.clear();
        }
        self
    }
}

impl From<Turn> for ModelResponse {
    /// The parts of a turn that the next turn replays: text, calls and opaque items. The
    /// finish reason and usage are for the caller's reporting and are left behind.
    fn from(turn: Turn) -> Self {
        Self {
            text: turn.text,
            calls: turn.calls,
            opaque: turn.opaque,
        }
    }
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
