//! The console's conversations, in memory and bounded: rooms, their messages and threads,
//! and a numbered log of every change, which live pages follow and resume from.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::sync::watch;
use yetibot_conversation::strip_bidi_controls;

use crate::event::{Author, Place};
use crate::outbox::{HistoryError, HistoryLimits, HistoryMessage};
use crate::reply::{Attachment, Button, Outgoing, Role};

use super::ConsoleBounds;

/// The room every console starts with.
pub const DEFAULT_ROOM: &str = "general";

/// Why a change was refused; the texts are shown to the operator as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateError {
    #[error("there is no room of that name")]
    NoRoom,
    #[error("there is no message with that ID in this room")]
    NoMessage,
    #[error("threads start at a message of the room itself, not inside another thread")]
    NotAThreadRoot,
    #[error("only your own messages can be edited")]
    NotEditable,
    #[error("a message must not be blank")]
    Blank,
    #[error("a message may have at most {0} bytes")]
    TooLong(usize),
    #[error("a room name is 1 to 32 characters of a-z, 0-9, - and _")]
    BadRoomName,
    #[error("there are already {0} rooms")]
    TooManyRooms(usize),
    #[error("earlier messages loaded from the history cannot start a thread; send a new message")]
    Restored,
}

/// Who wrote a message and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Bot(Role),
}

#[derive(Debug, Clone)]
struct Message {
    id: String,
    room: String,
    thread: Option<String>,
    author: Author,
    kind: Kind,
    text: String,
    media: Option<String>,
    caption: Option<String>,
    buttons: Vec<Button>,
    attachment: Option<Attachment>,
    error: bool,
    /// The command message a bot message answers, when the answer said so.
    reply_to: Option<String>,
    /// Loaded from the history store when a new process opened the room: shown, but
    /// nothing of it can be pressed, edited or threaded.
    restored: bool,
    revision: u32,
    replies: usize,
    /// The bot's reactions, in order, each once.
    reactions: Vec<String>,
    /// The images the operator attached (console uploads).
    files: Vec<yetibot_conversation::Attachment>,
    /// When it arrived, in the console's own order: the oldest leave memory first.
    age: u64,
}

/// The most distinct reactions one message shows.
const MAX_REACTIONS: usize = 20;

impl Message {
    /// A plain text message with nothing else yet: no media, buttons or replies.
    fn plain(id: String, room: &str, thread: Option<String>, author: Author, kind: Kind) -> Self {
        Self {
            id,
            room: room.to_owned(),
            thread,
            author,
            kind,
            text: String::new(),
            media: None,
            caption: None,
            buttons: Vec::new(),
            attachment: None,
            error: false,
            reply_to: None,
            restored: false,
            revision: 0,
            replies: 0,
            reactions: Vec::new(),
            files: Vec::new(),
            age: 0,
        }
    }

    /// What it costs in memory, roughly: its texts and attachment.
    fn size(&self) -> usize {
        self.text.len()
            + self.caption.as_ref().map_or(0, String::len)
            + self.media.as_ref().map_or(0, String::len)
            + self.attachment.as_ref().map_or(0, |a| a.content.len())
            + self.reactions.iter().map(String::len).sum::<usize>()
    }

    /// The message as the page shows it, without bidirectional controls: the bot's replies
    /// lose them before they are posted, but the operator's own messages and a status
    /// card's live text would otherwise reach the page as they came.
    fn to_json(&self) -> Value {
        let role = match self.kind {
            Kind::User => "user",
            Kind::Bot(Role::Answer) => "answer",
            Kind::Bot(Role::Status) => "status",
            Kind::Bot(Role::Notice) => "notice",
        };
        json!({
            "id": self.id,
            "room": self.room,
            "thread": self.thread,
            "author": {"id": self.author.id, "name": strip_bidi_controls(&self.author.name),
                "bot": self.author.is_bot},
            "role": role,
            "text": strip_bidi_controls(&self.text),
            "media": self.media,
            "caption": self.caption.as_deref().map(strip_bidi_controls),
            "buttons": self.buttons.iter().map(|b| json!({
                "action": b.action.as_str(), "label": b.label(), "token": b.token,
            })).collect::<Vec<_>>(),
            "attachment": self.attachment.as_ref().map(|a| json!({
                "name": a.name, "bytes": a.content.len(), "media_type": a.media_type,
            })),
            "error": self.error,
            "restored": self.restored,
            "revision": self.revision,
            "replies": self.replies,
            "reactions": self.reactions,
            "files": self.files.iter().map(|f| strip_bidi_controls(&f.name)).collect::<Vec<_>>(),
        })
    }

