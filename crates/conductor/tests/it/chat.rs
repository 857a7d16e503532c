//! The conductor against an in-memory chat adapter (a fake outbox that records what the bot
//! posts, replaces and deletes): answers with captions and buttons, reruns with
//! confirmation, edits and their revision ownership, status cards of AI requests, thread
//! context, replays and deadlines.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use yetibot_ai_providers::{Client, ClientOptions, ProviderConfig, ProviderSet};
use yetibot_chat_adapters::{
    Action, AdapterKind, Author, Event, EventKind, HistoryError, HistoryLimits, HistoryMessage,
    Incoming, Limits, Outbox, Outgoing, Place, Posted, Role, SendError,
};
use yetibot_command::{
    Call, Category, CommandSpec, Handler, Hints, Interpreter, Outcome, Plain, Settings, builtins,
};
use yetibot_conductor::{Conductor, ConductorOptions, EXPIRED_BUTTON, UNDELIVERED, USED_BUTTON};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;
use yetibot_mcp_host::{Host, HostOptions, ServerSet};

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Post(Vec<String>),
    Replace(Vec<String>, Vec<String>),
    Delete(Vec<String>),
    Thread(String, String),
}

/// A chat platform in memory: what is visible now, and every call in order.
struct Memory {
    limits: Limits,
    next: AtomicU64,
    visible: Mutex<BTreeMap<String, Outgoing>>,
    log: Mutex<Vec<Op>>,
    thread: Mutex<Result<Vec<HistoryMessage>, HistoryError>>,
    /// `(message ID, emoji)` of every confirmed reaction.
    reactions: Mutex<Vec<(String, String)>>,
    /// Where each message was posted.
    places: Mutex<BTreeMap<String, Place>>,
    /// When set, posts of messages of this role wait for a permit here (a slow or
    /// rate-limited lane).
    hold: Mutex<Option<(Role, Arc<Semaphore>)>>,
    /// When set, posts and replacements of answers are refused.
    refuse_answers: std::sync::atomic::AtomicBool,
    /// Counts completed posts, for tests that wait for one.
    posts: tokio::sync::watch::Sender<u64>,
    /// Every message ever posted or put in place of another, in order.
    every: Mutex<Vec<Outgoing>>,
}

impl Memory {
    fn new(limits: Limits) -> Arc<Self> {
        Arc::new(Self {
            limits,
            next: AtomicU64::new(0),
            visible: Mutex::new(BTreeMap::new()),
            log: Mutex::new(Vec::new()),
            thread: Mutex::new(Ok(Vec::new())),
            reactions: Mutex::new(Vec::new()),
            places: Mutex::new(BTreeMap::new()),
            hold: Mutex::new(None),
            refuse_answers: std::sync::atomic::AtomicBool::new(false),
            posts: tokio::sync::watch::Sender::new(0),
            every: Mutex::new(Vec::new()),
        })
    }

    fn add(&self, messages: Vec<Outgoing>) -> Vec<String> {
        self.every
            .lock()
            .expect("every")
            .extend(messages.iter().cloned());
        let mut visible = self.visible.lock().expect("visible");
        messages
            .into_iter()
            .map(|m| {
                let id = format!("b{}", self.next.fetch_add(1, Ordering::SeqCst) + 1);
                visible.insert(id.clone(), m);
                id
            })
            .collect()
    }

    fn visible(&self) -> Vec<(String, Outgoing)> {
        let visible = self.visible.lock().expect("visible");
        let mut all: Vec<(String, Outgoing)> = visible
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        all.sort_by_key(|(id, _)| id[1..].parse::<u64>().unwrap_or(0));
        all
    }

    fn of_role(&self, role: Role) -> Vec<(String, Outgoing)> {
        self.visible()
            .into_iter()
            .filter(|(_, m)| m.role == role)
            .collect()
    }

    fn log(&self) -> Vec<Op> {
        self.log.lock().expect("log").clone()
    }
}

impl Outbox for Memory {
    fn limits(&self) -> Limits {
        self.limits
    }

    fn attachment_token(&self, url: &str) -> Option<yetibot_redaction::Secret> {
        url.starts_with("https://files.test/")
            .then(|| yetibot_redaction::Secret::new("file-host-token"))
    }

    fn post<'a>(
        &'a self,
        place: &'a Place,
        messages: Vec<Outgoing>,
    ) -> BoxFuture<'a, Result<Posted, SendError>> {
        Box::pin(async move {
            let hold = self.hold.lock().expect("hold").clone();
            if let Some((role, gate)) = hold
                && messages.iter().any(|m| m.role == role)
            {
                gate.acquire().await.expect("gate").forget();
            }
            if self.refuse_answers.load(Ordering::SeqCst)
                && messages.iter().any(|m| m.role == Role::Answer)
            {
                return Err(SendError::Refused("missing permission"));
            }
            let ids = self.add(messages);
            self.posts.send_modify(|n| *n += 1);
            for id in &ids {
                self.places
                    .lock()
                    .expect("places")
                    .insert(id.clone(), place.clone());
            }
            self.log.lock().expect("log").push(Op::Post(ids.clone()));
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
            if self.refuse_answers.load(Ordering::SeqCst)
                && messages.iter().any(|m| m.role == Role::Answer)
            {
                return Err(SendError::Unconfirmed("a server error"));
            }
            {
                let mut visible = self.visible.lock().expect("visible");
                for id in &posted.ids {
                    visible.remove(id);
                }
            }
            let ids = self.add(messages);
            self.log
                .lock()
                .expect("log")
                .push(Op::Replace(posted.ids.clone(), ids.clone()));
            Ok(Posted {
                place: posted.place.clone(),
                ids,
            })
        })
    }

    fn delete<'a>(&'a self, posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let mut visible = self.visible.lock().expect("visible");
            for id in &posted.ids {
                visible.remove(id);
            }
            self.log
                .lock()
                .expect("log")
                .push(Op::Delete(posted.ids.clone()));
            Ok(())
        })
    }

    fn react<'a>(
        &'a self,
        _place: &'a Place,
        message_id: &'a str,
        emoji: &'a str,
    ) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            if emoji.starts_with(':') {
                return Err(SendError::Refused("a bare :shortcode: is ambiguous"));
            }
            self.reactions
                .lock()
                .expect("reactions")
                .push((message_id.to_owned(), emoji.to_owned()));
            Ok(())
        })
    }

    fn open_thread<'a>(
        &'a self,
        place: &'a Place,
        message_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Place, SendError>> {
        Box::pin(async move {
            self.log
                .lock()
                .expect("log")
                .push(Op::Thread(message_id.to_owned(), name.to_owned()));
            Ok(place.in_thread(format!("thread-of-{message_id}")))
        })
    }

    fn thread_history<'a>(
        &'a self,
        _place: &'a Place,
        _before: &'a str,
        _limits: HistoryLimits,
    ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
        Box::pin(async move { self.thread.lock().expect("thread").clone() })
    }
}

