//! The Discord [`Outbox`]: answers as Components V2 cards on the answer lane, status cards
//! and typing on the ancillary lane, edits in place, deletes by confirmed ID, reactions,
//! reply threads, and thread history read completely or not at all.
//!
//! A message create carries a random `nonce` with `enforce_nonce`, so when Discord answers
//! a create with a 5xx, a timeout or a dropped connection (it may have posted the message),
//! the one resend we allow returns the message already posted instead of a second copy.

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde::Deserialize;
use tokio::sync::mpsc;
use twilight_http::request::Form;
use twilight_http::request::channel::reaction::RequestReactionType;
use twilight_http::routing::Route;
use twilight_model::channel::Message;
use twilight_model::channel::message::MessageType;
use twilight_model::id::Id;

use super::DiscordBounds;
use super::history::message_text;
use super::recent::Recent;
use super::render::{Payload, is_status, payloads};
use super::rest::{Body, Failure, Rest};
use crate::emoji::ReactionEmoji;
use crate::event::Place;
use crate::fit::Limits;
use crate::outbox::{HistoryError, HistoryLimits, HistoryMessage, Outbox, Posted, SendError};
use crate::reply::Outgoing;

/// How many thread parents, own messages and status cards are remembered.
const MEMORY: usize = 16_384;

/// A change to the typing indicator of a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Typing {
    /// A request started showing progress there.
    Start(u64),
    /// Its status card was removed.
    Stop(u64),
}

/// What the outbox and the gateway side share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) answers: Rest,
    pub(crate) ancillary: Rest,
    pub(crate) bot_id: u64,
    pub(crate) connection: String,
    pub(crate) bounds: DiscordBounds,
    /// Thread channel → its parent channel.
    pub(crate) threads: Mutex<Recent<u64, u64>>,
    /// Messages this bot posted.
    pub(crate) own: Mutex<Recent<u64, ()>>,
    /// Status cards this bot posted → their channel.
    status: Mutex<Recent<u64, u64>>,
    typing: mpsc::Sender<Typing>,
}

impl Shared {
    pub(crate) fn new(
        answers: Rest,
        ancillary: Rest,
        bot_id: u64,
        connection: String,
        bounds: DiscordBounds,
        typing: mpsc::Sender<Typing>,
    ) -> Self {
        Self {
            answers,
            ancillary,
            bot_id,
            connection,
            bounds,
            threads: Mutex::new(Recent::new(MEMORY)),
            own: Mutex::new(Recent::new(MEMORY)),
            status: Mutex::new(Recent::new(MEMORY)),
            typing,
        }
    }

    pub(crate) fn thread_parent(&self, channel: u64) -> Option<u64> {
        lock(&self.threads).get(&channel).copied()
    }

    pub(crate) fn remember_thread(&self, thread: u64, parent: u64) {
        lock(&self.threads).insert(thread, parent);
    }