    fn place(&self, connection: &str) -> Place {
        Place {
            adapter: yetibot_conversation::AdapterKind::Web,
            connection: connection.to_owned(),
            room: self.room.clone(),
            room_name: None,
            thread: self.thread.clone(),
        }
    }
}

#[derive(Debug)]
struct Room {
    name: String,
    /// Message IDs, oldest first, threads included.
    order: VecDeque<String>,
    /// Whether its earlier conversation was looked up (or it is new in this process).
    seeded: bool,
}

#[derive(Debug, Default)]
struct Inner {
    rooms: Vec<Room>,
    messages: HashMap<String, Message>,
    next_id: u64,
    seq: u64,
    /// `(seq, update JSON)`, oldest first.
    log: VecDeque<(u64, String)>,
    /// The bytes of the log's JSON.
    log_bytes: usize,
    /// The bytes of every message kept ([`Message::size`]).
    bytes: usize,
    /// Message IDs by age, oldest first.
    by_age: BTreeMap<u64, String>,
    next_age: u64,
}

/// What a page that resumes after `seq` must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Catchup {
    /// Apply these updates, `(seq, JSON)`, in order.
    Updates(Vec<(u64, String)>),
    /// The log no longer reaches back that far: reload the state.
    Reset,
}

/// The shared conversations of one console.
#[derive(Debug)]
pub(crate) struct State {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
    bounds: ConsoleBounds,
    /// Makes this process's message IDs differ from an earlier run's.
    nonce: String,
    /// The console's connection name in [`Place`]s.
    connection: String,
    bot: Author,
}

