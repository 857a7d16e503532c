//! What a Slack event means to the bot, decided without any I/O: which envelopes carry a
//! command, an edit, a reaction or a button press, and which trigger nothing (bots, this
//! bot itself, edits that change no text, joins, unknown types, oversized text).
//!
//! Events are read as JSON into small structs of the few fields used, so that a field
//! slack-morphism models differently, or a type it does not model at all, is read the same
//! way. Reading is linear in the event's size and never panics.

use std::collections::{HashMap, VecDeque};

use serde::Deserialize;
use serde_json::Value;
use yetibot_conversation::{Attachment, MAX_ATTACHMENTS};

use crate::event::Action;

/// Text longer than this (in UTF-8 bytes) is not a command; Slack's own limit is 40,000
/// characters.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// The prefix of this adapter's button action IDs.
pub(crate) const ACTION_PREFIX: &str = "yetibot-";

/// Who the bot is on Slack, from `auth.test`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BotIdentity {
    /// The bot user's ID (`U...`).
    pub(crate) user_id: String,
    /// The bot's ID (`B...`), when Slack reported one.
    pub(crate) bot_id: Option<String>,
    /// The bot user's name.
    pub(crate) name: String,
}

impl BotIdentity {
    pub(crate) fn is_self(&self, user: Option<&str>, bot_id: Option<&str>) -> bool {
        user == Some(self.user_id.as_str())
            || (bot_id.is_some() && bot_id == self.bot_id.as_deref())
    }
}

/// One event the bot acts on, with Slack's IDs, before names are looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inbound {
    /// A new or edited message by a person.
    Message {
        channel: String,
        ts: String,
        /// The thread it is in: its own `ts` for a message outside threads, since the
        /// answer starts a thread there.
        thread: String,
        user: String,
        text: String,
        /// The edit revision; `None` for a new message.
        edit: Option<u32>,
        /// The files shared with the message (at most `MAX_ATTACHMENTS`).
        attachments: Vec<Attachment>,
    },
    /// A reaction added to a message.
    Reaction {
        channel: String,
        ts: String,
        user: String,
        emoji: String,
        on_bot_message: bool,
        by_bot: bool,
    },
    /// One of the bot's buttons was pressed.
    Press {
        channel: String,
        thread: String,
        message_ts: String,
        user: String,
        action: Action,
        token: String,
    },
}

impl Inbound {
    /// The conversation the event happened in.
    pub(crate) fn channel(&self) -> &str {
        match self {
            Self::Message { channel, .. }
            | Self::Reaction { channel, .. }
            | Self::Press { channel, .. } => channel,
        }
    }
}

#[derive(Debug, Deserialize)]
struct RawMessage {
    #[serde(default)]
    subtype: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    bot_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    thread_ts: Option<String>,
    #[serde(default)]
    edited: Option<Value>,
    #[serde(default)]
    files: Option<Vec<Value>>,
    #[serde(default)]
    message: Option<Box<RawMessage>>,
    #[serde(default)]
    previous_message: Option<Box<RawMessage>>,
}

#[derive(Debug, Deserialize)]
struct RawEdited {
    #[serde(default)]
    ts: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawReaction {
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    reaction: Option<String>,
    #[serde(default)]
    item_user: Option<String>,
    #[serde(default)]
    item: Option<RawItem>,
}

#[derive(Debug, Deserialize)]
struct RawItem {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    ts: Option<String>,
}

/// Why an event triggers nothing, for the adapter's debug log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// A type or subtype the bot does not act on.
    Kind,
    /// A bot's message, or this bot's own.
    Bot,
    /// An edit that changed no text (Slack also reports link previews as edits).
    NoChange,
    /// Fields the bot needs are missing or malformed.
    Malformed,
    /// The text is longer than [`MAX_TEXT_BYTES`].
    Oversized,
    /// An edit of a message this adapter has not seen (sent before it started, or too long
    /// ago): its thread is unknown, and an answer in a guessed place would be in the wrong
    /// conversation.
    Unseen,
}

