//! Thread conversations: inside a chat thread, a prompt carries the thread's earlier text
//! messages as context, read through the caller's platform (`yetibot-command`'s
//! `ThreadSource`); outside a thread every prompt stands alone. Providers with
//! `:thread-store` keep each thread's conversation here instead, trimmed to the context
//! window when it is resent.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use yetibot_command::limits::{MAX_THREAD_BYTES, MAX_THREAD_MESSAGES};
use yetibot_command::{ThreadError, ThreadMessage};
use yetibot_conversation::Message;

/// The thread's messages as conversation turns: the bot's own replies as assistant turns,
/// everyone else's as user turns labelled with their author.
///
/// # Errors
///
/// [`ThreadError::TooLong`] past [`MAX_THREAD_MESSAGES`] or [`MAX_THREAD_BYTES`]: the
/// thread is never cut short silently.
pub fn turns(messages: &[ThreadMessage]) -> Result<Vec<Message>, ThreadError> {
    if messages.len() > MAX_THREAD_MESSAGES
        || messages
            .iter()
            .map(|m| m.text.len() + m.author.len())
            .sum::<usize>()
            > MAX_THREAD_BYTES
    {
        return Err(ThreadError::TooLong);
    }
    Ok(messages
        .iter()
        .filter(|m| !m.text.trim().is_empty())
        .map(|m| {
            if m.from_bot {
                Message::Assistant {
                    text: m.text.clone(),
                    calls: Vec::new(),
                    opaque: Vec::new(),
                }
            } else {
                Message::User(format!("{}: {}", m.author, m.text))
            }
        })
        .collect())
}

/// The most threads whose conversations the app-side store keeps; the oldest stored is
/// forgotten first (its text comes back from the platform on its next prompt).
pub const MAX_STORED_THREADS: usize = 256;

/// The app-side per-thread store of providers configured with `:thread-store`: each
/// thread's conversation with its tool calls and results, kept in memory (a restart
/// rebuilds the text from the platform's thread) and resent, trimmed to the context window,
/// with the next prompt of that thread.
#[derive(Debug, Default)]
pub struct ThreadStore {
    inner: Mutex<Stored>,
}

/// The stored conversations and their keys, oldest stored first.
#[derive(Debug, Default)]
struct Stored {
    conversations: HashMap<String, Vec<Message>>,
    order: VecDeque<String>,
}

impl ThreadStore {
    /// The stored conversation of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<Vec<Message>> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.conversations.get(key).cloned()
    }

    /// Stores `messages` as the conversation of `key`, forgetting the oldest thread beyond
    /// [`MAX_STORED_THREADS`]. A conversation over [`MAX_THREAD_BYTES`] is not kept (the
    /// next prompt reads the thread from the platform again).
    pub fn put(&self, key: String, messages: Vec<Message>) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Stored {
            conversations: map,
            order,
        } = &mut *inner;
        order.retain(|k| *k != key);
        if estimated_bytes(&messages) > MAX_THREAD_BYTES {
            map.remove(&key);
            return;
        }
        map.insert(key.clone(), messages);
        order.push_back(key);
        while order.len() > MAX_STORED_THREADS {
            if let Some(oldest) = order.pop_front() {
                map.remove(&oldest);
            }
        }
    }
}

/// The bytes of a message that reach the model: text, call names and arguments, results
/// and replayed provider items.
fn message_bytes(message: &Message) -> usize {
    match message {
        Message::System(text) | Message::User(text) => text.len(),
        Message::Assistant {
            text,
            calls,
            opaque,
        } => {
            text.len()
                + calls
                    .iter()
                    .map(|c| c.id.len() + c.function_name.len() + c.arguments.len())
                    .sum::<usize>()
                + opaque
                    .iter()
                    .map(|item| item.as_value().to_string().len())
                    .sum::<usize>()
        }
        Message::ToolResult {
            call_id, content, ..
        } => call_id.len() + content.len(),
    }
}

fn estimated_bytes(messages: &[Message]) -> usize {
    messages.iter().map(message_bytes).sum()
}

/// A deterministic estimate of the tokens `messages` take: UTF-8 bytes / 4, rounded up,
/// plus a few tokens of framing per message.
#[must_use]
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            u64::try_from(message_bytes(m).div_ceil(4))
                .unwrap_or(u64::MAX)
                .saturating_add(4)
        })
        .fold(0, u64::saturating_add)
}