impl State {
    pub(crate) fn new(
        bounds: ConsoleBounds,
        nonce: String,
        connection: String,
        bot: Author,
    ) -> Self {
        let inner = Inner {
            rooms: vec![Room {
                name: DEFAULT_ROOM.to_owned(),
                order: VecDeque::new(),
                seeded: false,
            }],
            ..Inner::default()
        };
        Self {
            inner: Mutex::new(inner),
            changed: watch::channel(0).0,
            bounds,
            nonce,
            connection,
            bot,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What tells this process's conversations from an earlier run's: a page that sees
    /// another epoch reloads instead of applying updates numbered by another process.
    pub(crate) fn epoch(&self) -> &str {
        &self.nonce
    }

    /// Watches the newest update's number.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Records an update and wakes the pages. Called with the lock held, so the log is in
    /// order.
    fn publish(&self, inner: &mut Inner, update: &Value) {
        inner.seq += 1;
        let seq = inner.seq;
        let json = update.to_string();
        inner.log_bytes += json.len();
        inner.log.push_back((seq, json));
        // Bounded by count and by bytes; the newest update always stays.
        while inner.log.len() > 1
            && (inner.log.len() > self.bounds.log_capacity
                || inner.log_bytes > self.bounds.max_log_bytes)
        {
            if let Some((_, old)) = inner.log.pop_front() {
                inner.log_bytes -= old.len();
            }
        }
        self.changed.send_replace(seq);
    }

    /// Removes a message from memory (without an update: pages keep what they have).
    fn forget(inner: &mut Inner, id: &str) {
        let Some(message) = inner.messages.remove(id) else {
            return;
        };
        inner.bytes -= message.size();
        inner.by_age.remove(&message.age);
        if let Some(root) = message
            .thread
            .as_ref()
            .and_then(|t| inner.messages.get_mut(t))
        {
            root.replies = root.replies.saturating_sub(1);
        }
        if let Some(room) = inner.rooms.iter_mut().find(|r| r.name == message.room) {
            room.order.retain(|m| m != id);
        }
    }

    /// Evicts the oldest messages, across rooms, while memory is over its byte budget;
    /// `keep` (the message just added) stays.
    fn within_budget(&self, inner: &mut Inner, keep: &str) {
        while inner.bytes > self.bounds.max_bytes {
            let Some((_, oldest)) = inner.by_age.iter().next() else {
                break;
            };
            if oldest == keep {
                break;
            }
            let oldest = oldest.clone();
            Self::forget(inner, &oldest);
        }
    }

    fn new_id(&self, inner: &mut Inner) -> String {
        inner.next_id += 1;
        format!("{}-{}", self.nonce, inner.next_id)
    }

    fn check_text(&self, text: &str) -> Result<(), StateError> {
        if text.trim().is_empty() {
            return Err(StateError::Blank);
        }
        if text.len() > self.bounds.max_text_bytes {
            return Err(StateError::TooLong(self.bounds.max_text_bytes));
        }
        Ok(())
    }

    /// Adds `message` to its room, evicting the room's oldest messages past the bound and
    /// the oldest of all past the byte budget.
    fn insert(&self, inner: &mut Inner, mut message: Message) {
        let room_name = message.room.clone();
        let id = message.id.clone();
        inner.next_age += 1;
        message.age = inner.next_age;
        inner.by_age.insert(message.age, id.clone());
        inner.bytes += message.size();
        if let Some(root) = message
            .thread
            .as_ref()
            .and_then(|t| inner.messages.get_mut(t))
        {
            root.replies += 1;
        }
        let update = json!({"type": "message", "message": message.to_json()});
        inner.messages.insert(id.clone(), message);
        let mut evicted = Vec::new();
        if let Some(room) = inner.rooms.iter_mut().find(|r| r.name == room_name) {
            room.order.push_back(id.clone());
            while room.order.len() > self.bounds.max_room_messages {
                if let Some(old) = room.order.pop_front() {
                    evicted.push(old);
                }
            }
        }
        for old in evicted {
            Self::forget(inner, &old);
        }
        self.within_budget(inner, &id);
        self.publish(inner, &update);
    }

    /// A message from the operator without attachments: its ID and place.
    #[cfg(test)]
    pub(crate) fn add_user(
        &self,
        author: &Author,
        room: &str,
        thread: Option<&str>,
        text: &str,
    ) -> Result<(String, Place), StateError> {
        self.add_user_with(author, room, thread, text, Vec::new())
    }

    /// A message from the operator, with the images they attached: its ID and place.
    pub(crate) fn add_user_with(
        &self,
        author: &Author,
        room: &str,
        thread: Option<&str>,
        text: &str,
        files: Vec<yetibot_conversation::Attachment>,
    ) -> Result<(String, Place), StateError> {
        self.check_text(text)?;
        let mut inner = self.lock();
        if !inner.rooms.iter().any(|r| r.name == room) {
            return Err(StateError::NoRoom);
        }
        if let Some(root) = thread {
            match inner.messages.get(root) {
                Some(m) if m.room == room && m.restored => return Err(StateError::Restored),
                Some(m) if m.room == room && m.thread.is_none() => {}
                Some(m) if m.room == room => return Err(StateError::NotAThreadRoot),
                _ => return Err(StateError::NoMessage),
            }
        }
        let id = self.new_id(&mut inner);
        let message = Message {
            text: text.to_owned(),
            files,
            ..Message::plain(
                id.clone(),
                room,
                thread.map(str::to_owned),
                author.clone(),
                Kind::User,
            )
        };
        let place = message.place(&self.connection);
        self.insert(&mut inner, message);
        Ok((id, place))
    }

    /// Edits one of the operator's messages: its place and new revision.
    pub(crate) fn edit_user(
        &self,
        author: &Author,
        id: &str,
        text: &str,
    ) -> Result<(Place, u32), StateError> {
        self.check_text(text)?;
        let mut inner = self.lock();
        let Some(message) = inner.messages.get_mut(id) else {
            return Err(StateError::NoMessage);
        };
        if message.kind != Kind::User || message.author.id != author.id {
            return Err(StateError::NotEditable);
        }
        message.text = text.to_owned();
        message.revision = message.revision.saturating_add(1);
        let (place, revision) = (message.place(&self.connection), message.revision);
        let update = json!({"type": "message", "message": message.to_json()});
        self.publish(&mut inner, &update);
        Ok((place, revision))
    }

    /// The images attached to message `id` (none when it is gone).
    pub(crate) fn files_of(&self, id: &str) -> Vec<yetibot_conversation::Attachment> {
        self.lock()
            .messages
            .get(id)
            .map(|m| m.files.clone())
            .unwrap_or_default()
    }

    /// Whether the message exists and carries a button with this token: a pressed button
    /// must be one the page was shown.
    pub(crate) fn has_button(&self, id: &str, token: &str) -> Option<Place> {
        let inner = self.lock();
        let message = inner.messages.get(id)?;
        message
            .buttons
            .iter()
            .any(|b| b.token == token)
            .then(|| message.place(&self.connection))
    }

    /// Posts the bot's messages at `place`: their IDs.
    pub(crate) fn post(&self, place: &Place, messages: Vec<Outgoing>) -> Option<Vec<String>> {
        let mut inner = self.lock();
        if !inner.rooms.iter().any(|r| r.name == place.room) {
            return None;
        }
        if let Some(root) = &place.thread
            && !inner.messages.contains_key(root)
        {
            return None;
        }
        let mut ids = Vec::with_capacity(messages.len());
        for outgoing in messages {
            let id = self.new_id(&mut inner);
            ids.push(id.clone());
            let message = self.bot_message(id, place, outgoing);
            self.insert(&mut inner, message);
        }
        Some(ids)
    }

    fn bot_message(&self, id: String, place: &Place, outgoing: Outgoing) -> Message {
        Message {
            text: outgoing.text,
            media: outgoing.media,
            caption: outgoing.caption,
            buttons: outgoing.buttons,
            attachment: outgoing.attachment,
            error: outgoing.error,
            reply_to: outgoing.in_reply_to,
            ..Message::plain(
                id,
                &place.room,
                place.thread.clone(),
                self.bot.clone(),
                Kind::Bot(outgoing.role),
            )
        }
    }

    /// Replaces one of the bot's messages in place; `false` when it is gone.
    pub(crate) fn replace(&self, id: &str, outgoing: Outgoing) -> bool {
        let mut inner = self.lock();
        let Some(old) = inner.messages.get(id) else {
            return false;
        };
        if old.kind == Kind::User {
            return false;
        }
        let place = old.place(&self.connection);
        let mut message = self.bot_message(id.to_owned(), &place, outgoing);
        message.revision = old.revision.saturating_add(1);
        message.replies = old.replies;
        message.reactions.clone_from(&old.reactions);
        message.age = old.age;
        let old_size = old.size();
        inner.bytes = inner.bytes - old_size + message.size();
        let update = json!({"type": "message", "message": message.to_json()});
        inner.messages.insert(id.to_owned(), message);
        self.within_budget(&mut inner, id);
        self.publish(&mut inner, &update);
        true
    }

    /// Deletes one of the bot's messages; `false` when it is gone.
    pub(crate) fn delete(&self, id: &str) -> bool {
        let mut inner = self.lock();
        let Some(message) = inner.messages.get(id) else {
            return false;
        };
        if message.kind == Kind::User {
            return false;
        }
        let room_name = message.room.clone();
        let thread = message.thread.clone();
        Self::forget(&mut inner, id);
        let update = json!({"type": "deleted", "id": id, "room": room_name, "thread": thread});
        self.publish(&mut inner, &update);
        true
    }

    /// Where a message is and whether the bot wrote it, for a reaction to it.
    pub(crate) fn reaction_target(&self, id: &str) -> Option<(Place, bool)> {
        let inner = self.lock();
        let message = inner.messages.get(id)?;
        Some((message.place(&self.connection), message.kind != Kind::User))
    }

    /// Adds the bot's reaction to a message; `false` when the message is gone or already
    /// shows as many reactions as it may.
    pub(crate) fn react(&self, id: &str, emoji: &str) -> bool {
        let mut inner = self.lock();
        let Some(message) = inner.messages.get_mut(id) else {
            return false;
        };
        let mut added = 0;
        if !message.reactions.iter().any(|r| r == emoji) {
            if message.reactions.len() >= MAX_REACTIONS {
                return false;
            }
            message.reactions.push(emoji.to_owned());
            added = emoji.len();
        }
        let update = json!({"type": "message", "message": message.to_json()});
        inner.bytes += added;
        self.publish(&mut inner, &update);
        true
    }

    /// Opens a room.
    pub(crate) fn create_room(&self, name: &str) -> Result<(), StateError> {
        let valid = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !valid {
            return Err(StateError::BadRoomName);
        }
        let mut inner = self.lock();
        if inner.rooms.iter().any(|r| r.name == name) {
            return Ok(());
        }
        if inner.rooms.len() >= self.bounds.max_rooms {
            return Err(StateError::TooManyRooms(self.bounds.max_rooms));
        }
        inner.rooms.push(Room {
            name: name.to_owned(),
            order: VecDeque::new(),
            // A room made in this process has no earlier conversation to look up.
            seeded: true,
        });
        let update = json!({"type": "room", "name": name});
        self.publish(&mut inner, &update);
        Ok(())
    }

    /// Whether `room` exists and its earlier conversation has not been looked up yet.
    pub(crate) fn needs_seed(&self, room: &str) -> bool {
        self.lock()
            .rooms
            .iter()
            .any(|r| r.name == room && !r.seeded)
    }

    /// Shows `earlier` (oldest first, from the history store) as the start of `room`, once:
    /// only while the room is still empty in this process, and never twice. The messages
    /// are marked restored: they have no buttons, and cannot be edited or threaded.
    pub(crate) fn seed(&self, room: &str, earlier: Vec<HistoryMessage>) {
        let mut inner = self.lock();
        let Some(found) = inner.rooms.iter_mut().find(|r| r.name == room) else {
            return;
        };
        if found.seeded {
            return;
        }
        found.seeded = true;
        if !found.order.is_empty() {
            return;
        }
        let skip = earlier.len().saturating_sub(self.bounds.max_room_messages);
        for past in earlier.into_iter().skip(skip) {
            let id = self.new_id(&mut inner);
            let (author, kind) = if past.from_bot {
                (self.bot.clone(), Kind::Bot(Role::Answer))
            } else {
                let author = Author {
                    id: format!("history:{}", past.author),
                    name: past.author,
                    is_bot: false,
                };
                (author, Kind::User)
            };
            let message = Message {
                text: past.text,
                restored: true,
                ..Message::plain(id, room, None, author, kind)
            };
            self.insert(&mut inner, message);
        }
    }

    /// Everything a page shows of `room`: the room names, the room's messages (threads
    /// included) and the update number they reflect.
    pub(crate) fn snapshot(&self, room: &str) -> Result<Value, StateError> {
        let inner = self.lock();
        let Some(found) = inner.rooms.iter().find(|r| r.name == room) else {
            return Err(StateError::NoRoom);
        };
        let messages: Vec<Value> = found
            .order
            .iter()
            .filter_map(|id| inner.messages.get(id))
            .map(Message::to_json)
            .collect();
        Ok(json!({
            "seq": inner.seq,
            "epoch": self.nonce,
            "rooms": inner.rooms.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            "room": room,
            "messages": messages,
        }))
    }

    /// The newest update's number.
    pub(crate) fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// The updates after `seq`, or [`Catchup::Reset`] when the log no longer has them all.
    pub(crate) fn updates_after(&self, seq: u64) -> Catchup {
        let inner = self.lock();
        if seq > inner.seq {
            return Catchup::Reset;
        }
        let oldest = inner.log.front().map_or(inner.seq + 1, |(s, _)| *s);
        if seq + 1 < oldest {
            return Catchup::Reset;
        }
        Catchup::Updates(
            inner
                .log
                .iter()
                .filter(|(s, _)| *s > seq)
                .cloned()
                .collect(),
        )
    }

    /// A message's attachment: its name and content.
    pub(crate) fn attachment(&self, id: &str) -> Option<Attachment> {
        self.lock().messages.get(id)?.attachment.clone()
    }

    /// The thread at `place` before message `before`, oldest first: the command the thread
    /// started from and its answer (whichever of the two the thread hangs on), then the
    /// thread's replies. The transient status cards are left out.
    pub(crate) fn thread_history(
        &self,
        place: &Place,
        before: &str,
        limits: HistoryLimits,
    ) -> Result<Vec<HistoryMessage>, HistoryError> {
        let Some(root) = &place.thread else {
            return Ok(Vec::new());
        };
        let inner = self.lock();
        let room = inner
            .rooms
            .iter()
            .find(|r| r.name == place.room)
            .ok_or(HistoryError::Unavailable("the room is gone"))?;
        // The command the thread's root belongs to: the root itself, or the command its
        // answer answers.
        let command = match inner.messages.get(root) {
            Some(message) if message.kind != Kind::User => message.reply_to.clone(),
            _ => Some(root.clone()),
        };
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for id in &room.order {
            if id == before {
                break;
            }
            let Some(message) = inner.messages.get(id) else {
                continue;
            };
            let context = command
                .as_ref()
                .is_some_and(|c| id == c || message.reply_to.as_ref() == Some(c));
            let in_thread =
                id == root || context || message.thread.as_deref() == Some(root.as_str());
            if !in_thread || message.kind == Kind::Bot(Role::Status) {
                continue;
            }
            bytes = bytes.saturating_add(message.text.len());
            if out.len() >= limits.max_messages || bytes > limits.max_bytes {
                return Err(HistoryError::TooLong);
            }
            out.push(HistoryMessage {
                author: message.author.name.clone(),
                text: message.text.clone(),
                from_bot: message.kind != Kind::User,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use yetibot_conversation::is_bidi_control;

    use super::*;

    fn state(bounds: ConsoleBounds) -> State {
        State::new(
            bounds,
            "n0".into(),
            "local".into(),
            Author {
                id: "bot".into(),
                name: "yetibot".into(),
                is_bot: true,
            },
        )
    }

    fn operator() -> Author {
        Author {
            id: "local".into(),
            name: "operator".into(),
            is_bot: false,
        }
    }

    #[test]
    fn messages_threads_and_edits() {
        let s = state(ConsoleBounds::default());
        let (root, place) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "!echo hi")
            .expect("root");
        assert_eq!(place.thread, None);
        let (_, in_thread) = s
            .add_user(&operator(), DEFAULT_ROOM, Some(&root), "!ai more")
            .expect("reply");
        assert_eq!(in_thread.thread.as_deref(), Some(root.as_str()));
        let posted = s
            .post(&in_thread, vec![Outgoing::text(Role::Answer, "sure")])
            .expect("posted");
        let (_, reply_id) = (posted.len(), &posted[0]);
        assert_eq!(
            s.add_user(&operator(), DEFAULT_ROOM, Some(reply_id), "x"),
            Err(StateError::NotAThreadRoot)
        );
        assert_eq!(
            s.edit_user(&operator(), &root, "!echo ho").map(|(_, r)| r),
            Ok(1)
        );
        assert_eq!(
            s.edit_user(&operator(), reply_id, "mine now"),
            Err(StateError::NotEditable)
        );
        assert_eq!(
            s.add_user(&operator(), DEFAULT_ROOM, None, "   "),
            Err(StateError::Blank)
        );
        assert_eq!(
            s.add_user(&operator(), "nope", None, "x"),
            Err(StateError::NoRoom)
        );
        let snapshot = s.snapshot(DEFAULT_ROOM).expect("snapshot");
        assert_eq!(snapshot["messages"].as_array().map(Vec::len), Some(3));
        assert_eq!(snapshot["messages"][0]["replies"], 2);
        assert_eq!(snapshot["messages"][0]["revision"], 1);
    }

    #[test]
    fn the_page_never_gets_bidirectional_controls() {
        let s = state(ConsoleBounds::default());
        let (id, place) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "!echo \u{202e}evil")
            .expect("posted");
        // A status card's live text comes straight from the model's stream.
        let status = Outgoing::text(Role::Status, "Working… \u{2066}live\u{2069}");
        s.post(&place, vec![status]).expect("status");
        s.edit_user(&operator(), &id, "!echo \u{202d}edited")
            .expect("edited");
        // serde_json writes the controls as they are, never as escapes.
        let snapshot = s.snapshot(DEFAULT_ROOM).expect("snapshot").to_string();
        assert!(!snapshot.contains(is_bidi_control), "{snapshot}");
        assert!(snapshot.contains("!echo edited") && snapshot.contains("Working… live"));
        let Catchup::Updates(updates) = s.updates_after(0) else {
            panic!("the log reaches back to the start");
        };
        assert!(updates.len() >= 3);
        for (_, update) in updates {
            assert!(!update.contains(is_bidi_control), "{update}");
        }
    }

    #[test]
    fn thread_history_is_the_root_and_replies_before_the_message() {
        let s = state(ConsoleBounds::default());
        let (root, _) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "first")
            .expect("root");
        let (_, elsewhere) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "other")
            .expect("x");
        s.post(
            &elsewhere,
            vec![Outgoing::text(Role::Answer, "not in thread")],
        );
        let (_, place) = s
            .add_user(&operator(), DEFAULT_ROOM, Some(&root), "second")
            .expect("reply");
        s.post(&place, vec![Outgoing::text(Role::Answer, "bot says")]);
        s.post(&place, vec![Outgoing::text(Role::Status, "Working…")]);
        let (now, _) = s
            .add_user(&operator(), DEFAULT_ROOM, Some(&root), "third")
            .expect("now");
        let limits = HistoryLimits {
            max_messages: 10,
            max_bytes: 1_000,
        };
        let history = s.thread_history(&place, &now, limits).expect("history");
        let texts: Vec<(&str, bool)> = history
            .iter()
            .map(|m| (m.text.as_str(), m.from_bot))
            .collect();
        assert_eq!(
            texts,
            [("first", false), ("second", false), ("bot says", true)]
        );
        let tight = HistoryLimits {
            max_messages: 2,
            max_bytes: 1_000,
        };
        assert_eq!(
            s.thread_history(&place, &now, tight),
            Err(HistoryError::TooLong)
        );
        assert_eq!(
            s.thread_history(&place.room_only(), &now, limits),
            Ok(Vec::new())
        );
    }

    fn answer_to(command: &str, text: &str) -> Outgoing {
        Outgoing {
            in_reply_to: Some(command.to_owned()),
            ..Outgoing::text(Role::Answer, text)
        }
    }

    #[test]
    fn a_thread_carries_the_command_and_its_answer_whichever_it_hangs_on() {
        let s = state(ConsoleBounds::default());
        let limits = HistoryLimits {
            max_messages: 10,
            max_bytes: 1_000,
        };
        let (command, top) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "!ai what is 2+2?")
            .expect("command");
        let (other, _) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "!echo elsewhere")
            .expect("other");
        let answer = s
            .post(&top, vec![answer_to(&command, "4")])
            .expect("answer")[0]
            .clone();
        s.post(&top, vec![answer_to(&other, "elsewhere")]);
        // A thread on the question, and one on the answer: the same context first.
        for (root, reply) in [(&command, "and 3+3?"), (&answer, "why?")] {
            let (_, place) = s
                .add_user(&operator(), DEFAULT_ROOM, Some(root), reply)
                .expect("reply");
            let (now, _) = s
                .add_user(&operator(), DEFAULT_ROOM, Some(root), "now")
                .expect("now");
            let history = s.thread_history(&place, &now, limits).expect("history");
            let texts: Vec<String> = history.into_iter().map(|m| m.text).collect();
            assert_eq!(texts, ["!ai what is 2+2?", "4", reply]);
        }
    }

