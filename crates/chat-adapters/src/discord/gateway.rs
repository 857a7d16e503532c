//! From gateway events to the bot's [`Event`]s: one task per shard reads its twilight
//! shard (which heartbeats, reconnects and resumes by itself), and this module decides what
//! each event means.
//!
//! Identity comes from the event's author or the interaction's member only. Messages by
//! bots, webhooks, the system or this bot are dropped before they reach the bot. Every kind
//! of event is de-duplicated in bounded memory (new messages by ID, edits by ID and edit
//! time, reactions by message, user and emoji, presses by interaction ID), so the events a
//! resume replays never run a command, or a paid call, twice. Oversized message texts are
//! dropped, and payloads twilight cannot parse or does not know are logged by kind only
//! (never with their data) and skipped.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;
use twilight_gateway::{CloseFrame, Event as GatewayEvent, EventTypeFlags, Shard, StreamExt};
use twilight_model::application::interaction::{Interaction, InteractionData, InteractionType};
use twilight_model::channel::Channel;
use twilight_model::channel::message::{EmojiReactionType, Message, MessageType};
use twilight_model::gateway::GatewayReaction;
use twilight_model::gateway::payload::incoming::GuildCreate;
use twilight_model::user::User;
use yetibot_conversation::AdapterKind;

use super::Error;
use super::outbox::{DiscordOutbox, Shared, lock};
use super::recent::Recent;
use super::render::parse_custom_id;
use super::rest::Body;
use crate::event::{Author, Event, EventKind, Place};
use crate::outbox::{Intake, IntakeError, Outbox};
use crate::reply::{Outgoing, Role};

/// The events the adapter reads; twilight skips the others without parsing them.
pub(crate) const WANTED: EventTypeFlags = EventTypeFlags::MESSAGE_CREATE
    .union(EventTypeFlags::MESSAGE_UPDATE)
    .union(EventTypeFlags::REACTION_ADD)
    .union(EventTypeFlags::INTERACTION_CREATE)
    .union(EventTypeFlags::THREAD_CREATE)
    .union(EventTypeFlags::THREAD_UPDATE)
    .union(EventTypeFlags::THREAD_LIST_SYNC)
    .union(EventTypeFlags::GUILD_CREATE)
    .union(EventTypeFlags::READY)
    .union(EventTypeFlags::RESUMED);

/// Close codes after which reconnecting cannot help: authentication failed (4004), invalid
/// shard (4010), sharding required (4011), invalid API version (4012), invalid intents
/// (4013) and disallowed intents (4014).
pub(crate) fn is_fatal(code: u16) -> bool {
    matches!(code, 4004 | 4010..=4014)
}

/// What a fatal close code means, for the operator.
pub(crate) fn close_reason(code: u16) -> &'static str {
    match code {
        4004 => "the bot token was refused",
        4010 => "the shard number is invalid",
        4011 => "Discord requires more shards for this bot",
        4012 => "the gateway API version is invalid",
        4013 => "the requested intents are invalid",
        4014 => {
            "a privileged intent is not enabled for this application (enable MESSAGE CONTENT in the developer portal)"
        }
        _ => "the gateway closed the connection",
    }
}

/// How long a button press waits for its acknowledgement before it runs anyway (Discord
/// wants one within three seconds).
const ACK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3);

/// The most side tasks (acknowledgements, busy notices) one shard keeps in flight; past it
/// new ones are dropped rather than queued.
const MAX_SIDE_TASKS: usize = 64;

/// What the adapter remembers to recognise replays.
#[derive(Debug)]
pub(crate) struct Seen {
    messages: Recent<u64, ()>,
    /// Message → (last edit time, revision).
    edits: Recent<u64, (i64, u32)>,
    reactions: Recent<(u64, u64, String), ()>,
    presses: Recent<u64, ()>,
}

impl Seen {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            messages: Recent::new(capacity),
            edits: Recent::new(capacity),
            reactions: Recent::new(capacity),
            presses: Recent::new(capacity),
        }
    }
}

/// Turns gateway events into bot events for one adapter; shared by its shard tasks.
#[derive(Debug)]
pub(crate) struct Dispatcher {
    pub(crate) shared: Arc<Shared>,
    pub(crate) outbox: Arc<DiscordOutbox>,
    pub(crate) intake: Intake,
    pub(crate) seen: std::sync::Mutex<Seen>,
}

