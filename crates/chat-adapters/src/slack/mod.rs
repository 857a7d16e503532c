//! The Slack adapter (feature `slack`): events over Socket Mode, answers through the Web
//! API, both on slack-morphism.
//!
//! Socket Mode needs no public URL: the app-level token opens outbound WebSocket
//! connections (`apps.connections.open`), and slack-morphism reconnects when Slack asks
//! for it (a `disconnect` message) or a connection drops. slack-morphism acknowledges an
//! envelope only once the callback returns and takes one envelope at a time per
//! connection, while Slack redelivers what is not acknowledged within 3 seconds, so the
//! callbacks here do no I/O: they read the event, drop a redelivery by its
//! event ID, and queue the rest for [`SlackAdapter::run`], which looks up names and hands
//! the event to the bot. When the queue is full or the bot stopped taking events, the
//! envelope is deliberately left unacknowledged (and its ID forgotten), so Slack delivers
//! it again instead of losing it.
//!
//! Replies go in the thread of the message that asked: a message outside a thread is the
//! start of the thread its answer opens ([`Place::thread`] is its own timestamp). Rooms are
//! keyed in history by name (`#general`, or the other person's name for a direct message),
//! through a bounded cache of `conversations.info` and `users.info`.

mod api;
mod blocks;
mod inbound;
mod mrkdwn;
mod names;
mod outbox;
mod split;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::config::SlackSettings;
use crate::event::{Author, Event, EventKind, Place};
use crate::outbox::{Intake, IntakeError, Outbox};
use crate::reply::{Outgoing, Role};
use yetibot_conversation::AdapterKind;

pub use api::ApiBounds;
pub use blocks::{MAX_PIECES, SECTION_UNITS};
pub use inbound::MAX_TEXT_BYTES;
pub use mrkdwn::{escape, to_mrkdwn};
pub use names::{NAME_CAPACITY, NAME_REFRESH};
pub use outbox::HISTORY_PAGE;
pub use split::split;

use inbound::{BotIdentity, Ignored, Inbound, Seen, Threads};
use names::Names;
use outbox::SlackOutbox;

/// What the bot says when it cannot tell a conversation's name, which history needs.
pub const NAME_NOTICE: &str = "I cannot read this conversation's name, which my history needs. Add the Slack scopes channels:read, groups:read, im:read, mpim:read and users:read to the app, then reinstall it.";

/// What a conversation is told when Slack did not answer the lookup of its name (a rate
/// limit or an outage) and its message was not taken.
pub const NAME_UNAVAILABLE_NOTICE: &str = "Slack did not tell me this conversation's name, which my history needs, so I did not take that message. Send it again in a moment.";

/// The least time between two notices of one kind to one conversation: messages the bot
/// cannot take (all of them, chatter included) must not each bring a notice.
pub const NOTICE_INTERVAL: Duration = Duration::from_secs(10 * 60);

/// How many conversations' notices are remembered; past it the oldest is forgotten.
const NOTICE_CAPACITY: usize = 1_024;