    pub(crate) fn is_own(&self, message: u64) -> bool {
        lock(&self.own).contains(&message)
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The outbox every Discord event carries.
#[derive(Debug, Clone)]
pub(crate) struct DiscordOutbox(pub(crate) Arc<Shared>);

#[derive(Deserialize)]
struct Created {
    id: String,
}

fn channel_of(place: &Place) -> Result<u64, SendError> {
    place
        .thread
        .as_deref()
        .unwrap_or(&place.room)
        .parse()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(SendError::Refused("not a Discord channel"))
}

fn message_id(id: &str) -> Result<u64, SendError> {
    id.parse().ok().filter(|id| *id > 0).ok_or(SendError::Gone)
}

fn send_error(failure: Failure) -> SendError {
    match failure {
        Failure::Status(403) => SendError::Refused("the bot lacks a permission here"),
        Failure::Status(404) => SendError::Gone,
        Failure::Status(400..=499) => SendError::Refused("Discord rejected the message"),
        Failure::Status(_) => SendError::Unconfirmed("Discord failed"),
        Failure::RateLimited => SendError::Refused("Discord's rate limit"),
        Failure::Timeout => SendError::Unconfirmed("Discord did not answer in time"),
        Failure::Transport => SendError::Unconfirmed("the connection to Discord failed"),
        Failure::Unauthorized => SendError::Stopping,
    }
}

fn body(fields: &serde_json::Value, file: Option<&(String, Vec<u8>)>) -> Body {
    let json = serde_json::to_vec(fields).unwrap_or_default();
    match file {
        None => Body::Json(json),
        Some((name, bytes)) => Body::Form(Form::new().json_part(b"payload_json", &json).file_part(
            b"files[0]",
            name.as_bytes(),
            bytes,
        )),
    }
}

fn nonce() -> String {
    let mut bytes = [0u8; 8];
    // A nonce only has to differ from the bot's other recent ones; should the system's
    // randomness fail, a counter still keeps them apart.
    if getrandom::fill(&mut bytes).is_err() {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        bytes = NEXT
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_le_bytes();
    }
    // Discord takes nonces of up to 25 characters.
    (u64::from_le_bytes(bytes) >> 1).to_string()
}

impl Shared {
    fn lane(&self, status: bool) -> &Rest {
        if status {
            &self.ancillary
        } else {
            &self.answers
        }
    }

    /// Creates one message; resends once, with the same enforced nonce, only when the first
    /// attempt's outcome is unknown.
    async fn create(&self, lane: &Rest, channel: u64, payload: &Payload) -> Result<u64, SendError> {
        let mut fields = payload.fields.clone();
        fields["nonce"] = serde_json::Value::String(nonce());
        fields["enforce_nonce"] = serde_json::Value::Bool(true);
        let body = body(&fields, payload.file.as_ref());
        let route = Route::CreateMessage {
            channel_id: channel,
        };
        let reply = match lane.send(&route, &body).await {
            Err(failure) if failure.is_uncertain() => lane.send(&route, &body).await,
            other => other,
        }
        .map_err(send_error)?;
        let created: Created = serde_json::from_slice(&reply.body)
            .map_err(|_| SendError::Unconfirmed("Discord's answer was not a message"))?;
        let id = message_id(&created.id)
            .map_err(|_| SendError::Unconfirmed("Discord's answer was not a message"))?;
        lock(&self.own).insert(id, ());
        Ok(id)
    }

    async fn edit(
        &self,
        lane: &Rest,
        channel: u64,
        message: u64,
        payload: &Payload,
    ) -> Result<(), SendError> {
        let route = Route::UpdateMessage {
            channel_id: channel,
            message_id: message,
        };
        lane.send(&route, &body(&payload.fields, payload.file.as_ref()))
            .await
            .map(drop)
            .map_err(send_error)
    }

    async fn remove(&self, channel: u64, message: u64) -> Result<(), SendError> {
        let status_channel = lock(&self.status).remove(&message);
        let lane = self.lane(status_channel.is_some());
        let route = Route::DeleteMessage {
            channel_id: channel,
            message_id: message,
        };
        let result = match lane.send(&route, &Body::None).await {
            Ok(_) | Err(Failure::Status(404)) => Ok(()),
            Err(failure) => Err(send_error(failure)),
        };
        if let Some(channel) = status_channel {
            let _ = self.typing.try_send(Typing::Stop(channel));
        }
        result
    }

    /// A status card that vanished: its channel's typing ends with it.
    fn forget_status(&self, message: u64) {
        if let Some(channel) = lock(&self.status).remove(&message) {
            let _ = self.typing.try_send(Typing::Stop(channel));
        }
    }

    fn posted_status(&self, channel: u64, message: u64) {
        lock(&self.status).insert(message, channel);
        let _ = self.typing.try_send(Typing::Start(channel));
    }

    /// Shows the typing indicator in `channel`, on the ancillary lane.
    pub(crate) async fn trigger_typing(&self, channel: u64) {
        let route = Route::CreateTypingTrigger {
            channel_id: channel,
        };
        let _ = self.ancillary.send(&route, &Body::None).await;
    }

    /// Opens a public thread on `message` in `place`'s channel, named `name`, and returns
    /// the thread's place. Inside a thread the conversation stays where it is.
    pub(crate) async fn open_thread(
        &self,
        place: &Place,
        message: &str,
        name: &str,
    ) -> Result<Place, SendError> {
        if place.thread.is_some() {
            return Ok(place.clone());
        }
        let channel = channel_of(place)?;
        let route = Route::CreateThreadFromMessage {
            channel_id: channel,
            message_id: message_id(message)?,
        };
        let name: String = name.chars().filter(|c| !c.is_control()).take(100).collect();
        let name = if name.trim().is_empty() {
            "Yetibot".to_owned()
        } else {
            name
        };
        let fields = serde_json::json!({ "name": name, "auto_archive_duration": 1440 });
        let reply = self
            .answers
            .send(
                &route,
                &Body::Json(serde_json::to_vec(&fields).unwrap_or_default()),
            )
            .await
            .map_err(send_error)?;
        let created: Created = serde_json::from_slice(&reply.body)
            .map_err(|_| SendError::Unconfirmed("Discord's answer was not a thread"))?;
        let thread = message_id(&created.id)
            .map_err(|_| SendError::Unconfirmed("Discord's answer was not a thread"))?;
        self.remember_thread(thread, channel);
        Ok(place.in_thread(thread.to_string()))
    }

    async fn history(
        &self,
        place: &Place,
        before: &str,
        limits: HistoryLimits,
    ) -> Result<Vec<HistoryMessage>, HistoryError> {
        let Some(thread) = place.thread.as_deref() else {
            return Ok(Vec::new());
        };
        let thread: u64 = thread
            .parse()
            .map_err(|_| HistoryError::Unavailable("not a Discord thread"))?;
        let mut cursor: u64 = before
            .parse()
            .map_err(|_| HistoryError::Unavailable("not a Discord message"))?;
        let page_size = self.bounds.history_page.clamp(1, 100);
        let mut newest_first = Vec::new();
        let mut bytes = 0usize;
        let mut seen = 0usize;
        loop {
            let route = Route::GetMessages {
                after: None,
                around: None,
                before: Some(cursor),
                channel_id: thread,
                limit: Some(page_size),
            };
            let reply = self
                .answers
                .send(&route, &Body::None)
                .await
                .map_err(|f| match f {
                    Failure::Status(403) => HistoryError::Unavailable(
                        "missing permission: View Channel and Read Message History are needed",
                    ),
                    Failure::Status(404) => {
                        HistoryError::Unavailable("the thread no longer exists")
                    }
                    _ => HistoryError::Unavailable("a page of the thread could not be read"),
                })?;
            let page: Vec<Message> = serde_json::from_slice(&reply.body)
                .map_err(|_| HistoryError::Unavailable("a page of the thread was malformed"))?;
            let full = page.len() >= usize::from(page_size);
            // Messages without text are not kept, but still count towards a bound, so that
            // a thread of nothing but files cannot be paged through without end.
            seen = seen.saturating_add(page.len());
            if seen > limits.max_messages.saturating_mul(2).saturating_add(200) {
                return Err(HistoryError::TooLong);
            }
            let mut oldest = None;
            for message in page {
                let id = message.id.get();
                if id >= cursor {
                    // Pages must move strictly back in time; anything else would loop.
                    return Err(HistoryError::Unavailable(
                        "a page of the thread was malformed",
                    ));
                }
                oldest = Some(oldest.map_or(id, |o: u64| o.min(id)));
                let shown = if message.kind == MessageType::ThreadStarterMessage {
                    message.referenced_message.as_deref()
                } else {
                    Some(&message)
                };
                let Some(shown) = shown else { continue };
                let from_bot = shown.author.id.get() == self.bot_id;
                let text = message_text(shown, from_bot);
                if text.is_empty() {
                    continue;
                }
                bytes = bytes.saturating_add(text.len());
                if newest_first.len() >= limits.max_messages || bytes > limits.max_bytes {
                    return Err(HistoryError::TooLong);
                }
                newest_first.push(HistoryMessage {
                    author: shown
                        .author
                        .global_name
                        .clone()
                        .unwrap_or_else(|| shown.author.name.clone()),
                    text,
                    from_bot,
                });
            }
            match oldest {
                Some(oldest) if full => cursor = oldest,
                _ => break,
            }
        }
        newest_first.reverse();
        Ok(newest_first)
    }
}

impl Outbox for DiscordOutbox {
    fn limits(&self) -> Limits {
        Limits::DISCORD
    }

    fn post<'a>(
        &'a self,
        place: &'a Place,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let channel = channel_of(place)?;
            let mut ids = Vec::new();
            for message in &messages {
                let status = is_status(message);
                for payload in payloads(message) {
                    let id = self
                        .0
                        .create(self.0.lane(status), channel, &payload)
                        .await?;
                    if status {
                        self.0.posted_status(channel, id);
                    }
                    ids.push(id.to_string());
                }
            }
            Ok(Posted {
                place: place.clone(),
                ids,
            })
        })
    }

    fn replace<'a>(
        &'a self,
        posted: &'a Posted,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let channel = channel_of(&posted.place)?;
            let mut old = posted.ids.iter();
            let mut ids = Vec::new();
            for message in &messages {
                let status = is_status(message);
                let lane = self.0.lane(status);
                for payload in payloads(message) {
                    let edited = match old.next().map(|id| message_id(id)) {
                        Some(Ok(id)) => match self.0.edit(lane, channel, id, &payload).await {
                            Ok(()) => Some(id),
                            Err(SendError::Gone) => {
                                self.0.forget_status(id);
                                None
                            }
                            Err(error) => return Err(error),
                        },
                        _ => None,
                    };
                    let id = match edited {
                        Some(id) => id,
                        None => {
                            let id = self.0.create(lane, channel, &payload).await?;
                            if status {
                                self.0.posted_status(channel, id);
                            }
                            id
                        }
                    };
                    ids.push(id.to_string());
                }
            }
            for extra in old {
                if let Ok(id) = message_id(extra) {
                    let _ = self.0.remove(channel, id).await;
                }
            }
            Ok(Posted {
                place: posted.place.clone(),
                ids,
            })
        })
    }

    fn delete<'a>(&'a self, posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let channel = channel_of(&posted.place)?;
            let mut result = Ok(());
            for id in &posted.ids {
                let Ok(id) = message_id(id) else { continue };
                if let Err(error) = self.0.remove(channel, id).await {
                    result = Err(error);
                }
            }
            result
        })
    }

    fn react<'a>(
        &'a self,
        place: &'a Place,
        message_id_text: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let channel = channel_of(place)?;
            let message = message_id(message_id_text)?;
            let emoji = ReactionEmoji::parse(emoji).map_err(|e| SendError::Refused(e.reason()))?;
            let request = match &emoji {
                ReactionEmoji::Unicode(name) => RequestReactionType::Unicode { name },
                ReactionEmoji::Custom { name, id, .. } => RequestReactionType::Custom {
                    // The parser accepts only IDs above zero.
                    id: Id::new_checked(*id).ok_or(SendError::Refused("not an emoji"))?,
                    name: Some(name),
                },
            };
            let route = Route::CreateReaction {
                channel_id: channel,
                emoji: &request,
                message_id: message,
            };
            // An unconfirmed reaction is reported as such, never resent.
            self.0
                .answers
                .send(&route, &Body::None)
                .await
                .map(drop)
                .map_err(send_error)
        })
    }

    fn open_thread<'a>(
        &'a self,
        place: &'a Place,
        message_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Place, SendError>> {
        Box::pin(self.0.open_thread(place, message_id, name))
    }

    fn thread_history<'a>(
        &'a self,
        place: &'a Place,
        before: &'a str,
        limits: HistoryLimits,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
        Box::pin(self.0.history(place, before, limits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_address_their_thread_or_channel() {
        let place = Place {
            adapter: yetibot_conversation::AdapterKind::Discord,
            connection: "main".into(),
            room: "10".into(),
            room_name: None,
            thread: None,
        };
        assert_eq!(channel_of(&place), Ok(10));
        assert_eq!(channel_of(&place.in_thread("11")), Ok(11));
        let mut bad = place;
        bad.room = "general".into();
        assert!(matches!(channel_of(&bad), Err(SendError::Refused(_))));
        bad.room = "0".into();
        assert!(channel_of(&bad).is_err());
    }

    #[test]
    fn nonces_fit_discord_and_differ() {
        let (a, b) = (nonce(), nonce());
        assert!(a.len() <= 25 && b.len() <= 25);
        assert_ne!(a, b);
    }
}