/// `wait`: says it started (a permit on `entered`), finishes only when the test adds a
/// permit to `release`, then answers `waited`. Each test has its own pair.
#[derive(Clone)]
struct Gates {
    release: Arc<Semaphore>,
    entered: Arc<Semaphore>,
}

impl Gates {
    fn new() -> Self {
        Self {
            release: Arc::new(Semaphore::new(0)),
            entered: Arc::new(Semaphore::new(0)),
        }
    }
}

struct Gate(Gates);

impl Handler for Gate {
    fn run<'a>(&'a self, _call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            self.0.entered.add_permits(1);
            if let Ok(permit) = self.0.release.acquire().await {
                permit.forget();
            }
            Outcome::text("waited")
        })
    }
}

fn interpreter(gates: &Gates, ai: Option<yetibot_ai_commands::AiServices>) -> Interpreter {
    let mut registry = builtins();
    registry.add(CommandSpec::new("wait", &[Category::UTIL]).route(
        None,
        "wait # waits for the test",
        Gate(gates.clone()),
    ));
    registry.add(CommandSpec::new("whereami", &[Category::UTIL]).route(
        None,
        "whereami # the caller's history room and connection",
        Plain(|call: &Call<'_>| {
            let caller = call.runner.caller();
            Outcome::text(format!(
                "{} {} {}",
                caller.connection, caller.room, caller.user_id
            ))
        }),
    ));
    registry.add(CommandSpec::new("fresh", &[Category::UTIL]).route(
        None,
        "fresh # whether the request is a new message as its author sent it",
        Plain(|call: &Call<'_>| {
            let original = call
                .runner
                .caller()
                .platform
                .as_ref()
                .is_some_and(|platform| platform.is_original_message());
            Outcome::text(format!("original={original}"))
        }),
    ));
    registry.add(CommandSpec::new("files", &[Category::UTIL]).route(
        None,
        "files # the message's attachments and whether a token comes with each",
        Plain(|call: &Call<'_>| {
            let Some(platform) = call.runner.caller().platform.as_ref() else {
                return Outcome::text("no platform");
            };
            let mut lines: Vec<String> = platform
                .attachments()
                .iter()
                .map(|a| {
                    let token = platform
                        .attachment_token(&a.url)
                        .map_or("none", |_| "token");
                    format!("{} {token}", a.name)
                })
                .collect();
            // A URL the message does not carry never gets the platform's token.
            let stray = platform.attachment_token("https://files.test/someone-elses.png");
            lines.push(format!(
                "stray {}",
                if stray.is_some() { "token" } else { "none" }
            ));
            Outcome::text(lines.join(", "))
        }),
    ));
    if let Some(ai) = ai {
        for spec in yetibot_ai_commands::commands(Arc::new(ai)) {
            registry.add(spec);
        }
    }
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(3)),
        Settings::default(),
    )
}

/// A conductor whose status cards appear at once (the delay has a test of its own).
fn conductor(interpreter: Interpreter) -> Arc<Conductor> {
    Arc::new(Conductor::new(
        Arc::new(interpreter),
        ConductorOptions {
            card_delay: Duration::ZERO,
            ..ConductorOptions::default()
        },
    ))
}

fn place(thread: Option<&str>) -> Place {
    Place {
        adapter: AdapterKind::Discord,
        connection: "guild".into(),
        room: "general".into(),
        room_name: None,
        thread: thread.map(str::to_owned),
    }
}

fn edited(id: &str, revision: u32, text: &str) -> Event {
    Event {
        revision,
        kind: EventKind::Edited { text: text.into() },
        ..message(id, "")
    }
}

fn person(id: &str) -> Author {
    Author {
        id: id.into(),
        name: format!("name-{id}"),
        is_bot: false,
    }
}

fn message(id: &str, text: &str) -> Event {
    Event {
        place: place(None),
        author: person("U1"),
        message_id: id.into(),
        revision: 0,
        attachments: Vec::new(),
        kind: EventKind::Message { text: text.into() },
    }
}

fn press(by: &str, on: &str, action: Action, token: &str) -> Event {
    Event {
        place: place(None),
        author: person(by),
        message_id: on.into(),
        revision: 0,
        attachments: Vec::new(),
        kind: EventKind::Pressed {
            action,
            token: token.into(),
        },
    }
}

fn incoming(event: Event, outbox: &Arc<Memory>) -> Incoming {
    Incoming {
        event,
        outbox: Arc::clone(outbox) as Arc<dyn Outbox>,
    }
}

fn texts(outbox: &Memory, role: Role) -> Vec<String> {
    outbox
        .of_role(role)
        .into_iter()
        .map(|(_, m)| m.text)
        .collect()
}

/// The token of the answer's `action` button.
fn token_of(message: &Outgoing, action: Action) -> String {
    message
        .buttons
        .iter()
        .find(|b| b.action == action)
        .map(|b| b.token.clone())
        .expect("the button")
}

#[tokio::test]
async fn a_command_is_answered_once_with_its_buttons_and_a_replay_runs_nothing() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!list hi | count"), &outbox))
        .await;
    bot.handle(incoming(message("m1", "!list hi | count"), &outbox))
        .await;
    let answers = outbox.of_role(Role::Answer);
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].1.text, "1");
    let actions: Vec<Action> = answers[0].1.buttons.iter().map(|b| b.action).collect();
    assert_eq!(actions, [Action::RunAgain, Action::Help]);
    assert!(answers[0].1.caption.is_none(), "no model answered");
    assert!(outbox.of_role(Role::Status).is_empty());
    // Ordinary chat and other bots' commands get nothing.
    bot.handle(incoming(message("m2", "just talking"), &outbox))
        .await;
    let mut from_bot = message("m3", "!echo loop");
    from_bot.author.is_bot = true;
    bot.handle(incoming(from_bot, &outbox)).await;
    assert_eq!(outbox.log().len(), 1);
}

#[tokio::test]
async fn a_commands_platform_has_its_messages_attachments_and_a_rerun_keeps_them() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    let mut event = message("m1", "!files");
    event.attachments = vec![
        yetibot_conversation::Attachment::new(
            "cats.png",
            Some("image/png"),
            "https://files.test/F1/cats.png",
            None,
        )
        .expect("attachment"),
        yetibot_conversation::Attachment::new("meme.jpg", None, "https://cdn.test/meme.jpg", None)
            .expect("attachment"),
    ];
    bot.handle(incoming(event, &outbox)).await;
    let expected = "cats.png token, meme.jpg none, stray none";
    assert_eq!(texts(&outbox, Role::Answer), [expected]);
    // Run again reads the same attachments.
    rerun(&bot, &outbox).await;
    assert_eq!(texts(&outbox, Role::Answer), [expected]);
    // A message without attachments has none, and no token for anything.
    bot.handle(incoming(message("m2", "!files"), &outbox)).await;
    assert!(texts(&outbox, Role::Answer).contains(&"stray none".to_owned()));
}

