//! What a command may ask of the chat platform its request came from, as one capability the
//! caller carries: react to a message of the request's own channel or thread, read the
//! thread the request was sent in, show the request's progress while it runs, and read the
//! files attached to the request's message. The
//! conductor implements it over an adapter's outbox; `yetibot run` has no platform at all.
//! The command language knows no platform and no adapter crate: only this trait.

use futures_util::future::BoxFuture;

/// The platform of one request. Every method but [`Platform::react`] has a default that
/// does nothing, so a platform without threads or progress implements only what it has.
pub trait Platform: Send + Sync {
    /// The platform's own ID of the request's room (a Slack channel ID, which a rename does
    /// not change), when the caller's `room` is something else (Slack rooms are keyed by
    /// name); `None` by default.
    fn room_id(&self) -> Option<&str> {
        None
    }

    /// Whether the request is a new message exactly as its author sent it, delivered by the
    /// adapter itself: not an edit, a reaction, a button press or a rerun. Only such a
    /// request can consent to a repository write. `false` by default.
    fn is_original_message(&self) -> bool {
        false
    }

    /// Adds the reaction `emoji` to `message_id` in the request's own channel or thread, or
    /// to the requesting message when `None`. The platform checks the emoji's form; there
    /// is no way to name another channel.
    ///
    /// # Errors
    ///
    /// [`PlatformError`]: refused (an emoji it does not accept, a missing permission),
    /// unconfirmed (it may or may not have been added: never retry blindly), or gone.
    fn react<'a>(
        &'a self,
        emoji: &'a str,
        message_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// The thread the request was sent in, `None` outside threads.
    fn thread(&self) -> Option<&dyn ThreadSource> {
        None
    }

    /// Shows a snapshot of the request's progress. It never waits: a newer snapshot
    /// replaces one the platform has not shown yet.
    fn report(&self, _progress: &Progress) {}

    /// Whether the platform shows a request's interim messages as they come (Discord's live
    /// replies), in which case commands hand them to [`Platform::interim`].
    fn shows_interim(&self) -> bool {
        false
    }

    /// Hands the platform one interim message, already redacted, without waiting; it is
    /// part of the request's answer (a rerun or an edit replaces it with the rest).
    fn interim(&self, _text: String) {}

    /// Whether the platform shows an answer's text while the model writes it (the web
    /// console), in which case commands hand the text to [`Platform::live_text`].
    fn shows_live_text(&self) -> bool {
        false
    }

    /// Hands the platform a piece of the answer being written, already redacted (a
    /// streaming redactor's output, so a credential split across pieces never appears),
    /// without waiting. The final answer replaces whatever was shown.
    fn live_text(&self, _piece: LiveText<'_>) {}

    /// The files attached to the message the request came from, as its platform described
    /// them (never anything a command's text claims).
    fn attachments(&self) -> &[yetibot_conversation::Attachment] {
        &[]
    }

    /// The credential the platform's own file host needs to serve `url` (Slack's private
    /// file URLs need the bot token), `None` for any other URL. A caller sends it only to
    /// that URL's host.
    fn attachment_token(&self, _url: &str) -> Option<yetibot_redaction::Secret> {
        None
    }

    /// The bytes of one of the message's attachments that the platform holds itself (a
    /// file uploaded to the local console); `None` for one to fetch from its URL.
    fn attachment_bytes(&self, _url: &str) -> Option<std::sync::Arc<[u8]>> {
        None
    }
}

/// A change to the text a platform shows while a model writes its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveText<'a> {
    /// More text, to add to what is shown.
    Append(&'a str),
    /// A new model turn starts (the last one ended in tool calls): what is shown is cleared.
    Restart,
}

/// Why a platform action failed. The texts are fixed: never a platform's response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    /// The platform refused the request (missing permission, unknown channel, an emoji form
    /// it does not take).
    #[error("the platform refused the message: {0}")]
    Refused(&'static str),
    /// The platform could not be reached or failed; the action may or may not have happened.
    #[error("the platform did not confirm the message: {0}")]
    Unconfirmed(&'static str),
    /// The message to act on no longer exists.
    #[error("the message no longer exists")]
    Gone,
    /// The adapter is stopping.
    #[error("the chat adapter is stopping")]
    Stopping,
}

/// A snapshot of the work a request has done so far: each step (a tool call) in order, and
/// the budget those steps draw on. It holds names and outcomes only, never arguments or
/// results, so any platform may show it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// The steps, oldest first.
    pub steps: Vec<Step>,
    /// How much of the request's budget is used, of how much, when it has one.
    pub budget: Option<(u8, u8)>,
}

/// One step of a request's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What ran (a tool's ID), `None` when it is not safe to show.
    pub name: Option<String>,
    /// How it ended.
    pub outcome: StepOutcome,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOutcome {
    /// It succeeded.
    Succeeded,
    /// It ran and reported an error.
    Failed,
    /// It was sent and its outcome is not known (it may have run).
    Unknown,
    /// It was refused before it ran.
    Refused,
    /// It was skipped with the rest of its batch.
    Skipped,
}

impl StepOutcome {
    /// The outcome as a status line shows it.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Succeeded => "ok",
            Self::Failed => "error",
            Self::Unknown => "outcome unknown",
            Self::Refused => "refused",
            Self::Skipped => "skipped",
        }
    }
}

/// One earlier message of a thread, as the platform read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadMessage {
    /// Who wrote it: a display name for people (ignored for the bot's own replies).
    pub author: String,
    /// Its text (files and images are not read).
    pub text: String,
    /// Whether it is one of this bot's own replies.
    pub from_bot: bool,
}

/// Why a thread's history could not be used. A command that needs the thread then stops: a
/// partial conversation is never used in its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    /// The platform refused or failed to return every page (missing permission, an
    /// outage). The reason is the adapter's fixed text, never a platform response body.
    #[error("the thread's history could not be read completely ({0}), so nothing was sent")]
    Unavailable(&'static str),
    /// The thread is longer than one request may carry ([`MAX_THREAD_MESSAGES`](crate::limits::MAX_THREAD_MESSAGES) messages or
    /// [`MAX_THREAD_BYTES`](crate::limits::MAX_THREAD_BYTES) bytes of text).
    #[error(
        "this thread is too long to send as context (over 1,000 messages or 1 MiB of text); start a new thread"
    )]
    TooLong,
}

/// Reads the thread a request came from: every page, oldest first, up to and excluding the
/// message that triggered the request, with nothing left out, or an error when any page
/// cannot be read.
pub trait ThreadSource: Send + Sync {
    /// The thread's stable platform ID (a Slack thread timestamp, a Discord thread ID), the
    /// key under which a command may keep what it learned in the thread.
    fn key(&self) -> String;

    /// The thread's earlier messages, oldest first, within [`MAX_THREAD_MESSAGES`](crate::limits::MAX_THREAD_MESSAGES) and
    /// [`MAX_THREAD_BYTES`](crate::limits::MAX_THREAD_BYTES).
    fn history(&self) -> BoxFuture<'_, Result<Vec<ThreadMessage>, ThreadError>>;
}