/// When each conversation was last given each notice, bounded.
#[derive(Debug)]
struct Notices {
    last: HashMap<(String, &'static str), Instant>,
    capacity: usize,
}

impl Notices {
    fn new(capacity: usize) -> Self {
        Self {
            last: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    /// Whether `channel` may be given `notice` at `now`, recording it when so.
    fn allow(&mut self, channel: &str, notice: &'static str, now: Instant) -> bool {
        let key = (channel.to_owned(), notice);
        if self
            .last
            .get(&key)
            .is_some_and(|at| now.saturating_duration_since(*at) < NOTICE_INTERVAL)
        {
            return false;
        }
        if self.last.len() >= self.capacity && !self.last.contains_key(&key) {
            self.last
                .retain(|_, at| now.saturating_duration_since(*at) < NOTICE_INTERVAL);
            if self.last.len() >= self.capacity
                && let Some(oldest) = self
                    .last
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(k, _)| k.clone())
            {
                self.last.remove(&oldest);
            }
        }
        self.last.insert(key, now);
        true
    }
}

/// How an adapter connects, paces and bounds its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlackOptions {
    /// Web API deadlines and rate-limit waits.
    pub api: ApiBounds,
    /// Socket Mode connections kept open at once (Slack delivers each event on one; more
    /// than one keeps events flowing while one reconnects).
    pub connections: u32,
    /// Seconds between pings on a connection; five unanswered pings end it.
    pub ping_interval_secs: u64,
    /// Seconds to wait before opening a connection again after `apps.connections.open`
    /// failed. Reconnecting after a dropped or refreshed connection does not wait.
    pub reconnect_wait_secs: u64,
    /// Events read but not yet handed to the bot.
    pub queue: usize,
    /// Events whose names are looked up at once.
    pub concurrency: usize,
    /// Event IDs remembered against redelivery, and messages whose thread is remembered for
    /// their edits.
    pub seen: usize,
}

impl Default for SlackOptions {
    fn default() -> Self {
        Self {
            api: ApiBounds::default(),
            connections: 2,
            ping_interval_secs: 15,
            reconnect_wait_secs: 10,
            queue: 256,
            concurrency: 16,
            seen: 20_000,
        }
    }
}

/// Why an adapter could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlackError {
    /// Slack refused the bot token.
    #[error("Slack connection {connection}: the bot token was refused ({reason})")]
    Auth {
        /// The connection name.
        connection: String,
        /// Slack's error code.
        reason: String,
    },
    /// Slack refused the app-level token (`apps.connections.open`).
    #[error(
        "Slack connection {connection}: the app-level token was refused ({reason}); it must be an app token (xapp-...) with the connections:write scope"
    )]
    AppToken {
        /// The connection name.
        connection: String,
        /// Slack's error code.
        reason: String,
    },
    /// Slack could not be asked.
    #[error("Slack connection {connection}: {reason}")]
    Unavailable {
        /// The connection name.
        connection: String,
        /// Why, in fixed words.
        reason: &'static str,
    },
}

/// What the callbacks share with the adapter.
struct Shared {
    me: BotIdentity,
    seen: Mutex<Seen>,
    /// The threads of recent messages, for their edits.
    threads: Mutex<Threads>,
    /// When each conversation was last told that the bot cannot take its messages.
    notices: Mutex<Notices>,
    queue: mpsc::Sender<Inbound>,
    intake: Intake,
}

/// Returned by a callback to leave an envelope unacknowledged, so Slack delivers it again.
#[derive(Debug, thiserror::Error)]
#[error("the event was not taken; Slack will deliver it again")]
struct Deferred;

impl Shared {
    /// Whether conversation `channel` may be told `notice` now (then it is recorded).
    fn may_tell(&self, channel: &str, notice: &'static str) -> bool {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .allow(channel, notice, Instant::now())
    }

    /// Takes one event: a redelivery is acknowledged and dropped, an event that triggers
    /// nothing is acknowledged, and one that cannot be queued is deferred.
    fn take(&self, id: &str, read: Result<Inbound, Ignored>) -> Result<(), Deferred> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if !seen.insert(id) {
            tracing::debug!("a Slack event arrived again and was dropped");
            return Ok(());
        }
        let inbound = match read {
            Ok(inbound) => inbound,
            Err(reason) => {
                tracing::debug!(?reason, "a Slack event triggers nothing");
                return Ok(());
            }
        };
        if self.intake.is_closed() || self.queue.try_send(inbound).is_err() {
            seen.forget(id);
            return Err(Deferred);
        }
        Ok(())
    }
}

async fn shared(states: &SlackClientEventsUserState) -> Option<Arc<Shared>> {
    states.read().await.get_user_state::<Arc<Shared>>().cloned()
}

async fn on_push(
    event: SlackPushEventCallback,
    _client: Arc<SlackHyperClientOf>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    let Some(shared) = shared(&states).await else {
        return Ok(());
    };
    let read = serde_json::to_value(&event.event)
        .map_err(|_| Ignored::Malformed)
        .and_then(|body| {
            let mut threads = shared
                .threads
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            inbound::event(&body, &shared.me, &mut threads)
        });
    shared
        .take(&format!("event:{}", event.event_id.0), read)
        .map_err(|e| Box::new(e) as BoxError)
}