/// U1 presses Run again on the first answer and confirms the card.
async fn rerun(bot: &Conductor, outbox: &Arc<Memory>) {
    let (answer_id, answer) = outbox.of_role(Role::Answer).remove(0);
    let token = token_of(&answer, Action::RunAgain);
    bot.handle(incoming(
        press("U1", &answer_id, Action::RunAgain, &token),
        outbox,
    ))
    .await;
    let (card_id, card) = outbox
        .of_role(Role::Notice)
        .last()
        .cloned()
        .expect("a card");
    let confirm = token_of(&card, Action::ConfirmRerun);
    bot.handle(incoming(
        press("U1", &card_id, Action::ConfirmRerun, &confirm),
        outbox,
    ))
    .await;
}

/// Only a message's first run is a new message: its edit and a confirmed rerun (of a
/// message never edited, so still at revision 0) carry the author's ID but not a fresh
/// intent, which consent-bearing commands (GitHub toolsets, proposal approval) require.
#[tokio::test]
async fn only_a_messages_first_run_is_an_original_message() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!fresh"), &outbox)).await;
    assert_eq!(texts(&outbox, Role::Answer), ["original=true"]);
    rerun(&bot, &outbox).await;
    assert_eq!(texts(&outbox, Role::Answer), ["original=false"]);
    bot.handle(incoming(edited("m1", 1, "!fresh"), &outbox))
        .await;
    assert_eq!(texts(&outbox, Role::Answer), ["original=false"]);
}

