//! The [`Conductor`]: it takes the platform-neutral events of `yetibot-chat-adapters`,
//! runs their commands through the [`Interpreter`] with the identity the platform vouched
//! for, and answers through the event's outbox: the status card of a request that reports
//! progress, the answer fitted to the platform, its caption and buttons, reruns with
//! confirmation, help, tool details, and edited commands that re-run without an obsolete run
//! ever publishing over a newer one. What it does differently for a command it reads from
//! the command's registry hints, never from its name.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tracing::Instrument as _;
use yetibot_chat_adapters::{
    Action, Answer, Author, Button, Event, EventKind, Incoming, Outbox, Outgoing, Place, Posted,
    Role, StatusCall, StatusCard, fit, is_delete_reaction,
};
use yetibot_command::syntax::{self, Part};
use yetibot_command::{Caller, Hints, Interpreter, Progress, Reply};

use crate::cache::{Cache, DEFAULT_CACHE_CAPACITY, Entry, Key, Rerun};
use crate::platform::{LiveShown, RequestPlatform};

/// How a [`Conductor`] paces and bounds its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConductorOptions {
    /// The least time between two edits of a status card (about one per second).
    pub status_interval: Duration,
    /// How long a request runs before its status card (and, on Discord, the typing that goes
    /// with it) appears: a command that answers sooner shows none, so a quick answer is not
    /// preceded by a card that flickers away. Default [`DEFAULT_CARD_DELAY`].
    pub card_delay: Duration,
    /// How long one command may run before it is stopped and reported as timed out.
    pub deadline: Duration,
    /// How many answered commands keep live buttons.
    pub cache_capacity: usize,
    /// A number that differs between runs of the bot, marking every button token, so that a
    /// button posted before a restart is reported as expired instead of matching a command
    /// of this run (tokens are counted from one in each run). The default is random.
    pub instance: u64,
}

impl Default for ConductorOptions {
    fn default() -> Self {
        Self {
            status_interval: Duration::from_secs(1),
            card_delay: DEFAULT_CARD_DELAY,
            deadline: DEFAULT_DEADLINE,
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            instance: random_instance(),
        }
    }
}

/// How long a request runs before its status card appears, by default.
pub const DEFAULT_CARD_DELAY: Duration = Duration::from_secs(1);

/// A random number from the standard library's per-process hashing keys (the operating
/// system's randomness), so the default needs no clock and no extra dependency.
fn random_instance() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// How long one command may run by default: long enough for a full tool loop of slow
/// turns, short enough that a stuck request is reported.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// What is posted in place of an answer the platform refused or did not confirm in time.
pub const UNDELIVERED: &str = "I could not deliver this answer: the chat platform refused it or did not confirm it in time. Send the command again.";

/// The longest an answer's delivery (its post, or the replacement of the earlier answer)
/// may take before it counts as failed. The platform may still show it later; it is not sent
/// again.
const ANSWER_DELIVERY_DEADLINE: Duration = Duration::from_secs(30);

/// What a second press of a rerun confirmation (or its cancel) says.
pub const USED_BUTTON: &str = "This confirmation was already used: each one works once. Press Run again on the answer for a new one.";

/// What a press of an expired button answers.
pub const EXPIRED_BUTTON: &str = "This button has expired (the bot restarted, or the command is too old). Send the command again to run it.";

/// Runs chat events through the interpreter. Share it behind an [`Arc`]: each event is
/// handled by its own call to [`Conductor::handle`], concurrently.
pub struct Conductor {
    interpreter: Arc<Interpreter>,
    options: ConductorOptions,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Conductor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conductor")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// How one run of a command ends up.
struct Run {
    replies: Vec<Reply>,
    details: Option<StatusCard>,
    /// The status card, removed once the answer is out: confirmed, or still being posted or
    /// edited when the run ended (then removed once, and only if, the platform confirms it).
    card: Option<PendingCard>,
    /// Where the answer goes.
    place: Place,
    /// Interim messages already posted while the run went on (confirmed only).
    live: Vec<Posted>,
}

impl Conductor {
    /// A conductor over `interpreter`.
    #[must_use]
    pub fn new(interpreter: Arc<Interpreter>, options: ConductorOptions) -> Self {
        Self {
            interpreter,
            cache: Mutex::new(Cache::new(options.cache_capacity, options.instance)),
            options,
        }
    }