/// What a slash command gets: the bot reads commands from messages. Answering it here (to
/// the user alone) also keeps slack-morphism from logging the unhandled envelope, which
/// carries the user's text and its `response_url`.
pub const SLASH_COMMAND_REPLY: &str =
    "This bot takes commands in messages (for example `!ai hello`), not as slash commands.";

async fn on_command(
    _event: SlackCommandEvent,
    _client: Arc<SlackHyperClientOf>,
    _states: SlackClientEventsUserState,
) -> UserCallbackResult<SlackCommandEventResponse> {
    tracing::debug!("a Slack slash command was answered with how to write commands");
    Ok(SlackCommandEventResponse {
        content: SlackMessageContent::new().with_text(SLASH_COMMAND_REPLY.to_owned()),
        response_type: Some(SlackMessageResponseType::Ephemeral),
    })
}

async fn on_interaction(
    event: SlackInteractionEvent,
    _client: Arc<SlackHyperClientOf>,
    states: SlackClientEventsUserState,
) -> UserCallbackResult<()> {
    let Some(shared) = shared(&states).await else {
        return Ok(());
    };
    match serde_json::to_value(&event)
        .map_err(|_| Ignored::Malformed)
        .and_then(|payload| inbound::interaction(&payload))
    {
        Ok((id, press)) => shared
            .take(&id, Ok(press))
            .map_err(|e| Box::new(e) as BoxError),
        Err(reason) => {
            tracing::debug!(?reason, "a Slack interaction triggers nothing");
            Ok(())
        }
    }
}

/// slack-morphism's errors quote envelopes and response bodies (message text, prompts),
/// so only their kind is logged. A deferred event stays unacknowledged; anything else is
/// acknowledged, since it would fail the same way again.
fn on_error(
    error: BoxError,
    _client: Arc<SlackHyperClientOf>,
    _states: SlackClientEventsUserState,
) -> http_status::StatusCode {
    if error.downcast_ref::<Deferred>().is_some() {
        tracing::warn!(
            "a Slack event was left for Slack to deliver again (the bot is busy or stopping)"
        );
        return http_status::StatusCode::SERVICE_UNAVAILABLE;
    }
    match error.downcast_ref::<SlackClientError>() {
        Some(SlackClientError::ProtocolError(_)) => {
            tracing::warn!("a Slack Socket Mode message could not be read and was dropped");
        }
        Some(SlackClientError::SocketModeProtocolError(_)) => {
            tracing::warn!("a Slack Socket Mode connection failed; reconnecting");
        }
        _ => tracing::warn!("the Slack listener reported an error"),
    }
    http_status::StatusCode::OK
}

/// slack-morphism's status code type.
mod http_status {
    pub(super) use slack_morphism::listener::HttpStatusCode as StatusCode;
}

/// The error type slack-morphism's callbacks return.
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The client type of the adapter's connector.
type SlackHyperClientOf = SlackClient<api::Connector>;

/// A connected Slack adapter, ready to [`run`](SlackAdapter::run).
pub struct SlackAdapter {
    connection: String,
    listener: SlackClientSocketModeListener<api::Connector>,
    shared: Arc<Shared>,
    queue: mpsc::Receiver<Inbound>,
    outbox: Arc<SlackOutbox>,
    concurrency: usize,
}