/// What one gateway event asks of the shard task.
#[derive(Debug)]
pub(crate) enum Step {
    /// Nothing.
    Skip,
    /// Offer this event to the bot.
    Offer(Event),
    /// Acknowledge this interaction, then offer its event (when it is one of ours).
    Press {
        id: u64,
        token: String,
        event: Option<Event>,
    },
}

impl Dispatcher {
    /// What `event` means.
    pub(crate) fn step(&self, event: GatewayEvent) -> Step {
        match event {
            GatewayEvent::MessageCreate(message) => self.message(&message, false),
            GatewayEvent::MessageUpdate(message) => self.message(&message, true),
            GatewayEvent::ReactionAdd(reaction) => self.reaction(&reaction),
            GatewayEvent::InteractionCreate(interaction) => self.interaction(&interaction),
            GatewayEvent::ThreadCreate(thread) => {
                self.thread(&thread);
                Step::Skip
            }
            GatewayEvent::ThreadUpdate(thread) => {
                self.thread(&thread);
                Step::Skip
            }
            GatewayEvent::ThreadListSync(sync) => {
                for thread in &sync.threads {
                    self.thread(thread);
                }
                Step::Skip
            }
            GatewayEvent::GuildCreate(guild) => {
                if let GuildCreate::Available(guild) = guild.as_ref() {
                    for thread in &guild.threads {
                        self.thread(thread);
                    }
                }
                Step::Skip
            }
            _ => Step::Skip,
        }
    }

    fn thread(&self, channel: &Channel) {
        if channel.kind.is_thread()
            && let Some(parent) = channel.parent_id
        {
            self.shared.remember_thread(channel.id.get(), parent.get());
        }
    }

    fn place(&self, channel: u64) -> Place {
        let (room, thread) = match self.shared.thread_parent(channel) {
            Some(parent) => (parent, Some(channel.to_string())),
            None => (channel, None),
        };
        Place {
            adapter: AdapterKind::Discord,
            connection: self.shared.connection.clone(),
            room: room.to_string(),
            room_name: None,
            thread,
        }
    }

    fn is_bot(&self, user: &User) -> bool {
        user.bot || user.system == Some(true) || user.id.get() == self.shared.bot_id
    }

    fn message(&self, message: &Message, edited: bool) -> Step {
        if self.is_bot(&message.author)
            || message.webhook_id.is_some()
            || !matches!(message.kind, MessageType::Regular | MessageType::Reply)
        {
            return Step::Skip;
        }
        if message.content.len() > self.shared.bounds.max_message_bytes {
            tracing::debug!("dropped an oversized Discord message");
            return Step::Skip;
        }
        let id = message.id.get();
        let revision = {
            let mut seen = lock(&self.seen);
            if edited {
                // An update without an edit time is Discord adding embeds, not an edit.
                let Some(at) = message.edited_timestamp.map(|t| t.as_micros()) else {
                    return Step::Skip;
                };
                let revision = match seen.edits.get(&id) {
                    Some((last, _)) if *last >= at => return Step::Skip,
                    Some((_, revision)) => revision.saturating_add(1),
                    None => 1,
                };
                seen.edits.insert(id, (at, revision));
                revision
            } else {
                if seen.messages.insert(id, ()).is_some() {
                    return Step::Skip;
                }
                0
            }
        };
        let name = message
            .member
            .as_ref()
            .and_then(|m| m.nick.clone())
            .or_else(|| message.author.global_name.clone())
            .unwrap_or_else(|| message.author.name.clone());
        let text = message.content.clone();
        Step::Offer(Event {
            place: self.place(message.channel_id.get()),
            author: Author {
                id: message.author.id.to_string(),
                name,
                is_bot: false,
            },
            message_id: id.to_string(),
            revision,
            attachments: attachments(message),
            kind: if edited {
                EventKind::Edited { text }
            } else {
                EventKind::Message { text }
            },
        })
    }