    /// The interpreter it runs commands with.
    #[must_use]
    pub fn interpreter(&self) -> &Interpreter {
        &self.interpreter
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Handles one event to the end: runs what it asks for and posts every reply. Events
    /// from bots (this one included) are ignored, and so is a new message seen before (a
    /// platform's replay after a reconnect).
    ///
    /// The event runs inside its own request span
    /// ([`yetibot_redaction::private::request_span`]), so that once a command touches private
    /// content, none of this event's later log events (the reply's formatting and delivery
    /// included) is written by a subscriber that honours the marker.
    pub async fn handle(&self, incoming: Incoming) {
        self.handle_event(incoming)
            .instrument(yetibot_redaction::private::request_span())
            .await;
    }

    async fn handle_event(&self, incoming: Incoming) {
        let Incoming { event, outbox } = incoming;
        if event.author.is_bot {
            return;
        }
        let key = Key {
            place: event.place.clone(),
            message_id: event.message_id.clone(),
        };
        match &event.kind {
            EventKind::Message { text } => {
                // Checked and started under one lock: two copies of a replayed event
                // arriving together still run once.
                let Ok(generation) = self.cache().begin(&key, event.revision, true) else {
                    return;
                };
                self.run_command(&outbox, &event, true, &key, text, generation)
                    .await;
            }
            EventKind::Edited { text } => {
                // The edit's text is the command's from now on, and it supersedes a pending
                // confirmation, which must not run the old text. An edit older than one
                // already started never runs.
                let started = {
                    let mut cache = self.cache();
                    match cache.begin(&key, event.revision, false) {
                        Err(_) => None,
                        Ok(generation) => {
                            let stale = cache.get_mut(&key).and_then(|entry| {
                                text.clone_into(&mut entry.text);
                                match std::mem::replace(&mut entry.rerun, Rerun::Idle) {
                                    Rerun::Confirming { token, card } => Some((token, card)),
                                    other => {
                                        entry.rerun = other;
                                        None
                                    }
                                }
                            });
                            if let Some((token, _)) = &stale {
                                cache.unbind_token(token);
                            }
                            Some((generation, stale))
                        }
                    }
                };
                let Some((generation, stale)) = started else {
                    return;
                };
                if let Some((_, card)) = stale {
                    let _ = outbox.delete(&card).await;
                }
                self.run_command(&outbox, &event, false, &key, text, generation)
                    .await;
            }
            EventKind::Reacted {
                emoji,
                on_bot_message,
            } => {
                // A delete reaction on one of the bot's own messages removes it; other
                // reactions (and any on people's messages) do nothing.
                if *on_bot_message && is_delete_reaction(event.place.adapter, emoji) {
                    // A deleted confirmation card takes its pending rerun with it.
                    self.cache().forget_card(&event.message_id);
                    let posted = Posted {
                        place: event.place.clone(),
                        ids: vec![event.message_id.clone()],
                    };
                    let _ = outbox.delete(&posted).await;
                }
            }
            EventKind::Pressed { action, token } => {
                self.pressed(&outbox, &event, *action, token).await;
            }
        }
    }

    /// Runs a command message (new, edited or confirmed for a rerun) as run `generation`
    /// and publishes its answer unless a newer run of the same message started meanwhile.
    /// `new_message` says it is the message's first run, as its author sent it: an edit or
    /// a confirmed rerun is not, even of a message never edited.
    async fn run_command(
        &self,
        outbox: &Arc<dyn Outbox>,
        event: &Event,
        new_message: bool,
        key: &Key,
        text: &str,
        generation: u64,
    ) {
        // However the run ends (answered, superseded, cancelled, or a panic unwinding), it
        // is no longer in flight and a confirmed rerun no longer blocks the next one.
        let _finished = RunGuard {
            conductor: self,
            key,
        };
        // `!thread <command>` runs the command; its answer goes in a new thread.
        let wrapped = self.unwrap_thread(text);
        let text = wrapped.as_deref().unwrap_or(text);
        // The line's hints, read once for where the answer goes and how the run is shown.
        let hints = self.hints(text);
        let target = self
            .target(
                outbox,
                event,
                key,
                text,
                wrapped.is_some() || hints.opens_thread,
            )
            .await;
        let mut run = self
            .execute(outbox, event, new_message, &target, text, hints)
            .await;
        let card = run.card.take();
        self.publish(outbox, event, key, text, generation, run)
            .await;
        // The answer goes first; the card is removed only after, and only once confirmed.
        // A card whose post or edit is still in flight is waited for here, after the answer,
        // so a slow or rate-limited status update never holds the answer back.
        if let Some(card) = card
            && let Ok(Some(card)) = tokio::time::timeout(CARD_SETTLE_DEADLINE, card).await
        {
            let _ = outbox.delete(&card).await;
        }
    }

    /// Posts a run's answer (replacing the command's earlier answer) and records it, unless
    /// a newer run of the command started meanwhile.
    async fn publish(
        &self,
        outbox: &Arc<dyn Outbox>,
        event: &Event,
        key: &Key,
        text: &str,
        generation: u64,
        run: Run,
    ) {
        let (previous, token) = {
            let mut cache = self.cache();
            if !cache.is_current(key, generation) {
                // An edit or rerun that started later owns the answer now.
                return;
            }
            let previous = cache.get(key).and_then(|e| e.posted.clone());
            let token = cache
                .get(key)
                .map(|e| e.token.clone())
                .unwrap_or_else(|| cache.token());
            (previous, token)
        };
        let details = run.details.filter(|card| !card.calls.is_empty());
        let mut messages = Vec::new();
        for reply in &run.replies {
            let answer = answer(reply, &token, details.is_some());
            messages.extend(fit(&answer, &outbox.limits()));
        }
        // Each part says which message it answers, for platforms that link the two.
        for message in &mut messages {
            message.in_reply_to = Some(key.message_id.clone());
        }
        let delivered = match (&previous, messages.is_empty()) {
            (Some(previous), _) => Some(within_deadline(outbox.replace(previous, messages)).await),
            (None, true) => None,
            (None, false) => Some(within_deadline(outbox.post(&run.place, messages)).await),
        };
        let obsolete = !self.cache().is_current(key, generation);
        if obsolete {
            // An obsolete run's live messages go with it.
            for posted in &run.live {
                let _ = outbox.delete(posted).await;
            }
            return;
        }
        let posted = match delivered {
            None => None,
            Some(Some(posted)) => Some(posted),
            Some(None) => {
                // Refused, failed or unconfirmed in time: said so, never sent again. An
                // earlier answer stays tracked, so the next edit or rerun replaces it instead
                // of posting beside it.
                let _ = within_deadline(outbox.post(
                    &run.place,
                    vec![Outgoing {
                        error: true,
                        ..Outgoing::text(Role::Notice, UNDELIVERED)
                    }],
                ))
                .await;
                previous.clone()
            }
        };
        // The live messages belong to the answer: a rerun or an edit replaces them too.
        let posted = match (posted, run.live.is_empty()) {
            (posted, true) => posted,
            (posted, false) => Some(Posted {
                place: run.place.clone(),
                ids: run
                    .live
                    .iter()
                    .flat_map(|p| p.ids.iter().cloned())
                    .chain(posted.into_iter().flat_map(|p| p.ids))
                    .collect(),
            }),
        };
        let mut cache = self.cache();
        if !cache.is_current(key, generation) {
            return;
        }
        // Only commands that answered keep buttons (ordinary chat would evict them).
        if posted.is_none() && previous.is_none() {
            return;
        }
        let rerun = cache
            .get(key)
            .map_or(Rerun::Idle, |entry| match &entry.rerun {
                Rerun::Running => Rerun::Idle,
                other => other.clone(),
            });
        cache.put(
            key.clone(),
            Entry {
                text: text.to_owned(),
                requester: event.author.clone(),
                attachments: event.attachments.clone(),
                posted,
                details,
                token,
                rerun,
            },
        );
    }

    /// Runs `text` as `author` at the event's place, with the status card while it runs.
    async fn execute(
        &self,
        outbox: &Arc<dyn Outbox>,
        event: &Event,
        new_message: bool,
        target: &Place,
        text: &str,
        hints: LineHints,
    ) -> Run {
        let platform = RequestPlatform::new(outbox, event, new_message);
        let (platform, progress) = platform.with_progress();
        // Live replies: the platform shows each interim message while later tools run.
        let (platform, messages) =
            if outbox.limits().live_replies && hints.first.is_some_and(|h| h.interim_replies) {
                let (platform, messages) = platform.with_interim();
                (platform, Some(messages))
            } else {
                (platform, None)
            };
        // The web console shows the answer's text while the model writes it.
        let (platform, written) = if outbox.limits().live_text {
            let (platform, written) = platform.with_live_text();
            (platform, Some(written))
        } else {
            (platform, None)
        };
        let caller = caller(event, &event.author, platform);
        let eager = hints.live_progress;
        let (done, finished) = watch::channel(false);
        let finished_live = finished.clone();
        let work = async {
            let replies = match tokio::time::timeout(
                self.options.deadline,
                self.interpreter.handle_message(&caller, text),
            )
            .await
            {
                Ok(replies) => replies,
                Err(_) => vec![timed_out(self.options.deadline)],
            };
            done.send_replace(true);
            replies
        };
        let status = status_card(
            outbox,
            target,
            Watched {
                progress,
                text: written,
            },
            finished,
            eager,
            Pace {
                delay: self.options.card_delay,
                interval: self.options.status_interval,
            },
        );
        let live = live_messages(outbox, target, messages, finished_live);
        let (replies, (card, details), live) = tokio::join!(work, status, live);
        Run {
            replies,
            details,
            card,
            place: target.clone(),
            live,
        }
    }

    /// The hints of the commands a chat line runs (`!thread` already taken off): the first
    /// stage's command's, whether any stage's command shows live progress, whether a line
    /// that is one command opens a reply thread, and whether running it again may cost money.
    fn hints(&self, text: &str) -> LineHints {
        let Some(expression) = text.strip_prefix(self.interpreter.prefix()) else {
            // Ordinary chat may run embedded commands: any of them could cost.
            return LineHints {
                may_cost: true,
                ..LineHints::default()
            };
        };
        if expression.trim().is_empty() {
            // A bare prefix runs the caller's last command, whatever it was.
            return LineHints {
                may_cost: true,
                ..LineHints::default()
            };
        }
        let Ok(parsed) = syntax::parse(expression) else {
            // A line that cannot be read runs nothing.
            return LineHints::default();
        };
        let registry = self.interpreter.registry();
        let hints_of = |word: &str| registry.get(word).map(|spec| spec.hints);
        let first = parsed.first_word().and_then(hints_of);
        let live_progress = parsed
            .stages
            .iter()
            .filter_map(syntax::Stage::first_word)
            .filter_map(hints_of)
            .any(|hints| hints.live_progress);
        // A reply thread is for a command sent alone: its arguments as typed decide.
        let opens_thread = match (parsed.stages.as_slice(), first) {
            (
                [stage],
                Some(Hints {
                    opens_thread: Some(opens),
                    ..
                }),
            ) => match (stage.first_word(), stage.parts.first()) {
                (Some(word), Some(Part::Text(head))) => {
                    let args = head.trim_start().strip_prefix(word).unwrap_or_default();
                    opens(args)
                }
                _ => false,
            },
            _ => false,
        };
        // A stage may run anything when its command is an alias or an unknown word, when its
        // command word is not typed, or when it holds a sub-expression (which may name any
        // command): a rerun may cost money then too.
        let may_cost = parsed.stages.iter().any(|stage| {
            let has_sub = stage.parts.iter().any(|part| matches!(part, Part::Sub(_)));
            has_sub
                || stage
                    .first_word()
                    .is_none_or(|word| hints_of(word).is_none_or(|hints| hints.may_cost))
        });
        LineHints {
            first,
            live_progress,
            opens_thread,
            may_cost,
        }
    }

    /// The command inside `!thread <command>`, prefix included, or `None` for any other
    /// text.
    fn unwrap_thread(&self, text: &str) -> Option<String> {
        let prefix = self.interpreter.prefix();
        let inner = text.strip_prefix(prefix)?.strip_prefix("thread")?;
        let inner = inner.strip_prefix([' ', '\n', '\t'])?.trim_start();
        (!inner.is_empty()).then(|| format!("{prefix}{inner}"))
    }

    /// Where a run's answer and status card go: where the command's earlier answer is, else
    /// a new thread when `new_thread` asks for one (`!thread`, or a command whose hints open
    /// one; the outbox opens it where the platform has threads), else the command's own place.
    async fn target(
        &self,
        outbox: &Arc<dyn Outbox>,
        event: &Event,
        key: &Key,
        text: &str,
        new_thread: bool,
    ) -> Place {
        let previous = self
            .cache()
            .get(key)
            .and_then(|entry| entry.posted.as_ref().map(|p| p.place.clone()));
        if let Some(place) = previous {
            return place;
        }
        let expression = text.strip_prefix(self.interpreter.prefix());
        if event.place.thread.is_some() || !new_thread {
            return event.place.clone();
        }
        let name: String = expression
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(80)
            .collect();
        outbox
            .open_thread(&event.place, &event.message_id, &name)
            .await
            .unwrap_or_else(|_| event.place.clone())
    }

    /// A button press.
    async fn pressed(&self, outbox: &Arc<dyn Outbox>, event: &Event, action: Action, token: &str) {
        let place = &event.place;
        let found = {
            let cache = self.cache();
            cache
                .by_token(token)
                .and_then(|key| cache.get(&key).cloned().map(|entry| (key, entry)))
        };
        let Some((key, entry)) = found else {
            let used = self.cache().was_used(token);
            notice(
                outbox,
                place,
                if used { USED_BUTTON } else { EXPIRED_BUTTON },
            )
            .await;
            return;
        };
        match action {
            Action::Help => {
                let topic = entry
                    .text
                    .strip_prefix(self.interpreter.prefix())
                    .and_then(|e| syntax::parse(e).ok())
                    .and_then(|e| e.first_word().map(str::to_owned))
                    // Only a plain command name becomes the topic: the word is pasted into
                    // a new command line, so quotes or sub-expressions must not reach it.
                    .filter(|word| is_command_name(word))
                    .unwrap_or_default();
                let caller = caller(
                    event,
                    &event.author,
                    RequestPlatform::new(outbox, event, false),
                );
                let reply = self
                    .interpreter
                    .run(&caller, &format!("help {topic}"))
                    .await;
                let mut messages = fit(&answer(&reply, "", false), &outbox.limits());
                for message in &mut messages {
                    message.role = Role::Notice;
                    message.buttons.clear();
                }
                let _ = outbox.post(place, messages).await;
            }
            Action::ShowDetails => {
                let text = entry.details.as_ref().map_or_else(
                    || "No tool calls were made for this answer.".to_owned(),
                    details_markdown,
                );
                notice(outbox, place, &text).await;
            }
            Action::RunAgain => {
                if event.author.id != entry.requester.id {
                    let text = format!("Only {} can run this command again.", entry.requester.name);
                    notice(outbox, place, &text).await;
                    return;
                }
                if entry.rerun != Rerun::Idle {
                    notice(
                        outbox,
                        place,
                        "A rerun of this command is already waiting for confirmation or running.",
                    )
                    .await;
                    return;
                }
                let pressed = {
                    let mut cache = self.cache();
                    if cache.in_flight(&key) {
                        None
                    } else {
                        let at = cache.current(&key);
                        Some((cache.token(), at))
                    }
                };
                let Some((confirm_token, pressed_at)) = pressed else {
                    notice(
                        outbox,
                        place,
                        "This command is still running; wait for its answer, then run it again.",
                    )
                    .await;
                    return;
                };
                // Every rerun is confirmed; one that may cost money says so.
                let cost = if self.hints(&entry.text).may_cost {
                    " and may call paid models or tools again"
                } else {
                    ""
                };
                let card = Outgoing::text(
                    Role::Notice,
                    format!(
                        "Run `{}` again? It runs with the same permissions as before{cost}.",
                        shortened(&entry.text.replace('`', "'"), MAX_SHOWN_COMMAND_CHARS)
                    ),
                )
                .with_buttons(vec![
                    Button {
                        action: Action::ConfirmRerun,
                        token: confirm_token.clone(),
                    },
                    Button {
                        action: Action::CancelRerun,
                        token: confirm_token.clone(),
                    },
                ]);
                let Ok(posted) = outbox.post(place, vec![card]).await else {
                    return;
                };
                let kept = {
                    let mut cache = self.cache();
                    // An edit or run that started while the card was being posted makes it
                    // stale: it would offer text that is no longer the command's.
                    let unchanged = cache.current(&key) == pressed_at && !cache.in_flight(&key);
                    match cache.get_mut(&key) {
                        Some(entry) if unchanged && entry.rerun == Rerun::Idle => {
                            entry.rerun = Rerun::Confirming {
                                token: confirm_token.clone(),
                                card: posted.clone(),
                            };
                            cache.bind_token(confirm_token, &key);
                            true
                        }
                        _ => false,
                    }
                };
                if !kept {
                    // Another press won the race: this card must not stay usable.
                    let _ = outbox.delete(&posted).await;
                }
            }
            Action::ConfirmRerun | Action::CancelRerun => {
                if event.author.id != entry.requester.id {
                    let text = format!("Only {} can confirm this rerun.", entry.requester.name);
                    notice(outbox, place, &text).await;
                    return;
                }
                // The confirmation is consumed before anything runs, so two presses (or a
                // press racing an edit) run the command at most once.
                let card = {
                    let mut cache = self.cache();
                    let Some(entry) = cache.get_mut(&key) else {
                        return;
                    };
                    match std::mem::replace(&mut entry.rerun, Rerun::Idle) {
                        Rerun::Confirming {
                            token: pending,
                            card,
                        } if pending == token => {
                            if action == Action::ConfirmRerun {
                                entry.rerun = Rerun::Running;
                            }
                            cache.consume_token(token);
                            Some(card)
                        }
                        other => {
                            entry.rerun = other;
                            None
                        }
                    }
                };
                let Some(card) = card else {
                    notice(outbox, place, "This confirmation has expired: the command was edited or already run again.").await;
                    return;
                };
                let _ = outbox.delete(&card).await;
                if action == Action::ConfirmRerun {
                    // The current text and revision, under the same lock as the start.
                    let started = {
                        let mut cache = self.cache();
                        let text = cache
                            .get(&key)
                            .map_or_else(|| entry.text.clone(), |e| e.text.clone());
                        let revision = cache.current(&key).map_or(0, |(_, r)| r);
                        cache
                            .begin(&key, revision, false)
                            .ok()
                            .map(|generation| (text, revision, generation))
                    };
                    let Some((text, revision, generation)) = started else {
                        return;
                    };
                    let original = Event {
                        place: key.place.clone(),
                        author: entry.requester.clone(),
                        message_id: key.message_id.clone(),
                        revision,
                        attachments: entry.attachments.clone(),
                        kind: EventKind::Message { text: text.clone() },
                    };
                    self.run_command(outbox, &original, false, &key, &text, generation)
                        .await;
                }
            }
        }
    }
}

/// The longest command a confirmation card quotes.
const MAX_SHOWN_COMMAND_CHARS: usize = 300;

/// Ends a run's bookkeeping however the run ends.
struct RunGuard<'a> {
    conductor: &'a Conductor,
    key: &'a Key,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        let mut cache = self.conductor.cache();
        cache.finish(self.key);
        if let Some(entry) = cache.get_mut(self.key)
            && entry.rerun == Rerun::Running
        {
            entry.rerun = Rerun::Idle;
        }
    }
}