    #[test]
    fn earlier_conversation_is_shown_once_and_only_in_an_empty_room() {
        let s = state(ConsoleBounds::default());
        assert!(s.needs_seed(DEFAULT_ROOM));
        let earlier = vec![
            HistoryMessage {
                author: "operator".into(),
                text: "!echo before the restart".into(),
                from_bot: false,
            },
            HistoryMessage {
                author: "yetibot".into(),
                text: "before the restart".into(),
                from_bot: true,
            },
        ];
        s.seed(DEFAULT_ROOM, earlier.clone());
        assert!(!s.needs_seed(DEFAULT_ROOM));
        s.seed(DEFAULT_ROOM, earlier);
        let snapshot = s.snapshot(DEFAULT_ROOM).expect("snapshot");
        let messages = snapshot["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2, "seeded once");
        assert!(messages.iter().all(|m| m["restored"] == true));
        assert_eq!(messages[1]["role"], "answer");
        assert_eq!(messages[1]["author"]["bot"], true);
        // Restored messages are for reading: no thread, no edit.
        let id = messages[0]["id"].as_str().expect("id").to_owned();
        assert_eq!(
            s.add_user(&operator(), DEFAULT_ROOM, Some(&id), "more"),
            Err(StateError::Restored)
        );
        assert_eq!(
            s.edit_user(&operator(), &id, "changed").map(|(_, r)| r),
            Err(StateError::NotEditable)
        );
        // A new room has nothing to restore.
        s.create_room("fresh").expect("room");
        assert!(!s.needs_seed("fresh"));
        assert!(!s.needs_seed("missing"));
        assert!(snapshot["epoch"].is_string());
    }

    #[test]
    fn rooms_and_messages_stay_within_bounds() {
        let s = state(ConsoleBounds {
            max_rooms: 2,
            max_room_messages: 3,
            log_capacity: 4,
            ..ConsoleBounds::default()
        });
        assert_eq!(s.create_room("Bad Name"), Err(StateError::BadRoomName));
        assert_eq!(s.create_room(&"a".repeat(33)), Err(StateError::BadRoomName));
        assert_eq!(s.create_room("ops"), Ok(()));
        assert_eq!(s.create_room("ops"), Ok(()));
        assert_eq!(s.create_room("more"), Err(StateError::TooManyRooms(2)));
        for n in 0..5 {
            s.add_user(&operator(), "ops", None, &format!("m{n}"))
                .expect("message");
        }
        let snapshot = s.snapshot("ops").expect("snapshot");
        let texts: Vec<&str> = snapshot["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["text"].as_str())
            .collect();
        assert_eq!(texts, ["m2", "m3", "m4"]);
        // Six updates so far (a room, five messages); the log keeps four.
        assert_eq!(s.seq(), 6);
        assert_eq!(s.updates_after(0), Catchup::Reset);
        assert_eq!(s.updates_after(1), Catchup::Reset);
        let Catchup::Updates(updates) = s.updates_after(2) else {
            panic!("expected updates");
        };
        assert_eq!(
            updates.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [3, 4, 5, 6]
        );
        assert_eq!(s.updates_after(6), Catchup::Updates(Vec::new()));
        assert_eq!(s.updates_after(7), Catchup::Reset);
        let too_long = "x".repeat(ConsoleBounds::default().max_text_bytes + 1);
        assert!(matches!(
            s.add_user(&operator(), "ops", None, &too_long),
            Err(StateError::TooLong(_))
        ));
    }

    #[test]
    fn memory_stays_within_its_byte_budget_oldest_first_across_rooms() {
        let s = state(ConsoleBounds {
            max_bytes: 10_000,
            max_log_bytes: 3_000,
            ..ConsoleBounds::default()
        });
        s.create_room("other").expect("room");
        let big = "x".repeat(3_000);
        for (n, room) in ["general", "other", "general", "other", "general"]
            .iter()
            .enumerate()
        {
            s.add_user(&operator(), room, None, &format!("{n}{big}"))
                .expect("message");
        }
        let texts = |room: &str| -> Vec<String> {
            s.snapshot(room).expect("room")["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["text"].as_str().map(|t| t[..1].to_owned()))
                .collect()
        };
        // Five messages of 3,001 bytes in a 10,000-byte budget: the two oldest went.
        assert_eq!(texts("general"), ["2", "4"]);
        assert_eq!(texts("other"), ["3"]);
        let inner = s.lock();
        assert!(inner.bytes <= 10_000);
        assert!(inner.log_bytes <= 3_000 || inner.log.len() == 1);
        assert_eq!(inner.by_age.len(), inner.messages.len());
    }

    #[test]
    fn replace_and_delete_touch_only_bot_messages() {
        let s = state(ConsoleBounds::default());
        let (user, place) = s
            .add_user(&operator(), DEFAULT_ROOM, None, "!x")
            .expect("x");
        let ids = s
            .post(&place, vec![Outgoing::text(Role::Status, "Working…")])
            .expect("posted");
        assert!(s.replace(&ids[0], Outgoing::text(Role::Status, "Working… 1 call")));
        assert!(!s.replace(&user, Outgoing::text(Role::Answer, "forged")));
        assert!(!s.delete(&user));
        assert!(s.delete(&ids[0]));
        assert!(!s.delete(&ids[0]));
        let missing = Place {
            room: "gone".into(),
            ..place
        };
        assert_eq!(
            s.post(&missing, vec![Outgoing::text(Role::Answer, "x")]),
            None
        );
    }
}