    fn reaction(&self, reaction: &GatewayReaction) -> Step {
        // Reactions the bot adds itself trigger nothing, and neither do other bots'.
        let user = reaction.member.as_ref().map(|m| &m.user);
        if reaction.user_id.get() == self.shared.bot_id || user.is_some_and(|u| self.is_bot(u)) {
            return Step::Skip;
        }
        let emoji = match &reaction.emoji {
            EmojiReactionType::Unicode { name } => name.clone(),
            EmojiReactionType::Custom { name, .. } => name.clone().unwrap_or_default(),
        };
        if emoji.is_empty() || emoji.len() > 128 {
            return Step::Skip;
        }
        let message = reaction.message_id.get();
        let key = (message, reaction.user_id.get(), emoji.clone());
        if lock(&self.seen).reactions.insert(key, ()).is_some() {
            return Step::Skip;
        }
        let on_bot_message = reaction
            .message_author_id
            .is_some_and(|author| author.get() == self.shared.bot_id)
            || self.shared.is_own(message);
        Step::Offer(Event {
            place: self.place(reaction.channel_id.get()),
            author: Author {
                id: reaction.user_id.to_string(),
                name: user.map_or_else(|| reaction.user_id.to_string(), |u| u.name.clone()),
                is_bot: false,
            },
            message_id: message.to_string(),
            revision: 0,
            attachments: Vec::new(),
            kind: EventKind::Reacted {
                emoji,
                on_bot_message,
            },
        })
    }

    fn interaction(&self, interaction: &Interaction) -> Step {
        if interaction.kind != InteractionType::MessageComponent
            || lock(&self.seen)
                .presses
                .insert(interaction.id.get(), ())
                .is_some()
        {
            return Step::Skip;
        }
        let press = || {
            let Some(InteractionData::MessageComponent(data)) = &interaction.data else {
                return None;
            };
            let (action, token) = parse_custom_id(&data.custom_id)?;
            let message = interaction.message.as_ref()?;
            // The clicker is the interaction's member (in a server) or user (in a DM).
            let user = interaction
                .member
                .as_ref()
                .and_then(|m| m.user.as_ref())
                .or(interaction.user.as_ref())?;
            if self.is_bot(user) {
                return None;
            }
            // The interaction names its channel's kind: a thread the adapter did not know of
            // (it started before this process) is learned here.
            if let Some(channel) = &interaction.channel {
                self.thread(channel);
            }
            let channel = interaction
                .channel
                .as_ref()
                .map(|c| c.id.get())
                .unwrap_or_else(|| message.channel_id.get());
            Some(Event {
                place: self.place(channel),
                author: Author {
                    id: user.id.to_string(),
                    name: user
                        .global_name
                        .clone()
                        .unwrap_or_else(|| user.name.clone()),
                    is_bot: false,
                },
                message_id: message.id.to_string(),
                revision: 0,
                attachments: Vec::new(),
                kind: EventKind::Pressed { action, token },
            })
        };
        Step::Press {
            id: interaction.id.get(),
            token: interaction.token.clone(),
            event: press(),
        }
    }

    /// Offers `event`; a full queue gets a public busy notice for the messages and presses
    /// that asked for something.
    fn offer(&self, event: Event, side: &mut JoinSet<()>) {
        let outbox = Arc::clone(&self.outbox) as Arc<dyn Outbox>;
        let notify = matches!(
            event.kind,
            EventKind::Message { .. } | EventKind::Edited { .. } | EventKind::Pressed { .. }
        );
        let place = event.place.clone();
        if let Err(IntakeError::Busy) = self.intake.offer(event, Arc::clone(&outbox))
            && notify
            && side.len() < MAX_SIDE_TASKS
        {
            side.spawn(async move {
                let busy = Outgoing::text(Role::Notice, IntakeError::Busy.to_string());
                let _ = outbox.post(&place, vec![busy]).await;
            });
        }
    }