/// Trims a conversation to `budget` estimated tokens, deterministically: the leading host
/// instructions always stay, and whole turns (a run of user messages with every assistant
/// turn, tool call and tool result after it) are dropped oldest first, so a tool call never
/// loses its result. The newest turn always stays, even alone over the budget.
#[must_use]
pub fn trim(messages: Vec<Message>, budget: u64) -> Vec<Message> {
    if estimate_tokens(&messages) <= budget {
        return messages;
    }
    let head = messages
        .iter()
        .take_while(|m| matches!(m, Message::System(_)))
        .count();
    // Where each turn starts: a user message that does not follow another.
    let starts: Vec<usize> = (head..messages.len())
        .filter(|&i| {
            matches!(messages[i], Message::User(_))
                && (i == head || !matches!(messages[i - 1], Message::User(_)))
        })
        .collect();
    let fixed = estimate_tokens(&messages[..head]);
    let mut keep_from = starts.first().copied().unwrap_or(head);
    for &start in &starts {
        keep_from = start;
        if fixed.saturating_add(estimate_tokens(&messages[start..])) <= budget {
            break;
        }
    }
    let mut messages = messages;
    messages.drain(head..keep_from);
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(author: &str, text: &str, from_bot: bool) -> ThreadMessage {
        ThreadMessage {
            author: author.into(),
            text: text.into(),
            from_bot,
        }
    }

    #[test]
    fn only_the_bots_replies_are_assistant_turns() {
        let turns = turns(&[
            message("ann", "What is map?", false),
            message("yetibot", "It transforms.", true),
            message("bob", "", false),
            message("bob", "And reduce?", false),
        ])
        .expect("turns");
        assert_eq!(
            turns,
            vec![
                Message::User("ann: What is map?".into()),
                Message::Assistant {
                    text: "It transforms.".into(),
                    calls: Vec::new(),
                    opaque: Vec::new()
                },
                Message::User("bob: And reduce?".into()),
            ]
        );
    }

    fn assistant_call(id: &str) -> Vec<Message> {
        vec![
            Message::Assistant {
                text: String::new(),
                calls: vec![yetibot_conversation::ToolCall {
                    id: id.into(),
                    function_name: "yetibot__help".into(),
                    arguments: "{}".into(),
                }],
                opaque: Vec::new(),
            },
            Message::ToolResult {
                call_id: id.into(),
                content: "x".repeat(400),
                is_error: false,
            },
            Message::Assistant {
                text: "answer".into(),
                calls: Vec::new(),
                opaque: Vec::new(),
            },
        ]
    }

    #[test]
    fn trimming_drops_whole_oldest_turns_and_keeps_instructions_and_the_newest() {
        let mut messages = vec![Message::System("rules".into())];
        for turn in 0..5 {
            messages.push(Message::User(format!("question {turn}")));
            messages.extend(assistant_call(&format!("c{turn}")));
        }
        let whole = estimate_tokens(&messages);
        assert_eq!(trim(messages.clone(), whole), messages, "nothing to trim");
        let trimmed = trim(messages.clone(), whole / 2);
        assert!(estimate_tokens(&trimmed) <= whole / 2);
        assert_eq!(trimmed[0], Message::System("rules".into()));
        assert!(matches!(&trimmed[1], Message::User(q) if q.starts_with("question ")));
        // Every call kept has its result.
        for (i, m) in trimmed.iter().enumerate() {
            if let Message::Assistant { calls, .. } = m
                && let Some(call) = calls.first()
            {
                assert!(
                    matches!(&trimmed[i + 1], Message::ToolResult { call_id, .. } if *call_id == call.id)
                );
            }
        }
        assert_eq!(trimmed.last(), messages.last());
        // Deterministic, and the newest turn stays even when nothing fits.
        assert_eq!(trim(messages.clone(), whole / 2), trimmed);
        let newest = trim(messages.clone(), 1);
        assert_eq!(newest.len(), 1 + 4);
        assert_eq!(newest[1], Message::User("question 4".into()));
    }

    #[test]
    fn the_store_keeps_a_bounded_number_of_threads() {
        let store = ThreadStore::default();
        for i in 0..=MAX_STORED_THREADS {
            store.put(format!("t{i}"), vec![Message::User(format!("m{i}"))]);
        }
        assert_eq!(store.get("t0"), None, "the oldest is forgotten");
        assert_eq!(
            store.get(&format!("t{MAX_STORED_THREADS}")),
            Some(vec![Message::User(format!("m{MAX_STORED_THREADS}"))])
        );
        store.put(
            "big".into(),
            vec![Message::User("x".repeat(MAX_THREAD_BYTES + 1))],
        );
        assert_eq!(store.get("big"), None);
    }

    #[test]
    fn a_thread_too_long_to_send_is_an_error_not_a_shorter_thread() {
        let many = vec![message("a", "x", false); MAX_THREAD_MESSAGES + 1];
        assert_eq!(turns(&many), Err(ThreadError::TooLong));
        assert!(turns(&many[..MAX_THREAD_MESSAGES]).is_ok());
        let big = vec![message("a", &"x".repeat(MAX_THREAD_BYTES), false)];
        assert_eq!(turns(&big), Err(ThreadError::TooLong));
    }
}