/// Reads one Events API event (the `event` of an envelope's payload). `threads` learns
/// the thread of each new message and gives edits theirs.
pub(crate) fn event(
    event: &Value,
    me: &BotIdentity,
    threads: &mut Threads,
) -> Result<Inbound, Ignored> {
    match event.get("type").and_then(Value::as_str) {
        Some("message") => message(event, me, threads),
        Some("reaction_added") => reaction(event, me),
        _ => Err(Ignored::Kind),
    }
}

fn message(event: &Value, me: &BotIdentity, threads: &mut Threads) -> Result<Inbound, Ignored> {
    let raw = RawMessage::deserialize(event).map_err(|_| Ignored::Malformed)?;
    let channel = raw.channel.clone().ok_or(Ignored::Malformed)?;
    match raw.subtype.as_deref() {
        None | Some("thread_broadcast" | "file_share") => {
            if raw.bot_id.is_some() || me.is_self(raw.user.as_deref(), raw.bot_id.as_deref()) {
                return Err(Ignored::Bot);
            }
            let (user, ts) = raw.user.zip(raw.ts).ok_or(Ignored::Malformed)?;
            let thread = raw.thread_ts.unwrap_or_else(|| ts.clone());
            threads.remember(&channel, &ts, &thread);
            let text = text(raw.text.as_deref())?;
            Ok(Inbound::Message {
                channel,
                thread,
                ts,
                user,
                text,
                edit: None,
                attachments: files(raw.files.as_deref()),
            })
        }
        Some("message_changed") => {
            let current = raw.message.ok_or(Ignored::Malformed)?;
            if current.bot_id.is_some()
                || current.subtype.as_deref() == Some("bot_message")
                || me.is_self(current.user.as_deref(), current.bot_id.as_deref())
            {
                return Err(Ignored::Bot);
            }
            // Only a person's edit of the text re-runs a command: link previews and other
            // changes arrive as message_changed too, without `edited` or with the same text.
            let edited = current
                .edited
                .as_ref()
                .and_then(|e| RawEdited::deserialize(e).ok())
                .and_then(|e| e.ts)
                .ok_or(Ignored::NoChange)?;
            if raw
                .previous_message
                .as_ref()
                .is_some_and(|p| p.text == current.text)
            {
                return Err(Ignored::NoChange);
            }
            let user = current.user.ok_or(Ignored::Malformed)?;
            let ts = current.ts.ok_or(Ignored::Malformed)?;
            // slack-morphism's model of the edited message keeps no `thread_ts`, so the
            // thread is the one the message was seen in when it was sent.
            let thread = current
                .thread_ts
                .or_else(|| threads.thread_of(&channel, &ts))
                .ok_or(Ignored::Unseen)?;
            let text = text(current.text.as_deref())?;
            Ok(Inbound::Message {
                channel,
                thread,
                edit: Some(revision(&ts, &edited)),
                ts,
                user,
                text,
                attachments: files(current.files.as_deref()),
            })
        }
        Some(_) => Err(Ignored::Kind),
    }
}

#[derive(Debug, Deserialize)]
struct RawFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mimetype: Option<String>,
    #[serde(default)]
    url_private: Option<String>,
    #[serde(default)]
    size: Option<u64>,
}

/// The files of a message as attachments: each one Slack describes with a private URL (a
/// file it could not describe is left out, never the whole message), at most
/// `MAX_ATTACHMENTS`. Fetching one takes the bot token, which the outbox gives only for
/// Slack's own file host.
fn files(files: Option<&[Value]>) -> Vec<Attachment> {
    files
        .unwrap_or_default()
        .iter()
        .filter_map(|file| RawFile::deserialize(file).ok())
        .filter_map(|file| {
            Attachment::new(
                file.name.as_deref().unwrap_or_default(),
                file.mimetype.as_deref(),
                file.url_private.as_deref()?,
                file.size,
            )
        })
        .take(MAX_ATTACHMENTS)
        .collect()
}