#[tokio::test]
async fn run_again_is_the_requesters_after_one_confirmation_consumed_once() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!echo again"), &outbox))
        .await;
    let (answer_id, answer) = outbox.of_role(Role::Answer).remove(0);
    let token = token_of(&answer, Action::RunAgain);
    // Someone else may not.
    bot.handle(incoming(
        press("U2", &answer_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    assert_eq!(
        texts(&outbox, Role::Notice),
        ["Only name-U1 can run this command again."]
    );
    // The requester gets a public confirmation card first.
    bot.handle(incoming(
        press("U1", &answer_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    let notices = outbox.of_role(Role::Notice);
    let (card_id, card) = notices.last().cloned().expect("a card");
    assert!(
        card.text.starts_with("Run `!echo again` again?"),
        "{}",
        card.text
    );
    let confirm = token_of(&card, Action::ConfirmRerun);
    // A second Run again while one waits is refused.
    bot.handle(incoming(
        press("U1", &answer_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    assert!(
        texts(&outbox, Role::Notice)
            .last()
            .is_some_and(|t| t.contains("already waiting"))
    );
    // Only the requester confirms.
    bot.handle(incoming(
        press("U2", &card_id, Action::ConfirmRerun, &confirm),
        &outbox,
    ))
    .await;
    assert!(outbox.visible.lock().expect("v").contains_key(&card_id));
    let before = outbox.log().len();
    bot.handle(incoming(
        press("U1", &card_id, Action::ConfirmRerun, &confirm),
        &outbox,
    ))
    .await;
    let log = outbox.log()[before..].to_vec();
    // The card goes first, then the answer is replaced in place: never a second answer.
    assert_eq!(log[0], Op::Delete(vec![card_id.clone()]));
    assert!(matches!(&log[1], Op::Replace(old, _) if *old == vec![answer_id.clone()]));
    assert_eq!(texts(&outbox, Role::Answer), ["again"]);
    // The same confirmation cannot run it twice, and a second press says it was used (not
    // that it expired, which would send the user looking for a restart).
    bot.handle(incoming(
        press("U1", &card_id, Action::ConfirmRerun, &confirm),
        &outbox,
    ))
    .await;
    assert_eq!(
        texts(&outbox, Role::Notice).last().map(String::as_str),
        Some(USED_BUTTON)
    );
    assert_eq!(outbox.of_role(Role::Answer).len(), 1);
    // The rerun's answer has live buttons again.
    let (new_id, new_answer) = outbox.of_role(Role::Answer).remove(0);
    let token = token_of(&new_answer, Action::RunAgain);
    bot.handle(incoming(
        press("U1", &new_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    let card = outbox.of_role(Role::Notice).last().cloned().expect("card");
    let cancel = token_of(&card.1, Action::CancelRerun);
    bot.handle(incoming(
        press("U1", &card.0, Action::CancelRerun, &cancel),
        &outbox,
    ))
    .await;
    assert!(!outbox.visible.lock().expect("v").contains_key(&card.0));
    assert_eq!(outbox.of_role(Role::Answer).len(), 1);
}

#[tokio::test]
async fn an_edit_expires_a_pending_confirmation_and_replaces_the_answer() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!echo old"), &outbox))
        .await;
    let (answer_id, answer) = outbox.of_role(Role::Answer).remove(0);
    let token = token_of(&answer, Action::RunAgain);
    bot.handle(incoming(
        press("U1", &answer_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    let (card_id, card) = outbox.of_role(Role::Notice).remove(0);
    let confirm = token_of(&card, Action::ConfirmRerun);
    let edit = Event {
        revision: 1,
        kind: EventKind::Edited {
            text: "!echo new".into(),
        },
        ..message("m1", "")
    };
    bot.handle(incoming(edit, &outbox)).await;
    assert!(!outbox.visible.lock().expect("v").contains_key(&card_id));
    assert_eq!(texts(&outbox, Role::Answer), ["new"]);
    bot.handle(incoming(
        press("U1", &card_id, Action::ConfirmRerun, &confirm),
        &outbox,
    ))
    .await;
    assert_eq!(
        texts(&outbox, Role::Answer),
        ["new"],
        "the old text never ran again"
    );
    assert!(
        texts(&outbox, Role::Notice)
            .last()
            .is_some_and(|t| t.contains("expired"))
    );
}

#[tokio::test]
async fn an_edit_racing_a_running_command_owns_the_answer() {
    let outbox = Memory::new(Limits::DISCORD);
    let gates = Gates::new();
    let bot = conductor(interpreter(&gates, None));
    let first = tokio::spawn({
        let bot = Arc::clone(&bot);
        let event = incoming(message("m1", "!wait"), &outbox);
        async move { bot.handle(event).await }
    });
    // The first run is waiting at its gate when the edit arrives.
    gates.entered.acquire().await.expect("entered").forget();
    let edit = Event {
        revision: 1,
        kind: EventKind::Edited {
            text: "!echo edited".into(),
        },
        ..message("m1", "")
    };
    bot.handle(incoming(edit, &outbox)).await;
    assert_eq!(texts(&outbox, Role::Answer), ["edited"]);
    // The obsolete run finishes later and publishes nothing.
    gates.release.add_permits(1);
    first.await.expect("no panic");
    assert_eq!(texts(&outbox, Role::Answer), ["edited"]);
    // An edit that arrives late, older than the one that ran, never runs.
    let late = Event {
        revision: 0,
        kind: EventKind::Edited {
            text: "!echo stale".into(),
        },
        ..message("m1", "")
    };
    bot.handle(incoming(late, &outbox)).await;
    assert_eq!(texts(&outbox, Role::Answer), ["edited"]);
}

#[tokio::test]
async fn run_again_waits_for_a_running_edit_and_then_offers_the_new_text() {
    let outbox = Memory::new(Limits::DISCORD);
    let gates = Gates::new();
    let bot = conductor(interpreter(&gates, None));
    bot.handle(incoming(message("m1", "!echo first"), &outbox))
        .await;
    let (answer_id, answer) = outbox.of_role(Role::Answer).remove(0);
    let token = token_of(&answer, Action::RunAgain);
    let edit = Event {
        revision: 1,
        kind: EventKind::Edited {
            text: "!wait".into(),
        },
        ..message("m1", "")
    };
    let editing = tokio::spawn({
        let bot = Arc::clone(&bot);
        let event = incoming(edit, &outbox);
        async move { bot.handle(event).await }
    });
    gates.entered.acquire().await.expect("entered").forget();
    bot.handle(incoming(
        press("U1", &answer_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    assert!(
        texts(&outbox, Role::Notice)
            .last()
            .is_some_and(|t| t.contains("still running")),
        "{:?}",
        texts(&outbox, Role::Notice)
    );
    gates.release.add_permits(1);
    editing.await.expect("no panic");
    assert_eq!(texts(&outbox, Role::Answer), ["waited"]);
    let (answer_id, answer) = outbox.of_role(Role::Answer).remove(0);
    bot.handle(incoming(
        press(
            "U1",
            &answer_id,
            Action::RunAgain,
            &token_of(&answer, Action::RunAgain),
        ),
        &outbox,
    ))
    .await;
    let card = outbox.of_role(Role::Notice).last().cloned().expect("card");
    assert!(
        card.1.text.starts_with("Run `!wait` again?"),
        "{}",
        card.1.text
    );
    // Deleting the card with ❌ takes the pending rerun with it.
    let mut react = message(&card.0, "");
    react.kind = EventKind::Reacted {
        emoji: "❌".into(),
        on_bot_message: true,
    };
    bot.handle(incoming(react, &outbox)).await;
    bot.handle(incoming(
        press(
            "U1",
            &answer_id,
            Action::RunAgain,
            &token_of(&answer, Action::RunAgain),
        ),
        &outbox,
    ))
    .await;
    let notices = texts(&outbox, Role::Notice);
    assert!(
        notices
            .last()
            .is_some_and(|t| t.starts_with("Run `!wait` again?")),
        "a new card, not 'already waiting': {notices:?}"
    );
}

#[tokio::test]
async fn help_never_runs_what_a_quoted_first_word_hides() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", r#"!"$(whereami) x""#), &outbox))
        .await;
    let (id, answer) = outbox.of_role(Role::Answer).remove(0);
    bot.handle(incoming(
        press("U2", &id, Action::Help, &token_of(&answer, Action::Help)),
        &outbox,
    ))
    .await;
    let help = texts(&outbox, Role::Notice);
    assert!(
        !help.iter().any(|h| h.contains("guild")),
        "whereami ran: {help:?}"
    );
    assert!(!help.is_empty());
}

#[tokio::test]
async fn a_button_from_before_a_restart_never_matches_a_command_of_this_run() {
    let outbox = Memory::new(Limits::DISCORD);
    let before = conductor(interpreter(&Gates::new(), None));
    before
        .handle(incoming(message("m1", "!echo old"), &outbox))
        .await;
    let (old_id, old) = outbox.of_role(Role::Answer).remove(0);
    let old_token = token_of(&old, Action::RunAgain);
    // The bot restarts and answers another command: its first token is counted like the
    // old one, but the run's mark differs.
    let after = conductor(interpreter(&Gates::new(), None));
    after
        .handle(incoming(message("m2", "!echo new"), &outbox))
        .await;
    let new = outbox
        .of_role(Role::Answer)
        .into_iter()
        .find(|(_, m)| m.text == "new")
        .expect("the new answer");
    assert_ne!(token_of(&new.1, Action::RunAgain), old_token);
    after
        .handle(incoming(
            press("U1", &old_id, Action::RunAgain, &old_token),
            &outbox,
        ))
        .await;
    assert_eq!(texts(&outbox, Role::Notice), [EXPIRED_BUTTON]);
}

#[tokio::test]
async fn an_answer_the_platform_refuses_is_reported_and_the_earlier_one_stays_tracked() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!echo one"), &outbox))
        .await;
    let (first, _) = outbox.of_role(Role::Answer).remove(0);
    // The edit's new answer is refused: the channel is told, nothing is resent.
    outbox.refuse_answers.store(true, Ordering::SeqCst);
    bot.handle(incoming(edited("m1", 1, "!echo two"), &outbox))
        .await;
    assert_eq!(texts(&outbox, Role::Notice), [UNDELIVERED]);
    assert!(outbox.of_role(Role::Notice)[0].1.error);
    // The next edit replaces the answer still shown, rather than posting beside it.
    outbox.refuse_answers.store(false, Ordering::SeqCst);
    bot.handle(incoming(edited("m1", 2, "!echo three"), &outbox))
        .await;
    assert_eq!(texts(&outbox, Role::Answer), ["three"]);
    assert!(
        outbox
            .log()
            .iter()
            .any(|op| matches!(op, Op::Replace(old, _) if old == &vec![first.clone()])),
        "{:?}",
        outbox.log()
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_the_platform_never_confirms_is_reported_after_the_deadline() {
    let outbox = Memory::new(Limits::DISCORD);
    let gate = Arc::new(Semaphore::new(0));
    *outbox.hold.lock().expect("hold") = Some((Role::Answer, Arc::clone(&gate)));
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!echo hi"), &outbox))
        .await;
    assert_eq!(texts(&outbox, Role::Notice), [UNDELIVERED]);
    assert!(outbox.of_role(Role::Answer).is_empty());
}

#[tokio::test]
async fn expired_buttons_explain_how_to_resend_and_help_shows_the_commands_help() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(
        press("U1", "b9", Action::RunAgain, "c999"),
        &outbox,
    ))
    .await;
    assert_eq!(texts(&outbox, Role::Notice), [EXPIRED_BUTTON]);
    bot.handle(incoming(message("m1", "!echo x"), &outbox))
        .await;
    let (id, answer) = outbox.of_role(Role::Answer).remove(0);
    let token = token_of(&answer, Action::Help);
    bot.handle(incoming(press("U2", &id, Action::Help, &token), &outbox))
        .await;
    let help = texts(&outbox, Role::Notice);
    assert!(help.last().is_some_and(|h| h.contains("echo")), "{help:?}");
    bot.handle(incoming(
        press("U2", &id, Action::ShowDetails, &token),
        &outbox,
    ))
    .await;
    assert_eq!(
        texts(&outbox, Role::Notice).last().map(String::as_str),
        Some("No tool calls were made for this answer.")
    );
}

#[tokio::test]
async fn the_caller_is_the_platforms_identity_in_its_history_room() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    let mut event = message("m1", "!whereami");
    event.place.room = "C0123".into();
    event.place.room_name = Some("#general".into());
    bot.handle(incoming(event, &outbox)).await;
    // Discord-style: the ID is the room.
    bot.handle(incoming(message("m2", "!whereami"), &outbox))
        .await;
    assert_eq!(
        texts(&outbox, Role::Answer),
        ["guild #general U1", "guild general U1"]
    );
}

#[tokio::test]
async fn react_adds_a_reaction_to_the_command_message_and_posts_nothing() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!react 👍"), &outbox))
        .await;
    assert_eq!(
        *outbox.reactions.lock().expect("reactions"),
        [("m1".to_owned(), "👍".to_owned())]
    );
    assert!(outbox.of_role(Role::Answer).is_empty());
    bot.handle(incoming(message("m2", "!react :thumbsup:"), &outbox))
        .await;
    let answers = outbox.of_role(Role::Answer);
    assert!(answers[0].1.error);
    assert!(
        answers[0].1.text.contains("ambiguous"),
        "{}",
        answers[0].1.text
    );
}

#[tokio::test]
async fn a_delete_reaction_removes_only_the_bots_own_message() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!echo bye"), &outbox))
        .await;
    let (answer_id, _) = outbox.of_role(Role::Answer).remove(0);
    let react = |id: &str, emoji: &str, on_bot_message: bool, adapter: AdapterKind| {
        let mut event = message(id, "");
        event.place.adapter = adapter;
        event.kind = EventKind::Reacted {
            emoji: emoji.into(),
            on_bot_message,
        };
        event
    };
    // Not a delete emoji, or on a person's message: nothing happens.
    bot.handle(incoming(
        react(&answer_id, "👍", true, AdapterKind::Discord),
        &outbox,
    ))
    .await;
    bot.handle(incoming(
        react("m1", "❌", false, AdapterKind::Discord),
        &outbox,
    ))
    .await;
    assert_eq!(outbox.log().len(), 1);
    bot.handle(incoming(
        react(&answer_id, "❌", true, AdapterKind::Discord),
        &outbox,
    ))
    .await;
    assert_eq!(
        outbox.log().last(),
        Some(&Op::Delete(vec![answer_id.clone()]))
    );
    // Slack's rule is a name containing "delete".
    bot.handle(incoming(
        react(&answer_id, "delete-this", true, AdapterKind::Slack),
        &outbox,
    ))
    .await;
    assert_eq!(outbox.log().len(), 3);
}

#[tokio::test]
async fn a_long_answer_is_an_excerpt_with_the_exact_answer_md() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    let long = "lorem ipsum ".repeat(500);
    bot.handle(incoming(message("m1", &format!("!echo {long}")), &outbox))
        .await;
    let answers = outbox.of_role(Role::Answer);
    assert_eq!(answers.len(), 1);
    let file = answers[0].1.attachment.as_ref().expect("answer.md");
    assert_eq!(file.name, "answer.md");
    assert_eq!(&*file.content, long.as_bytes());
    assert!(
        answers[0]
            .1
            .text
            .ends_with(yetibot_chat_adapters::EXCERPT_NOTE)
    );
    assert_eq!(answers[0].1.buttons.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_command_past_its_deadline_is_stopped_and_reported() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = Arc::new(Conductor::new(
        Arc::new(interpreter(&Gates::new(), None)),
        ConductorOptions {
            deadline: Duration::from_secs(60),
            ..ConductorOptions::default()
        },
    ));
    bot.handle(incoming(message("m1", "!wait"), &outbox)).await;
    let answers = outbox.of_role(Role::Answer);
    assert_eq!(answers.len(), 1);
    assert!(answers[0].1.error);
    assert!(
        answers[0]
            .1
            .text
            .contains("did not finish within 1 minutes"),
        "{}",
        answers[0].1.text
    );
}

/// No toolsets, and the bot's native tools registered as the binary registers them.
fn policy() -> yetibot_tool_policy::ToolPolicy {
    let natives = yetibot_ai_commands::native_tools();
    let config = yetibot_tool_policy::PolicyConfig {
        toolsets: &[],
        default_toolset: None,
        max_tool_calls: None,
    };
    let known = yetibot_tool_policy::KnownNames {
        servers: Vec::new(),
        providers: Vec::new(),
        with_github_api_token: Vec::new(),
        native_tools: &natives,
    };
    yetibot_tool_policy::ToolPolicy::from_config(&config, &known).expect("an empty policy is valid")
}

fn ai(fixture: &Fixture) -> yetibot_ai_commands::AiServices {
    let providers = ProviderSet::from_config(
        None,
        &[ProviderConfig {
            name: Some("local".into()),
            url: Some(fixture.url("/v1")),
            model: Some("m1".into()),
            ..ProviderConfig::default()
        }],
    )
    .expect("providers");
    yetibot_ai_commands::AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        policy(),
        Arc::new(tokio::time::Instant::now),
    )
}

fn tool_call(name: &str) -> String {
    json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": name, "arguments": "{}"},
            }]},
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ai_request_shows_its_status_card_until_the_captioned_answer_is_out() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(tool_call("yetibot__help")),
    );
    // The second turn takes a moment, so the card's edit for the finished call shows.
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Here is **help**.")).slow(Duration::from_millis(300)),
    );
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), Some(ai(&fixture))));
    bot.handle(incoming(message("m1", "!ai What can you do?"), &outbox))
        .await;
    let log = outbox.log();
    // Working card first, its edit with the finished call, the answer, then the card goes.
    let Op::Post(card) = &log[0] else {
        panic!("the card first: {log:?}")
    };
    assert!(
        log.iter()
            .any(|op| matches!(op, Op::Replace(old, _) if old == card)),
        "{log:?}"
    );
    let answer_at = log
        .iter()
        .position(|op| matches!(op, Op::Post(ids) if ids != card))
        .expect("an answer");
    let deleted_at = log
        .iter()
        .position(|op| matches!(op, Op::Delete(_)))
        .expect("the card removed");
    assert!(answer_at < deleted_at, "{log:?}");
    assert!(outbox.of_role(Role::Status).is_empty());
    let answers = outbox.of_role(Role::Answer);
    assert_eq!(answers.len(), 1);
    let answer = &answers[0].1;
    assert_eq!(answer.text, "Here is **help**.");
    let caption = answer.caption.as_deref().expect("a caption");
    assert!(
        caption.starts_with("m1 · ") && caption.contains("1 tool"),
        "{caption}"
    );
    let token = token_of(answer, Action::ShowDetails);
    bot.handle(incoming(
        press("U2", &answers[0].0, Action::ShowDetails, &token),
        &outbox,
    ))
    .await;
    let details = texts(&outbox, Role::Notice);
    assert_eq!(
        details.last().map(String::as_str),
        Some(
            "Tool calls of this answer:\n1. `yetibot/help`: ok\n\nBudget: 1 of 6 host calls used."
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_card_slow_to_post_never_holds_the_answer_back() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Done.")),
    );
    let outbox = Memory::new(Limits::DISCORD);
    let gate = Arc::new(Semaphore::new(0));
    *outbox.hold.lock().expect("hold") = Some((Role::Status, Arc::clone(&gate)));
    let bot = conductor(interpreter(&Gates::new(), Some(ai(&fixture))));
    let handling = tokio::spawn({
        let bot = Arc::clone(&bot);
        let event = incoming(message("m1", "!ai Hi"), &outbox);
        async move { bot.handle(event).await }
    });
    // The working card's post is stuck on its lane, and the answer is out regardless.
    let mut posts = outbox.posts.subscribe();
    tokio::time::timeout(
        Duration::from_secs(30),
        posts.wait_for(|_| outbox.of_role(Role::Answer).len() == 1),
    )
    .await
    .expect("the answer while the card is held")
    .expect("posts");
    assert!(outbox.of_role(Role::Status).is_empty());
    // Once the card's post is confirmed, after the answer, the card is removed by its ID.
    gate.add_permits(1);
    handling.await.expect("handled");
    let log = outbox.log();
    let [Op::Post(answer), Op::Post(card), Op::Delete(deleted)] = log.as_slice() else {
        panic!("answer, card, removal: {log:?}")
    };
    assert_eq!(deleted, card);
    assert_ne!(answer, card);
    assert!(outbox.of_role(Role::Status).is_empty());
    assert_eq!(texts(&outbox, Role::Answer), ["Done."]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_in_a_thread_carries_the_thread_and_an_unreadable_one_sends_nothing() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Still blue.")),
    );
    let outbox = Memory::new(Limits::DISCORD);
    *outbox.thread.lock().expect("thread") = Ok(vec![
        HistoryMessage {
            author: "name-U1".into(),
            text: "What colour is the sky?".into(),
            from_bot: false,
        },
        HistoryMessage {
            author: "yetibot".into(),
            text: "Blue.".into(),
            from_bot: true,
        },
    ]);
    let bot = conductor(interpreter(&Gates::new(), Some(ai(&fixture))));
    let mut event = message("m1", "!ai --no-tools And at night?");
    event.place = place(Some("t1"));
    bot.handle(incoming(event, &outbox)).await;
    assert_eq!(texts(&outbox, Role::Answer), ["Still blue."]);
    let requests = fixture.requests();
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).expect("json");
    let messages = body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[2]["content"], "Blue.");
    assert_eq!(messages[3]["content"], "And at night?");
    // A thread that cannot be read completely: an error, and no request.
    *outbox.thread.lock().expect("thread") = Err(HistoryError::Unavailable("missing permission"));
    let mut event = message("m2", "!ai --no-tools Again?");
    event.place = place(Some("t1"));
    bot.handle(incoming(event, &outbox)).await;
    let answers = outbox.of_role(Role::Answer);
    assert!(
        answers
            .last()
            .is_some_and(|(_, m)| m.error && m.text.contains("missing permission"))
    );
    assert_eq!(fixture.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_react_tool_reacts_in_the_requests_own_place_and_refuses_other_forms() {
    let fixture = Fixture::start().await.expect("fixture");
    let call = |arguments: &str| {
        json!({
            "choices": [{
                "message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "yetibot__react", "arguments": arguments},
                }]},
                "finish_reason": "tool_calls",
            }],
        })
        .to_string()
    };
    fixture.route(
        "/v1/chat/completions",
        Reply::json(call(r#"{"emoji":"👍"}"#)),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Done.")),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(call(r#"{"emoji":"👍","channel_id":"999"}"#)),
    );
    fixture.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Refused.")),
    );
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), Some(ai(&fixture))));
    bot.handle(incoming(message("m1", "!ai React to this."), &outbox))
        .await;
    assert_eq!(
        *outbox.reactions.lock().expect("reactions"),
        [("m1".to_owned(), "👍".to_owned())]
    );
    assert_eq!(texts(&outbox, Role::Answer), ["Done."]);
    let offered: Value = serde_json::from_slice(&fixture.requests()[0].body).expect("json");
    assert!(
        offered["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["function"]["name"] == "yetibot__react")
    );
    // A channel of the model's choosing is refused before anything runs.
    bot.handle(incoming(message("m2", "!ai React elsewhere."), &outbox))
        .await;
    assert_eq!(outbox.reactions.lock().expect("reactions").len(), 1);
}