/// Whether `word` is a plain command name: letters, digits, `-`, `_` and `.`, at most 64.
fn is_command_name(word: &str) -> bool {
    (1..=64).contains(&word.len())
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `text` cut to `max` characters, with `…` when cut.
fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// The caller of a command from this event: the identity the platform vouched for, and
/// what the request may do on the platform.
fn caller(event: &Event, author: &Author, platform: RequestPlatform) -> Caller {
    let message_id = if event.revision == 0 {
        event.message_id.clone()
    } else {
        format!("{}.{}", event.message_id, event.revision)
    };
    Caller {
        adapter: event.place.adapter,
        connection: event.place.connection.clone(),
        // History keys Slack rooms by name; elsewhere the ID is the key.
        room: event
            .place
            .room_name
            .clone()
            .unwrap_or_else(|| event.place.room.clone()),
        user_id: author.id.clone(),
        user_name: author.name.clone(),
        trusted: true,
        message_id: Some(message_id),
        platform: Some(Arc::new(platform)),
    }
}

/// What the conductor reads from the registry about one chat line.
#[derive(Debug, Clone, Copy, Default)]
struct LineHints {
    /// The hints of the first stage's command, when it is a registered command.
    first: Option<Hints>,
    /// Some stage's command shows its progress from the start.
    live_progress: bool,
    /// The line is one command whose answer goes in a new reply thread.
    opens_thread: bool,
    /// Some stage may cost money (or may run anything: an alias, an unknown word).
    may_cost: bool,
}

/// The answer to post for one reply.
fn answer(reply: &Reply, token: &str, details: bool) -> Answer {
    let mut buttons = Vec::new();
    if !token.is_empty() {
        buttons.push(Button {
            action: Action::RunAgain,
            token: token.to_owned(),
        });
        buttons.push(Button {
            action: Action::Help,
            token: token.to_owned(),
        });
        if details {
            buttons.push(Button {
                action: Action::ShowDetails,
                token: token.to_owned(),
            });
        }
    }
    Answer {
        messages: reply.messages(),
        caption: reply.meta.as_ref().map(|meta| meta.caption.clone()),
        error: reply.error.is_some(),
        buttons,
        files: reply
            .files
            .iter()
            .map(|file| yetibot_chat_adapters::Attachment {
                name: file.name().to_owned(),
                media_type: file.media_type(),
                content: std::sync::Arc::clone(file.bytes()),
            })
            .collect(),
    }
}

fn timed_out(deadline: Duration) -> Reply {
    Reply {
        value: yetibot_json_util::Value::String(String::new()),
        data: None,
        error: Some(format!(
            "💥 The command did not finish within {} minutes and was stopped 💥",
            deadline.as_secs() / 60
        )),
        meta: None,
        notes: Vec::new(),
        files: Vec::new(),
    }
}

/// The platform's confirmation of a delivery, or `None` when it failed or took longer than
/// [`ANSWER_DELIVERY_DEADLINE`].
async fn within_deadline(
    delivery: impl Future<Output = Result<Posted, yetibot_chat_adapters::SendError>>,
) -> Option<Posted> {
    tokio::time::timeout(ANSWER_DELIVERY_DEADLINE, delivery)
        .await
        .ok()
        .and_then(Result::ok)
}

async fn notice(outbox: &Arc<dyn Outbox>, place: &Place, text: &str) {
    let _ = outbox
        .post(place, vec![Outgoing::text(Role::Notice, text)])
        .await;
}

/// The tool snapshot of Show details.
fn details_markdown(card: &StatusCard) -> String {
    let mut text = String::from("Tool calls of this answer:");
    for (n, call) in card.calls.iter().enumerate() {
        let tool = call.tool.as_deref().unwrap_or("(withheld)");
        text.push_str(&format!("\n{}. `{tool}`: {}", n + 1, call.outcome));
    }
    if let Some((used, total)) = card.budget {
        text.push_str(&format!("\n\nBudget: {used} of {total} host calls used."));
    }
    text
}

/// The status card of a progress snapshot.
fn status_of(progress: &Progress) -> StatusCard {
    StatusCard {
        calls: progress
            .steps
            .iter()
            .map(|step| StatusCall {
                tool: step.name.clone(),
                outcome: step.outcome.label().to_owned(),
            })
            .collect(),
        budget: progress.budget,
        text: None,
    }
}

/// A status card's confirmed message, once known: already confirmed, or the outcome of the
/// post or edit still in flight. An edit that fails leaves the card as it was (still
/// confirmed); a post that fails leaves none.
type PendingCard = BoxFuture<'static, Option<Posted>>;

/// The longest the removal of a status card waits, after the answer, for a post or edit of
/// the card that was still in flight when the run ended.
const CARD_SETTLE_DEADLINE: Duration = Duration::from_secs(60);

/// When a status card is first posted (after `delay`) and how often it is edited after.
#[derive(Debug, Clone, Copy)]
struct Pace {
    delay: Duration,
    interval: Duration,
}

/// What a status card follows: the tool loop's progress, and on platforms that show it the
/// answer's text so far.
struct Watched {
    progress: watch::Receiver<Option<Progress>>,
    text: Option<watch::Receiver<LiveShown>>,
}

/// Keeps the status card of one request: posted once the request has run for `pace.delay`
/// (a live command's bare card then, else at the first snapshot or text after it), edited
/// at most once per `pace.interval`, until `finished`. A request that ends within the delay
/// shows no card at all. Every
/// post and edit runs beside the wait for the end, never in front of it: the run's answer is
/// published as soon as the run finishes, whatever the card's platform calls are doing.
/// Returns the card (for removal once the answer is out) and the last progress snapshot.
async fn status_card(
    outbox: &Arc<dyn Outbox>,
    place: &Place,
    watched: Watched,
    mut finished: watch::Receiver<bool>,
    eager: bool,
    pace: Pace,
) -> (Option<PendingCard>, Option<StatusCard>) {
    let Watched {
        mut progress,
        mut text,
    } = watched;
    let mut confirmed: Option<Posted> = None;
    let mut flight: Option<PendingCard> = None;
    let mut shown: Option<StatusCard> = None;
    let mut snapshot: Option<StatusCard> = None;
    // Whether the progress or the text changed since the card was last sent: the card is
    // built (and the text copied) only when it is sent, at most once per interval. A live
    // command's bare card is due from the start; nothing is posted before the delay.
    let mut pending = eager;
    if eager && pace.delay.is_zero() {
        flight = Some(send_card(outbox, place, None, StatusCard::default()));
        shown = Some(StatusCard::default());
        pending = false;
    }
    let mut next_edit = tokio::time::Instant::now() + pace.delay;
    let mut open = true;
    loop {
        // One platform call at a time: the next edit waits for the one in flight.
        let dirty = flight.is_none() && pending;
        tokio::select! {
            () = until_done(&mut finished) => break,
            outcome = in_flight(&mut flight) => {
                flight = None;
                confirmed = outcome;
            }
            changed = progress.changed(), if open => {
                if changed.is_err() {
                    // The sender is gone: only the end is left to wait for.
                    open = false;
                    continue;
                }
                snapshot = progress.borrow_and_update().as_ref().map(status_of);
                pending = true;
            }
            alive = text_changed(&mut text) => {
                if alive {
                    pending = true;
                } else {
                    text = None;
                }
            }
            () = tokio::time::sleep_until(next_edit), if dirty => {
                pending = false;
                let written = text.as_mut().map(|t| t.borrow_and_update().text.clone());
                // A live command's bare card, or text cleared for a new turn with no
                // progress yet: "Working…" alone.
                let next = card_of(snapshot.as_ref(), written.unwrap_or_default())
                    .or_else(|| (eager || shown.is_some()).then(StatusCard::default));
                let Some(next) = next else { continue };
                if shown.as_ref() == Some(&next) {
                    continue;
                }
                // The bare card that only says the request is running does not hold back
                // the first real progress.
                let bare = shown.is_none() && next == StatusCard::default();
                flight = Some(send_card(outbox, place, confirmed.take(), next.clone()));
                shown = Some(next);
                next_edit = tokio::time::Instant::now();
                if !bare {
                    next_edit += pace.interval;
                }
            }
        }
    }
    let card = flight.or_else(|| {
        confirmed.map(|posted| -> PendingCard { Box::pin(std::future::ready(Some(posted))) })
    });
    // Show details keeps the tool calls only: the text is in the answer.
    let details = snapshot
        .or(shown)
        .map(|card| StatusCard { text: None, ..card });
    (card, details)
}

/// The card for a progress snapshot and the text written so far; `None` while there is
/// neither.
fn card_of(snapshot: Option<&StatusCard>, written: String) -> Option<StatusCard> {
    if snapshot.is_none() && written.is_empty() {
        return None;
    }
    let mut card = snapshot.cloned().unwrap_or_default();
    card.text = Some(written).filter(|t| !t.is_empty());
    Some(card)
}

/// Waits until the live text changes: `true`, or `false` once its sender is gone; never
/// ready without one.
async fn text_changed(text: &mut Option<watch::Receiver<LiveShown>>) -> bool {
    match text {
        Some(receiver) => receiver.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// Posts the status card, or edits the posted one, as a future that owns what it needs (so
/// it can outlive the run that started it).
fn send_card(
    outbox: &Arc<dyn Outbox>,
    place: &Place,
    posted: Option<Posted>,
    card: StatusCard,
) -> PendingCard {
    let outbox = Arc::clone(outbox);
    let place = place.clone();
    Box::pin(async move {
        let message = vec![card.to_outgoing()];
        match posted {
            Some(posted) => {
                let edited = outbox.replace(&posted, message).await;
                Some(edited.unwrap_or(posted))
            }
            None => outbox.post(&place, message).await.ok(),
        }
    })
}

/// The outcome of the card's call in flight; never ready when there is none.
async fn in_flight(flight: &mut Option<PendingCard>) -> Option<Posted> {
    match flight {
        Some(call) => call.await,
        None => std::future::pending().await,
    }
}

/// The longest one live message may take to be delivered.
const LIVE_DELIVERY_DEADLINE: Duration = Duration::from_secs(30);

/// Posts each live message as it comes, until the run is `finished` and nothing is left.
/// A message the platform does not confirm in time is not retried (it may have been posted);
/// only confirmed ones are returned.
async fn live_messages(
    outbox: &Arc<dyn Outbox>,
    place: &Place,
    messages: Option<tokio::sync::mpsc::Receiver<String>>,
    mut finished: watch::Receiver<bool>,
) -> Vec<Posted> {
    let Some(mut messages) = messages else {
        return Vec::new();
    };
    let mut posted = Vec::new();
    loop {
        let text = tokio::select! {
            biased;
            text = messages.recv() => text,
            () = until_done(&mut finished) => messages.try_recv().ok(),
        };
        let Some(text) = text else {
            return posted;
        };
        let answer = Answer {
            messages: vec![text],
            ..Answer::default()
        };
        let parts = fit(&answer, &outbox.limits());
        if let Ok(Ok(sent)) =
            tokio::time::timeout(LIVE_DELIVERY_DEADLINE, outbox.post(place, parts)).await
        {
            posted.push(sent);
        }
    }
}

/// Waits until the flag is set (or its sender is gone). The flag's guard never lives across
/// an await of the caller, which keeps the caller's future `Send`.
async fn until_done(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|done| *done).await;
}