fn reaction(event: &Value, me: &BotIdentity) -> Result<Inbound, Ignored> {
    let raw = RawReaction::deserialize(event).map_err(|_| Ignored::Malformed)?;
    let item = raw.item.ok_or(Ignored::Malformed)?;
    if item.kind.as_deref() != Some("message") {
        return Err(Ignored::Kind);
    }
    let (channel, ts) = item.channel.zip(item.ts).ok_or(Ignored::Malformed)?;
    let user = raw.user.ok_or(Ignored::Malformed)?;
    let emoji = raw
        .reaction
        .filter(|r| !r.is_empty() && r.len() <= 100)
        .ok_or(Ignored::Malformed)?;
    Ok(Inbound::Reaction {
        channel,
        ts,
        by_bot: user == me.user_id,
        user,
        emoji,
        on_bot_message: raw.item_user.as_deref() == Some(me.user_id.as_str()),
    })
}

/// Reads one interaction payload: a press of one of the bot's buttons.
pub(crate) fn interaction(payload: &Value) -> Result<(String, Inbound), Ignored> {
    if payload.get("type").and_then(Value::as_str) != Some("block_actions") {
        return Err(Ignored::Kind);
    }
    let string = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let user = string(payload.pointer("/user/id")).ok_or(Ignored::Malformed)?;
    let channel = string(payload.pointer("/container/channel_id"))
        .or_else(|| string(payload.pointer("/channel/id")))
        .ok_or(Ignored::Malformed)?;
    let message_ts = string(payload.pointer("/container/message_ts"))
        .or_else(|| string(payload.pointer("/message/ts")))
        .ok_or(Ignored::Malformed)?;
    let thread = string(payload.pointer("/container/thread_ts"))
        .or_else(|| string(payload.pointer("/message/thread_ts")))
        .unwrap_or_else(|| message_ts.clone());
    let action = payload
        .get("actions")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .ok_or(Ignored::Malformed)?;
    let name = string(action.get("action_id")).ok_or(Ignored::Malformed)?;
    let action_kind = name
        .strip_prefix(ACTION_PREFIX)
        .and_then(Action::parse)
        .ok_or(Ignored::Kind)?;
    let token = string(action.get("value"))
        .filter(|t| t.len() <= 2_000)
        .ok_or(Ignored::Malformed)?;
    // A press has no event ID; Slack's trigger ID (or the action's time) is unique to it.
    let id = string(payload.get("trigger_id"))
        .or_else(|| string(action.get("action_ts")).map(|ts| format!("{message_ts}/{ts}")))
        .ok_or(Ignored::Malformed)?;
    Ok((
        format!("press:{id}"),
        Inbound::Press {
            channel,
            thread,
            message_ts,
            user,
            action: action_kind,
            token,
        },
    ))
}

fn text(raw: Option<&str>) -> Result<String, Ignored> {
    let raw = raw.unwrap_or_default();
    if raw.len() > MAX_TEXT_BYTES {
        return Err(Ignored::Oversized);
    }
    let text = decode(raw);
    if text.trim().is_empty() {
        return Err(Ignored::Kind);
    }
    Ok(text)
}

/// A message's text as its author typed it: Slack's links (`<https://x|x>`) become the
/// address, channel links (`<#C1|general>`) the `#name`, mentions (`<@U1>`) stay as they
/// are, and the escaped `&amp;`, `&lt;`, `&gt;` become the characters again.
pub(crate) fn decode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&unescape(&rest[..open]));
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else {
            out.push_str(&unescape(&rest[open..]));
            rest = "";
            break;
        };
        let inner = &after[..close];
        let (target, label) = inner.split_once('|').unwrap_or((inner, ""));
        if let Some(channel) = target.strip_prefix('#') {
            out.push('#');
            out.push_str(&unescape(if label.is_empty() { channel } else { label }));
        } else if target.starts_with('@') || target.starts_with('!') {
            out.push('<');
            out.push_str(inner);
            out.push('>');
        } else {
            out.push_str(&unescape(target.strip_prefix("mailto:").unwrap_or(target)));
        }
        rest = &after[close + 1..];
    }
    out.push_str(&unescape(rest));
    out
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// An edit's revision: milliseconds from the message to the edit, at least 1, so that every
/// later edit gets a larger number and the same edit the same one after a restart.
fn revision(ts: &str, edited: &str) -> u32 {
    match (micros(ts), micros(edited)) {
        (Some(sent), Some(edit)) => {
            u32::try_from(edit.saturating_sub(sent) / 1_000).map_or(u32::MAX, |r| r.max(1))
        }
        _ => 1,
    }
}