#[tokio::test]
async fn thread_wraps_a_command_whose_answer_goes_in_a_new_thread_and_stays_there() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), None));
    bot.handle(incoming(message("m1", "!thread echo in a thread"), &outbox))
        .await;
    assert_eq!(
        outbox.log()[0],
        Op::Thread("m1".into(), "echo in a thread".into())
    );
    let (id, answer) = outbox.of_role(Role::Answer).remove(0);
    assert_eq!(answer.text, "in a thread");
    let places = outbox.places.lock().expect("places").clone();
    assert_eq!(places[&id].thread.as_deref(), Some("thread-of-m1"));
    // An edit replaces the answer where it is, without another thread.
    let mut edit = message("m1", "!thread echo edited");
    edit.revision = 1;
    edit.kind = EventKind::Edited {
        text: "!thread echo edited".into(),
    };
    bot.handle(incoming(edit, &outbox)).await;
    assert_eq!(texts(&outbox, Role::Answer), ["edited"]);
    let threads = |outbox: &Memory| {
        outbox
            .log()
            .iter()
            .filter(|op| matches!(op, Op::Thread(..)))
            .count()
    };
    assert_eq!(threads(&outbox), 1);
    // Inside a thread nothing new is opened, and a plain command answers in place.
    let mut inside = message("m2", "!thread echo here");
    inside.place = place(Some("t1"));
    bot.handle(incoming(inside, &outbox)).await;
    bot.handle(incoming(message("m3", "!echo plain"), &outbox))
        .await;
    assert_eq!(threads(&outbox), 1);
}