impl std::fmt::Debug for SlackAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackAdapter")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl SlackAdapter {
    /// Checks the bot token (`auth.test`, which also says who the bot is) and the app-level
    /// token (`apps.connections.open`), and prepares the Socket Mode connections. Nothing is received until
    /// [`run`](Self::run). Events go to `intake`.
    ///
    /// # Errors
    ///
    /// [`SlackError::Auth`] when Slack refuses the bot token, [`SlackError::AppToken`] when it
    /// refuses the app-level token, [`SlackError::Unavailable`] when it cannot be asked.
    pub async fn connect(
        settings: &SlackSettings,
        options: SlackOptions,
        intake: Intake,
    ) -> Result<Self, SlackError> {
        let connection = settings.connection.clone();
        let unavailable = |reason| SlackError::Unavailable {
            connection: connection.clone(),
            reason,
        };
        let client = api::client(&settings.api_url).map_err(unavailable)?;
        let web = api::Api::new(Arc::clone(&client), &settings.bot_token, options.api);
        let me = match web.get("auth.test", &[]).await {
            Ok(auth) => identity(&auth)
                .ok_or_else(|| unavailable("Slack's auth.test answer had no bot user"))?,
            Err(api::ApiError::Refused { code, .. }) => {
                return Err(SlackError::Auth {
                    connection,
                    reason: code,
                });
            }
            Err(api::ApiError::RateLimited) => {
                return Err(unavailable("Slack is rate limiting the bot"));
            }
            Err(api::ApiError::Unconfirmed(reason)) => return Err(unavailable(reason)),
        };
        // The app-level token is checked now too, rather than by a listener that would
        // retry a refused token forever: Slack's answer opens one Socket Mode address,
        // which is left unused and expires.
        let apps = api::Api::new(Arc::clone(&client), &settings.app_token, options.api);
        match apps
            .post("apps.connections.open", &serde_json::json!({}))
            .await
        {
            Ok(_) => {}
            Err(api::ApiError::Refused { code, .. }) => {
                return Err(SlackError::AppToken {
                    connection,
                    reason: code,
                });
            }
            Err(api::ApiError::RateLimited) => {
                return Err(unavailable("Slack is rate limiting the bot"));
            }
            Err(api::ApiError::Unconfirmed(reason)) => return Err(unavailable(reason)),
        }
        let (queue_tx, queue) = mpsc::channel(options.queue.max(1));
        let shared = Arc::new(Shared {
            me: me.clone(),
            seen: Mutex::new(Seen::new(options.seen)),
            threads: Mutex::new(Threads::new(options.seen)),
            notices: Mutex::new(Notices::new(NOTICE_CAPACITY)),
            queue: queue_tx,
            intake,
        });
        let environment = SlackClientEventsListenerEnvironment::new(Arc::clone(&client))
            .with_error_handler(on_error)
            .with_user_state(Arc::clone(&shared));
        let callbacks = SlackSocketModeListenerCallbacks::new()
            .with_push_events(on_push)
            .with_interaction_events(on_interaction)
            .with_command_events(on_command);
        let config = SlackClientSocketModeConfig::new()
            .with_max_connections_count(options.connections.max(1))
            .with_ping_interval_in_seconds(options.ping_interval_secs.max(1))
            .with_reconnect_timeout_in_seconds(options.reconnect_wait_secs.max(1))
            .with_initial_backoff_in_seconds(1);
        let listener =
            SlackClientSocketModeListener::new(&config, Arc::new(environment), callbacks);
        let app_token =
            SlackApiToken::new(SlackApiTokenValue(settings.app_token.expose().to_owned()));
        listener
            .listen_for(&app_token)
            .await
            .map_err(|_| unavailable("the Socket Mode listener could not be prepared"))?;
        let outbox = Arc::new(SlackOutbox {
            api: web,
            names: Arc::new(Names::new(NAME_CAPACITY, NAME_REFRESH)),
            me,
        });
        Ok(Self {
            connection,
            listener,
            shared,
            queue,
            outbox,
            concurrency: options.concurrency.max(1),
        })
    }

    /// The connection's name.
    #[must_use]
    pub fn connection(&self) -> &str {
        &self.connection
    }

    /// Where the bot's answers to this connection's events go (the outbox every event of
    /// it carries). It keeps working after [`run`](Self::run) returned, so that answers
    /// still running can be posted.
    #[must_use]
    pub fn outbox(&self) -> Arc<dyn Outbox> {
        Arc::clone(&self.outbox) as Arc<dyn Outbox>
    }

    /// Receives events until `stop` completes, then closes the Socket Mode connections.
    /// Events still being prepared then are dropped; Slack has them acknowledged, but the
    /// bot had not started on them. Every task it starts is owned by this future.
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        let Self {
            connection,
            listener,
            shared,
            mut queue,
            outbox,
            concurrency,
        } = self;
        listener.start().await;
        tracing::info!(connection = connection.as_str(), "Slack adapter started");
        let mut tasks = JoinSet::new();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                Some(inbound) = queue.recv(), if tasks.len() < concurrency => {
                    tasks.spawn(deliver(
                        connection.clone(),
                        Arc::clone(&shared),
                        Arc::clone(&outbox),
                        inbound,
                    ));
                }
            }
        }
        listener.shutdown().await;
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        tracing::info!(connection = connection.as_str(), "Slack adapter stopped");
    }
}

