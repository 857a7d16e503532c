//! Thread conversations: inside a chat thread, a prompt carries the thread's earlier text
//! messages as context. Each adapter reads its own threads through [`ThreadSource`]; outside
//! a thread every prompt stands alone.

use std::fmt;
use std::sync::Arc;

use yetibot_conversation::Message;

use crate::registry::BoxFuture;

/// The most messages a thread may bring into one prompt.
pub const MAX_THREAD_MESSAGES: usize = 1_000;
/// The most text, in UTF-8 bytes, a thread may bring into one prompt.
pub const MAX_THREAD_BYTES: usize = 1 << 20;

/// One earlier message of a thread, as the adapter read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMessage {
    /// Who wrote it: a display name for people (ignored for the bot's own replies).
    pub author: String,
    /// Its text (files and images are not read).
    pub text: String,
    /// Whether it is one of this bot's own replies: only those become assistant turns.
    pub from_bot: bool,
}

/// Why a thread's history could not be used. The prompt is not sent then: a partial
/// conversation is never sent in its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    /// The platform refused or failed to return every page (missing permission, an
    /// outage). The reason is the adapter's fixed text, never a platform response body.
    #[error("the thread's history could not be read completely ({0}), so nothing was sent")]
    Unavailable(&'static str),
    /// The thread is longer than one prompt may carry.
    #[error(
        "this thread is too long to send as context (over 1,000 messages or 1 MiB of text); start a new thread"
    )]
    TooLong,
}

/// Reads the thread a request came from. Adapters implement it over their platform's
/// history API: every page, oldest first, up to and excluding the message that triggered
/// the request, with nothing left out. An error when any page cannot be read.
pub trait ThreadSource: Send + Sync {
    /// The thread's earlier messages, oldest first.
    fn history(&self) -> BoxFuture<'_, Result<Vec<ThreadMessage>, ThreadError>>;
}

/// The thread a caller is in: a shared [`ThreadSource`]. Two handles are equal when they
/// share the same source.
#[derive(Clone)]
pub struct Thread(pub Arc<dyn ThreadSource>);

impl fmt::Debug for Thread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Thread")
    }
}

impl PartialEq for Thread {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Thread {}

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

    #[test]
    fn a_thread_too_long_to_send_is_an_error_not_a_shorter_thread() {
        let many = vec![message("a", "x", false); MAX_THREAD_MESSAGES + 1];
        assert_eq!(turns(&many), Err(ThreadError::TooLong));
        assert!(turns(&many[..MAX_THREAD_MESSAGES]).is_ok());
        let big = vec![message("a", &"x".repeat(MAX_THREAD_BYTES), false)];
        assert_eq!(turns(&big), Err(ThreadError::TooLong));
    }
}