/// A command of no AI crate, whose hints ask what `grok`'s ask: a status card at once, a
/// reply thread when sent alone (unless its arguments say `quiet`), and a rerun that may
/// cost money.
fn hinted(gates: &Gates) -> Interpreter {
    let mut registry = builtins();
    registry.add(
        CommandSpec::new("ask", &[Category::UTIL])
            .hints(Hints {
                live_progress: true,
                interim_replies: false,
                opens_thread: Some(|args: &str| !args.contains("quiet")),
                may_cost: true,
            })
            .route(
                None,
                "ask <question> # answers",
                Plain(|_: &Call<'_>| Outcome::text("answered")),
            ),
    );
    registry.add(CommandSpec::new("wait", &[Category::UTIL]).route(
        None,
        "wait # waits for the test",
        Gate(gates.clone()),
    ));
    registry.add(
        CommandSpec::new("ponder", &[Category::UTIL])
            .hints(Hints {
                live_progress: true,
                interim_replies: false,
                opens_thread: None,
                may_cost: false,
            })
            .route(None, "ponder # waits for the test", Gate(gates.clone())),
    );
    Interpreter::new(
        registry,
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(3)),
        Settings::default(),
    )
}

#[tokio::test]
async fn a_commands_hints_not_its_name_decide_its_card_its_thread_and_its_rerun_warning() {
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(hinted(&Gates::new()));
    bot.handle(incoming(message("m1", "!ask why"), &outbox))
        .await;
    let log = outbox.log();
    // A reply thread first; then the status card, posted at once beside the run (before or
    // after the answer), and removed once the answer is out.
    assert_eq!(log[0], Op::Thread("m1".into(), "ask why".into()), "{log:?}");
    let posts: Vec<&Vec<String>> = log
        .iter()
        .filter_map(|op| match op {
            Op::Post(ids) => Some(ids),
            _ => None,
        })
        .collect();
    assert_eq!(posts.len(), 2, "the card and the answer: {log:?}");
    assert!(
        posts.iter().any(|ids| log
            .iter()
            .any(|op| matches!(op, Op::Delete(gone) if gone == *ids))),
        "the card is removed: {log:?}"
    );
    let (answer_id, answer) = outbox.of_role(Role::Answer).remove(0);
    assert_eq!(answer.text, "answered");
    // Its arguments decide the thread: this one answers in place.
    bot.handle(incoming(message("m2", "!ask quiet why"), &outbox))
        .await;
    let threads = outbox
        .log()
        .iter()
        .filter(|op| matches!(op, Op::Thread(..)))
        .count();
    assert_eq!(threads, 1);
    // A rerun of a command that may cost says so; one of a command that cannot does not.
    let token = token_of(&answer, Action::RunAgain);
    bot.handle(incoming(
        press("U1", &answer_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    let warned = texts(&outbox, Role::Notice);
    assert_eq!(
        warned.last().map(String::as_str),
        Some(
            "Run `!ask why` again? It runs with the same permissions as before and may call paid models or tools again."
        )
    );
    let before = outbox.log().len();
    bot.handle(incoming(message("m3", "!echo free"), &outbox))
        .await;
    // A command without the hint gets no status card: its answer is its only post.
    assert_eq!(outbox.log()[before..].len(), 1, "{:?}", outbox.log());
    let (echo_id, echo) = outbox
        .of_role(Role::Answer)
        .into_iter()
        .find(|(_, a)| a.text == "free")
        .expect("the echo");
    let token = token_of(&echo, Action::RunAgain);
    bot.handle(incoming(
        press("U1", &echo_id, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    assert_eq!(
        texts(&outbox, Role::Notice).last().map(String::as_str),
        Some("Run `!echo free` again? It runs with the same permissions as before.")
    );
    // A line that may run any command warns, whatever its first word: a sub-expression,
    // a command that runs commands, an alias.
    bot.handle(incoming(
        message("m4", "!alias twice = \"echo two\""),
        &outbox,
    ))
    .await;
    for (id, line) in [
        ("m5", "!echo $(echo nested)"),
        ("m6", "!repeat 2 echo again"),
        ("m7", "!twice"),
    ] {
        let before = outbox.of_role(Role::Answer).len();
        bot.handle(incoming(message(id, line), &outbox)).await;
        let answers = outbox.of_role(Role::Answer);
        assert_eq!(answers.len(), before + 1, "{line}");
        let (answer_id, answer) = answers.last().cloned().expect("an answer");
        let token = token_of(&answer, Action::RunAgain);
        bot.handle(incoming(
            press("U1", &answer_id, Action::RunAgain, &token),
            &outbox,
        ))
        .await;
        let warned = texts(&outbox, Role::Notice);
        let last = warned.last().map(String::as_str).unwrap_or_default();
        assert!(
            last.ends_with("and may call paid models or tools again."),
            "{line}: {last}"
        );
    }
}

/// A Grok provider (`grok`) on the fixture: a first turn that says something and calls
/// `help`, then the answer.
async fn grok_fixture() -> (Fixture, yetibot_ai_commands::AiServices) {
    let fixture = Fixture::start().await.expect("fixture");
    let first = json!({
        "choices": [{
            "message": {"role": "assistant", "content": "Let me look that up.", "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "yetibot__help", "arguments": "{}"},
            }]},
            "finish_reason": "tool_calls",
        }],
    });
    fixture.route("/g/v1/chat/completions", Reply::json(first.to_string()));
    fixture.route(
        "/g/v1/chat/completions",
        Reply::json(script::chat_completion("Here it is.")),
    );
    let providers = ProviderSet::from_config(
        None,
        &[ProviderConfig {
            name: Some("grok".into()),
            url: Some(fixture.url("/g/v1")),
            model: Some("g1".into()),
            ..ProviderConfig::default()
        }],
    )
    .expect("providers");
    let services = yetibot_ai_commands::AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        policy(),
        Arc::new(tokio::time::Instant::now),
    );
    (fixture, services)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_grok_posts_each_completed_message_while_tools_run_and_the_answer_once() {
    let (_fixture, services) = grok_fixture().await;
    let outbox = Memory::new(Limits::DISCORD);
    let bot = conductor(interpreter(&Gates::new(), Some(services)));
    bot.handle(incoming(
        message("m1", "!grok --no-thread What is new?"),
        &outbox,
    ))
    .await;
    let answers = outbox.of_role(Role::Answer);
    let texts: Vec<&str> = answers.iter().map(|(_, m)| m.text.as_str()).collect();
    assert_eq!(texts, ["Let me look that up.", "Here it is."]);
    // The live message came before the answer, and only the answer has the caption and
    // the buttons.
    assert!(answers[0].1.caption.is_none() && answers[0].1.buttons.is_empty());
    assert!(answers[1].1.caption.is_some());
    // A rerun replaces both: the live message is part of the answer.
    let token = token_of(&answers[1].1, Action::RunAgain);
    bot.handle(incoming(
        press("U1", &answers[1].0, Action::RunAgain, &token),
        &outbox,
    ))
    .await;
    let (card_id, card) = outbox.of_role(Role::Notice).remove(0);
    let confirm = token_of(&card, Action::ConfirmRerun);
    bot.handle(incoming(
        press("U1", &card_id, Action::ConfirmRerun, &confirm),
        &outbox,
    ))
    .await;
    let after: Vec<String> = texts_of(&outbox);
    assert_eq!(
        after.iter().filter(|t| t.as_str() == "Here it is.").count(),
        1,
        "{after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platforms_without_live_replies_get_only_the_final_answer() {
    let (_fixture, services) = grok_fixture().await;
    let outbox = Memory::new(Limits::WEB);
    let bot = conductor(interpreter(&Gates::new(), Some(services)));
    bot.handle(incoming(
        message("m1", "!grok --no-thread What is new?"),
        &outbox,
    ))
    .await;
    assert_eq!(texts(&outbox, Role::Answer), ["Here it is."]);
}

fn texts_of(outbox: &Memory) -> Vec<String> {
    texts(outbox, Role::Answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_the_answer_as_it_is_written_redacted_then_the_answer_replaces_it() {
    const KEY: &str = "sk-live-0123456789abcdef";
    let fixture = Fixture::start().await.expect("fixture");
    // The key the provider is configured with comes back split across three events.
    let pieces = [
        "Your key is sk-li",
        "ve-01234567",
        "89abcdef and",
        " that is all.",
    ];
    let mut events: Vec<String> = pieces
        .iter()
        .map(|p| format!("data: {}\n\n", script::chat_text_chunk(p)))
        .collect();
    events.push(format!(
        "data: {}\n\n",
        script::chat_finish_chunk("stop", 5, 9)
    ));
    events.push("data: [DONE]\n\n".to_owned());
    fixture.route(
        "/v1/chat/completions",
        Reply::sse_chunks(events).slow(Duration::from_millis(150)),
    );
    let providers = ProviderSet::from_config(
        None,
        &[ProviderConfig {
            name: Some("local".into()),
            url: Some(fixture.url("/v1")),
            model: Some("m1".into()),
            key: Some(yetibot_redaction::Secret::new(KEY)),
            ..ProviderConfig::default()
        }],
    )
    .expect("providers");
    let services = yetibot_ai_commands::AiServices::new(
        Client::new(ClientOptions::default()).expect("client"),
        providers,
        Host::new(ServerSet::default(), HostOptions::new()).expect("host"),
        policy(),
        Arc::new(tokio::time::Instant::now),
    );
    let outbox = Memory::new(Limits::WEB);
    let bot = Arc::new(Conductor::new(
        Arc::new(interpreter(&Gates::new(), Some(services))),
        ConductorOptions {
            status_interval: Duration::from_millis(20),
            card_delay: Duration::ZERO,
            ..ConductorOptions::default()
        },
    ));
    bot.handle(incoming(
        message("m1", "!ai --no-tools What is my key?"),
        &outbox,
    ))
    .await;
    let every = outbox.every.lock().expect("every").clone();
    let cards: Vec<&str> = every
        .iter()
        .filter(|m| m.role == Role::Status)
        .map(|m| m.text.as_str())
        .collect();
    // The text grew in the card while it streamed ...
    assert!(cards.len() >= 2, "{cards:?}");
    assert!(cards.iter().any(|c| c.contains("Your key is")), "{cards:?}");
    // ... and no card, not even for one edit, ever held any part of the key that could
    // only have come from it.
    for card in &cards {
        assert!(!card.contains("ve-01234567"), "{card}");
        assert!(!card.contains("89abcdef"), "{card}");
    }
    // The finished answer replaced the card, redacted.
    assert!(outbox.of_role(Role::Status).is_empty());
    let answers = texts(&outbox, Role::Answer);
    assert_eq!(answers.len(), 1);
    assert!(
        answers[0].contains("[redacted]") && !answers[0].contains(KEY),
        "{answers:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_shown_live_only_where_it_is_the_callers_answer_and_the_platform_shows_it() {
    let fixture = Fixture::start().await.expect("fixture");
    let events = [
        format!("data: {}\n\n", script::chat_text_chunk("alpha beta")),
        format!("data: {}\n\n", script::chat_finish_chunk("stop", 1, 2)),
        "data: [DONE]\n\n".to_owned(),
    ];
    for _ in 0..2 {
        fixture.route(
            "/v1/chat/completions",
            Reply::sse_chunks(events.clone()).slow(Duration::from_millis(100)),
        );
    }
    let options = ConductorOptions {
        status_interval: Duration::from_millis(10),
        card_delay: Duration::ZERO,
        ..ConductorOptions::default()
    };
    // Piped on, the text is not what the caller gets: no card shows it.
    let web = Memory::new(Limits::WEB);
    let bot = Arc::new(Conductor::new(
        Arc::new(interpreter(&Gates::new(), Some(ai(&fixture)))),
        options,
    ));
    bot.handle(incoming(
        message("m1", "!ai --no-tools say it | echo piped: %s"),
        &web,
    ))
    .await;
    let every = web.every.lock().expect("every").clone();
    assert!(
        every
            .iter()
            .all(|m| !(m.role == Role::Status && m.text.contains("alpha")))
    );
    assert_eq!(texts(&web, Role::Answer), ["piped: alpha beta"]);
    // Discord shows the finished answer only.
    let discord = Memory::new(Limits::DISCORD);
    bot.handle(incoming(message("m2", "!ai --no-tools say it"), &discord))
        .await;
    let every = discord.every.lock().expect("every").clone();
    assert!(
        every
            .iter()
            .all(|m| !(m.role == Role::Status && m.text.contains("alpha"))),
        "{every:?}"
    );
    assert_eq!(texts(&discord, Role::Answer), ["alpha beta"]);
}

#[tokio::test(start_paused = true)]
async fn a_status_card_waits_for_its_delay_so_a_quick_answer_shows_none() {
    let outbox = Memory::new(Limits::DISCORD);
    let gates = Gates::new();
    let bot = Arc::new(Conductor::new(
        Arc::new(hinted(&gates)),
        ConductorOptions::default(),
    ));
    let cards = |outbox: &Memory| {
        outbox
            .every
            .lock()
            .expect("every")
            .iter()
            .filter(|m| m.role == Role::Status)
            .count()
    };
    // A live command that answers at once: no card, no flicker.
    bot.handle(incoming(message("m1", "!ask quiet why"), &outbox))
        .await;
    assert_eq!(cards(&outbox), 0);
    assert_eq!(texts(&outbox, Role::Answer), ["answered"]);
    // One still running after the delay gets its card then, removed after the answer.
    let running = tokio::spawn({
        let (bot, outbox) = (Arc::clone(&bot), Arc::clone(&outbox));
        async move {
            bot.handle(incoming(message("m2", "!ponder"), &outbox))
                .await
        }
    });
    gates.entered.acquire().await.expect("entered").forget();
    tokio::time::sleep(yetibot_conductor::DEFAULT_CARD_DELAY / 2).await;
    assert_eq!(cards(&outbox), 0, "not before the delay");
    tokio::time::sleep(yetibot_conductor::DEFAULT_CARD_DELAY).await;
    assert_eq!(cards(&outbox), 1, "after it");
    gates.release.add_permits(1);
    running.await.expect("no panic");
    assert!(outbox.of_role(Role::Status).is_empty());
    assert_eq!(texts(&outbox, Role::Answer), ["answered", "waited"]);
}
