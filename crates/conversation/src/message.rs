//! What a model reads and answers: the messages of a conversation, the tool calls a model
//! asks for, and the provider items replayed unchanged on later turns.

use serde_json::Value;

/// One message of the conversation a model sees.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Host instructions.
    System(String),
    /// A user's words (or piped data, labelled by the caller).
    User(String),
    /// An earlier model turn, replayed on later turns.
    Assistant {
        /// Its visible text.
        text: String,
        /// The tool calls it asked for.
        calls: Vec<ToolCall>,
        /// Provider output items to replay unchanged (reasoning, encrypted state, native
        /// search calls, function calls). A Responses request that has them sends these
        /// instead of rebuilding the turn from `text` and `calls`; Chat Completions ignores
        /// them.
        opaque: Vec<ReplayItem>,
    },
    /// The result of one tool call. Its content is always untrusted data.
    ToolResult {
        /// The ID of the call it answers.
        call_id: String,
        /// The result text (redacted and bounded by whoever produced it).
        content: String,
        /// Whether it reports a failure (a tool error, a refusal, a skip or an unknown
        /// outcome); the text then describes it.
        is_error: bool,
    },
}

impl From<ModelResponse> for Message {
    /// The assistant turn that replays `response`.
    fn from(response: ModelResponse) -> Self {
        Self::Assistant {
            text: response.text,
            calls: response.calls,
            opaque: response.opaque,
        }
    }
}

/// The messages of one request, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// The messages.
    pub messages: Vec<Message>,
}

/// A model's completed answer to one turn: what the next turn replays as an assistant
/// message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// Visible text.
    pub text: String,
    /// The calls it asks for: the whole batch.
    pub calls: Vec<ToolCall>,
    /// Provider items to replay unchanged on the next turn.
    pub opaque: Vec<ReplayItem>,
}

/// One function call a model asked for. Nothing about it is trusted: the function name may
/// name no offered tool and the arguments may be anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's call ID, echoed in the tool result.
    pub id: String,
    /// The function name the model used ([`ToolDefinition::function_name`] of the tool it
    /// means, if it means one).
    ///
    /// [`ToolDefinition::function_name`]: crate::ToolDefinition::function_name
    pub function_name: String,
    /// The model's argument text exactly as sent: meant to be a JSON object, not read here.
    pub arguments: String,
}

/// A provider output item (reasoning, encrypted state, a native search call) that a later
/// turn must send back exactly as it came. Only the provider crate looks inside; everyone
/// else carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayItem(Value);

impl ReplayItem {
    /// Wraps one output item.
    #[must_use]
    pub fn new(item: Value) -> Self {
        Self(item)
    }

    /// The item as the provider sent it.
    #[must_use]
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The item, unwrapped.
    #[must_use]
    pub fn into_value(self) -> Value {
        self.0
    }
}

impl From<Value> for ReplayItem {
    fn from(item: Value) -> Self {
        Self(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_replays_as_the_assistant_turn() {
        let call = ToolCall {
            id: "c1".into(),
            function_name: "web__search".into(),
            arguments: r#"{"q":"x"}"#.into(),
        };
        let item = ReplayItem::new(serde_json::json!({"type": "reasoning", "id": "rs_1"}));
        let response = ModelResponse {
            text: "looking".into(),
            calls: vec![call.clone()],
            opaque: vec![item.clone()],
        };
        assert_eq!(
            Message::from(response),
            Message::Assistant {
                text: "looking".into(),
                calls: vec![call],
                opaque: vec![item.clone()],
            }
        );
        assert_eq!(item.as_value()["id"], "rs_1");
        assert_eq!(ReplayItem::from(item.clone().into_value()), item);
    }
}