/// A Slack timestamp (`1700000000.000100`) in microseconds.
pub(crate) fn micros(ts: &str) -> Option<u64> {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, "0"));
    if frac.len() > 6 || secs.len() > 12 {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac: u64 = format!("{frac:0<6}").parse().ok()?;
    secs.checked_mul(1_000_000)?.checked_add(frac)
}

/// A map that keeps only its newest `capacity` keys: past it, the oldest key inserted is
/// forgotten. Each insert and lookup is constant time.
#[derive(Debug)]
struct Recent<K, V> {
    order: VecDeque<K>,
    map: HashMap<K, V>,
    capacity: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V> Recent<K, V> {
    fn new(capacity: usize) -> Self {
        Self {
            order: VecDeque::new(),
            map: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// Records `key` with `value`; false (and nothing changes) when it was already there.
    fn insert(&mut self, key: K, value: V) -> bool {
        if self.map.contains_key(&key) {
            return false;
        }
        if self.order.len() >= self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.map.remove(&old);
        }
        self.map.insert(key.clone(), value);
        self.order.push_back(key);
        true
    }
}

/// The threads of the most recent messages, by channel and message `ts`, so that an edit
/// is answered in the thread its message is in. Bounded: past `capacity` entries the oldest
/// is forgotten. Each entry is three Slack IDs (a few dozen bytes).
#[derive(Debug)]
pub(crate) struct Threads(Recent<(String, String), String>);

impl Threads {
    pub(crate) fn new(capacity: usize) -> Self {
        Self(Recent::new(capacity))
    }

    /// Records that message `ts` in `channel` is in `thread`. A replayed message changes
    /// nothing.
    pub(crate) fn remember(&mut self, channel: &str, ts: &str, thread: &str) {
        self.0
            .insert((channel.to_owned(), ts.to_owned()), thread.to_owned());
    }

    /// The thread of message `ts` in `channel`, when it was seen.
    pub(crate) fn thread_of(&self, channel: &str, ts: &str) -> Option<String> {
        self.0
            .map
            .get(&(channel.to_owned(), ts.to_owned()))
            .cloned()
    }
}

/// Event IDs seen lately, so that a redelivered event (the same envelope again, or Slack's
/// retry of an event it thinks was not acknowledged) runs nothing twice. Bounded: the oldest
/// IDs are forgotten first, long after Slack's last retry of a busy workspace's events.
#[derive(Debug)]
pub(crate) struct Seen(Recent<String, ()>);

impl Seen {
    pub(crate) fn new(capacity: usize) -> Self {
        Self(Recent::new(capacity))
    }

    /// Records `id`; false when it was already there.
    pub(crate) fn insert(&mut self, id: &str) -> bool {
        self.0.insert(id.to_owned(), ())
    }

    /// Forgets `id`, so that a redelivery of an event that could not be taken is taken.
    pub(crate) fn forget(&mut self, id: &str) {
        if self.0.map.remove(id).is_some() {
            self.0.order.retain(|x| x != id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> BotIdentity {
        BotIdentity {
            user_id: "UBOT".into(),
            bot_id: Some("BBOT".into()),
            name: "yetibot".into(),
        }
    }

    fn check(event: Value) -> Result<Inbound, Ignored> {
        let mut threads = Threads::new(16);
        // The edited message of the tests was seen when it was sent, outside threads.
        threads.remember("C1", "1700000000.000100", "1700000000.000100");
        super::event(&event, &me(), &mut threads)
    }

    #[test]
    fn a_message_is_a_command_in_its_thread() {
        let new = check(json!({"type": "message", "channel": "C1", "user": "U1",
            "text": "!echo &lt;b&gt; &amp; <https://x.test|x.test> <#C2|general> <@U3>",
            "ts": "1700000000.000100"}));
        assert_eq!(
            new,
            Ok(Inbound::Message {
                channel: "C1".into(),
                ts: "1700000000.000100".into(),
                thread: "1700000000.000100".into(),
                user: "U1".into(),
                text: "!echo <b> & https://x.test #general <@U3>".into(),
                edit: None,
                attachments: Vec::new(),
            })
        );
        let reply = check(json!({"type": "message", "channel": "C1", "user": "U1",
            "text": "!ai more", "ts": "1700000001.000000", "thread_ts": "1700000000.000100"}));
        assert!(
            matches!(reply, Ok(Inbound::Message { thread, .. }) if thread == "1700000000.000100")
        );
    }

    #[test]
    fn shared_files_become_attachments_and_a_bad_one_loses_nothing_else() {
        let shared = check(
            json!({"type": "message", "subtype": "file_share", "channel": "C1",
            "user": "U1", "text": "!clairic count cats", "ts": "1.0", "files": [
                {"id": "F1", "name": "cats.png", "mimetype": "image/png", "size": 9,
                 "url_private": "https://files.slack.com/files-pri/T1-F1/cats.png"},
                {"id": "F2", "name": 7},
                {"id": "F3", "name": "no-url.png"},
                "not a file"
            ]}),
        );
        let Ok(Inbound::Message {
            attachments, text, ..
        }) = shared
        else {
            panic!("a message: {shared:?}");
        };
        assert_eq!(text, "!clairic count cats");
        assert_eq!(attachments.len(), 1);
        assert_eq!(
            attachments[0].url,
            "https://files.slack.com/files-pri/T1-F1/cats.png"
        );
        assert!(attachments[0].is_image());
    }

    #[test]
    fn bots_and_this_bot_trigger_nothing() {
        for event in [
            json!({"type": "message", "channel": "C1", "user": "UBOT", "text": "!x", "ts": "1.0"}),
            json!({"type": "message", "channel": "C1", "user": "U9", "bot_id": "B9", "text": "!x", "ts": "1.0"}),
            json!({"type": "message", "subtype": "bot_message", "channel": "C1", "bot_id": "B9", "text": "!x", "ts": "1.0"}),
            json!({"type": "message", "subtype": "message_changed", "channel": "C1",
                "message": {"user": "UBOT", "bot_id": "BBOT", "text": "new", "ts": "1.0", "edited": {"ts": "2.0"}},
                "previous_message": {"text": "old"}}),
        ] {
            let result = check(event);
            assert!(
                matches!(result, Err(Ignored::Bot | Ignored::Kind)),
                "{result:?}"
            );
        }
    }

    #[test]
    fn edits_rerun_with_a_growing_revision_unless_the_text_is_unchanged() {
        let edit = |edited: &str, previous: &str| {
            check(
                json!({"type": "message", "subtype": "message_changed", "channel": "C1",
                "message": {"user": "U1", "text": "!ai new", "ts": "1700000000.000100",
                    "edited": {"user": "U1", "ts": edited}},
                "previous_message": {"text": previous}}),
            )
        };
        let first = edit("1700000005.000000", "!ai old");
        let later = edit("1700000090.000000", "!ai old");
        match (first, later) {
            (
                Ok(Inbound::Message { edit: Some(a), .. }),
                Ok(Inbound::Message { edit: Some(b), .. }),
            ) => assert!(0 < a && a < b, "{a} {b}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(edit("1700000005.000000", "!ai new"), Err(Ignored::NoChange));
        // A link preview arrives as message_changed without `edited`.
        assert_eq!(
            check(
                json!({"type": "message", "subtype": "message_changed", "channel": "C1",
                "message": {"user": "U1", "text": "see https://x", "ts": "1.0"},
                "previous_message": {"text": "see https://x"}})
            ),
            Err(Ignored::NoChange)
        );
    }

    #[test]
    fn an_edit_is_answered_in_the_thread_its_message_was_seen_in() {
        let mut threads = Threads::new(2);
        let reply = json!({"type": "message", "channel": "C1", "user": "U1",
            "text": "!ai first", "ts": "1700000001.000000", "thread_ts": "1700000000.000100"});
        assert!(super::event(&reply, &me(), &mut threads).is_ok());
        // slack-morphism hands edits on without the nested message's thread_ts.
        let edit = |ts: &str| {
            json!({"type": "message", "subtype": "message_changed", "channel": "C1",
                "message": {"user": "U1", "text": "!ai second", "ts": ts,
                    "edited": {"user": "U1", "ts": "1700000009.000000"}},
                "previous_message": {"text": "!ai first"}})
        };
        assert!(matches!(
            super::event(&edit("1700000001.000000"), &me(), &mut threads),
            Ok(Inbound::Message { thread, edit: Some(_), .. }) if thread == "1700000000.000100"
        ));
        // A message never seen (or forgotten past the bound) is not answered somewhere
        // guessed.
        assert_eq!(
            super::event(&edit("1600000000.000000"), &me(), &mut threads),
            Err(Ignored::Unseen)
        );
        for n in 0..2 {
            let other = json!({"type": "message", "channel": "C2", "user": "U1",
                "text": "hi", "ts": format!("1700000100.00000{n}")});
            assert!(super::event(&other, &me(), &mut threads).is_ok());
        }
        assert_eq!(
            super::event(&edit("1700000001.000000"), &me(), &mut threads),
            Err(Ignored::Unseen)
        );
    }

    #[test]
    fn bad_and_unknown_events_are_ignored() {
        assert_eq!(check(json!({"type": "channel_join"})), Err(Ignored::Kind));
        assert_eq!(
            check(json!({"type": "message", "subtype": "channel_join", "channel": "C"})),
            Err(Ignored::Kind)
        );
        assert_eq!(
            check(json!({"type": "message", "user": 5})),
            Err(Ignored::Malformed)
        );
        assert_eq!(
            check(json!({"type": "message", "channel": "C1", "text": "x"})),
            Err(Ignored::Malformed)
        );
        assert_eq!(check(json!("text")), Err(Ignored::Kind));
        let huge = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(
            check(
                json!({"type": "message", "channel": "C1", "user": "U1", "text": huge, "ts": "1.0"})
            ),
            Err(Ignored::Oversized)
        );
    }

    #[test]
    fn reactions_know_whose_message_they_are_on() {
        let r = check(
            json!({"type": "reaction_added", "user": "U1", "reaction": "delete-this",
            "item_user": "UBOT", "item": {"type": "message", "channel": "C1", "ts": "5.0"}}),
        );
        assert!(matches!(
            r,
            Ok(Inbound::Reaction {
                on_bot_message: true,
                by_bot: false,
                ..
            })
        ));
        let file = check(
            json!({"type": "reaction_added", "user": "U1", "reaction": "x",
            "item": {"type": "file", "file": "F1"}}),
        );
        assert_eq!(file, Err(Ignored::Kind));
    }

    #[test]
    fn presses_of_our_buttons_only() {
        let press = json!({"type": "block_actions", "user": {"id": "U1"}, "trigger_id": "T1",
            "container": {"type": "message", "message_ts": "9.0", "channel_id": "C1", "thread_ts": "8.0"},
            "actions": [{"action_id": "yetibot-run-again", "value": "tok", "action_ts": "10.0"}]});
        let (id, inbound) = interaction(&press).expect("press");
        assert_eq!(id, "press:T1");
        assert_eq!(
            inbound,
            Inbound::Press {
                channel: "C1".into(),
                thread: "8.0".into(),
                message_ts: "9.0".into(),
                user: "U1".into(),
                action: Action::RunAgain,
                token: "tok".into(),
            }
        );
        let other = json!({"type": "block_actions", "user": {"id": "U1"},
            "container": {"message_ts": "9.0", "channel_id": "C1"},
            "actions": [{"action_id": "someone-else", "value": "x"}]});
        assert_eq!(interaction(&other).err(), Some(Ignored::Kind));
    }

    #[test]
    fn seen_ids_are_bounded_and_forgettable() {
        let mut seen = Seen::new(2);
        assert!(seen.insert("a"));
        assert!(!seen.insert("a"));
        assert!(seen.insert("b") && seen.insert("c"));
        assert!(seen.insert("a"), "the oldest was forgotten");
        seen.forget("c");
        assert!(seen.insert("c"));
    }

    #[test]
    fn timestamps() {
        assert_eq!(micros("1700000000.000100"), Some(1_700_000_000_000_100));
        assert_eq!(micros("5"), Some(5_000_000));
        assert_eq!(micros("x.1"), None);
        assert_eq!(revision("1.0", "0.5"), 1);
    }
}