fn identity(auth: &Value) -> Option<BotIdentity> {
    let user_id = auth.get("user_id")?.as_str()?.to_owned();
    Some(BotIdentity {
        user_id,
        bot_id: auth
            .get("bot_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        name: auth
            .get("user")
            .and_then(Value::as_str)
            .unwrap_or("yetibot")
            .to_owned(),
    })
}

/// Looks up the names an event needs and hands it to the bot.
async fn deliver(
    connection: String,
    shared: Arc<Shared>,
    outbox: Arc<SlackOutbox>,
    inbound: Inbound,
) {
    let dyn_outbox = Arc::clone(&outbox) as Arc<dyn Outbox>;
    let names = &outbox.names;
    let api = &outbox.api;
    let mut place = Place {
        adapter: AdapterKind::Slack,
        connection,
        room: inbound.channel().to_owned(),
        room_name: None,
        thread: None,
    };
    let event = match inbound {
        Inbound::Reaction {
            ts,
            user,
            emoji,
            on_bot_message,
            by_bot,
            ..
        } => {
            // Only a reaction to one of the bot's messages can mean anything to it.
            if !on_bot_message || by_bot {
                return;
            }
            Event {
                place,
                author: Author {
                    name: user.clone(),
                    id: user,
                    is_bot: false,
                },
                message_id: ts,
                revision: 0,
                attachments: Vec::new(),
                kind: EventKind::Reacted {
                    emoji,
                    on_bot_message,
                },
            }
        }
        Inbound::Message {
            ts,
            thread,
            user,
            text,
            edit,
            attachments,
            ..
        } => {
            place.thread = Some(thread);
            match names.room(api, &place.room).await {
                Ok(name) => place.room_name = Some(name),
                Err(error) => {
                    // Every message is recorded under its conversation's name, so without
                    // one nothing is taken. Plain chatter arrives here too: a conversation
                    // hears why at most once per NOTICE_INTERVAL, not once per message.
                    let notice = match error {
                        names::NameError::Refused => NAME_NOTICE,
                        names::NameError::Unavailable => NAME_UNAVAILABLE_NOTICE,
                    };
                    tracing::warn!(
                        ?error,
                        "a Slack message was not taken: its conversation's name is unknown"
                    );
                    if shared.may_tell(&place.room, notice) {
                        let _ = dyn_outbox
                            .post(&place, vec![Outgoing::text(Role::Notice, notice)])
                            .await;
                    }
                    return;
                }
            }
            let name = names
                .user(api, &user)
                .await
                .unwrap_or_else(|_| user.clone());
            Event {
                place,
                author: Author {
                    id: user,
                    name,
                    is_bot: false,
                },
                message_id: ts,
                revision: edit.unwrap_or(0),
                attachments,
                kind: match edit {
                    None => EventKind::Message { text },
                    Some(_) => EventKind::Edited { text },
                },
            }
        }
        Inbound::Press {
            thread,
            message_ts,
            user,
            action,
            token,
            ..
        } => {
            place.thread = Some(thread);
            place.room_name = names.room(api, &place.room).await.ok();
            let name = names
                .user(api, &user)
                .await
                .unwrap_or_else(|_| user.clone());
            Event {
                place,
                author: Author {
                    id: user,
                    name,
                    is_bot: false,
                },
                message_id: message_ts,
                revision: 0,
                attachments: Vec::new(),
                kind: EventKind::Pressed { action, token },
            }
        }
    };
    let place = event.place.clone();
    match shared.intake.offer(event, Arc::clone(&dyn_outbox)) {
        Ok(()) => {}
        Err(IntakeError::Busy) => {
            let busy = IntakeError::Busy.to_string();
            if shared.may_tell(&place.room, "busy") {
                let _ = dyn_outbox
                    .post(&place, vec![Outgoing::text(Role::Notice, busy)])
                    .await;
            }
        }
        Err(IntakeError::Closed) => {}
    }
}