    /// Carries out one step: a press is acknowledged first (Discord wants that within three
    /// seconds) and only then handed to the bot, on a side task so that the shard keeps
    /// reading.
    pub(crate) fn carry_out(&self, step: Step, side: &mut JoinSet<()>) {
        match step {
            Step::Skip => {}
            Step::Offer(event) => self.offer(event, side),
            Step::Press { id, token, event } => {
                if side.len() >= MAX_SIDE_TASKS {
                    tracing::warn!("dropped a Discord button press: too many in flight");
                    return;
                }
                let shared = Arc::clone(&self.shared);
                let intake = self.intake.clone();
                let outbox = Arc::clone(&self.outbox) as Arc<dyn Outbox>;
                side.spawn(async move {
                    let route = twilight_http::routing::Route::InteractionCallback {
                        interaction_id: id,
                        interaction_token: &token,
                        with_response: false,
                    };
                    // Deferred update: acknowledged publicly, with no message of its own.
                    let body = Body::Json(br#"{"type":6}"#.to_vec());
                    let acknowledged =
                        tokio::time::timeout(ACK_DEADLINE, shared.answers.send(&route, &body));
                    if !matches!(acknowledged.await, Ok(Ok(_))) {
                        tracing::warn!("a Discord button press was not acknowledged");
                    }
                    // Only now does the press run: it may delete the message its button is
                    // on (a rerun's confirmation card), and Discord cannot acknowledge a
                    // press on a deleted message ("This interaction failed").
                    let Some(event) = event else { return };
                    let place = event.place.clone();
                    if let Err(IntakeError::Busy) = intake.offer(event, Arc::clone(&outbox)) {
                        let busy = Outgoing::text(Role::Notice, IntakeError::Busy.to_string());
                        let _ = outbox.post(&place, vec![busy]).await;
                    }
                });
            }
        }
    }
}

/// Reads one shard until `stopping`, or until it closes with a fatal code.
pub(crate) async fn drive(
    mut shard: Shard,
    dispatcher: Arc<Dispatcher>,
    mut stopping: watch::Receiver<bool>,
) -> Result<(), Error> {
    let mut side = JoinSet::new();
    loop {
        tokio::select! {
            () = until_stopped(&mut stopping) => {
                shard.close(CloseFrame::NORMAL);
                // Read until our close is through; after it twilight would reconnect.
                let drain = async {
                    while let Some(item) = shard.next_event(WANTED).await {
                        if matches!(item, Ok(GatewayEvent::GatewayClose(_))) {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), drain).await;
                side.abort_all();
                return Ok(());
            }
            Some(_) = side.join_next(), if !side.is_empty() => {}
            item = shard.next_event(WANTED) => match item {
                None => {
                    return Err(Error::GatewayEnded);
                }
                Some(Err(error)) => {
                    // twilight reconnects and resumes by itself; the error's text can quote
                    // the payload, so only its kind is logged.
                    tracing::warn!(kind = error_kind(error.kind()), "a Discord gateway message was skipped");
                }
                Some(Ok(GatewayEvent::GatewayClose(Some(frame)))) if is_fatal(frame.code) => {
                    side.abort_all();
                    return Err(Error::Closed { code: frame.code, reason: close_reason(frame.code) });
                }
                Some(Ok(event)) => {
                    // What an operator needs to see at info level: the session accepted,
                    // resumed, or closed by Discord (twilight then reconnects by itself).
                    match &event {
                        GatewayEvent::Ready(_) => tracing::info!(
                            shard = shard.id().number(),
                            "Discord accepted the connection (ready)"
                        ),
                        GatewayEvent::Resumed => tracing::info!(
                            shard = shard.id().number(),
                            "the Discord session resumed after a reconnect"
                        ),
                        GatewayEvent::GatewayClose(frame) => tracing::warn!(
                            shard = shard.id().number(),
                            code = frame.as_ref().map(|f| f.code),
                            "Discord closed the gateway connection; reconnecting"
                        ),
                        _ => {}
                    }
                    let step = dispatcher.step(event);
                    dispatcher.carry_out(step, &mut side);
                }
            }
        }
    }
}

/// Waits for the stop flag; the flag's guard never lives across an await of the caller,
/// which keeps the shard's future `Send`.
async fn until_stopped(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|stop| *stop).await;
}

/// The message's attachments as the neutral model keeps them: the CDN URL Discord gives
/// (public HTTPS, fetched without a credential), at most `MAX_ATTACHMENTS`.
fn attachments(message: &Message) -> Vec<yetibot_conversation::Attachment> {
    message
        .attachments
        .iter()
        .filter_map(|a| {
            yetibot_conversation::Attachment::new(
                &a.filename,
                a.content_type.as_deref(),
                &a.url,
                Some(a.size),
            )
        })
        .take(yetibot_conversation::MAX_ATTACHMENTS)
        .collect()
}

fn error_kind(kind: &twilight_gateway::error::ReceiveMessageErrorType) -> &'static str {
    use twilight_gateway::error::ReceiveMessageErrorType as Kind;
    match kind {
        Kind::Deserializing { .. } => "unparsable or unknown payload",
        Kind::Reconnect => "reconnecting",
        Kind::Compression => "compression",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_codes_are_exactly_the_ones_reconnecting_cannot_fix() {
        for code in [4004, 4010, 4011, 4012, 4013, 4014] {
            assert!(is_fatal(code), "{code}");
            assert_ne!(close_reason(code), close_reason(1000));
        }
        for code in [
            1000, 1001, 4000, 4001, 4002, 4003, 4005, 4007, 4008, 4009, 4015,
        ] {
            assert!(!is_fatal(code), "{code}");
        }
    }
}
