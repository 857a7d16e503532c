//! The running bot: the web console and every configured chat adapter feed one intake, and
//! the supervisor runs each event as its own task under the conductor.
//!
//! The supervisor takes events from the intake as fast as they come and lets
//! [`Admission`] decide: run now, wait (the user sees a "queued" status message, deleted
//! when the request starts), or, when even the queue is full, refuse with a notice. The
//! intake itself is only a hand-off buffer between the adapters and this loop.
//!
//! A request that panics is caught: its user gets an error reply, the panic hook has logged
//! the location (redacted), and the bot carries on. On shutdown the intake closes first (the
//! console answers new messages with 503), requests already running get [`SHUTDOWN_GRACE`] to
//! finish and are then cancelled, waiting ones are told to send again, and only then do the
//! adapters stop, so that the last answers are still delivered.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use tokio::task::{JoinHandle, JoinSet};
use yetibot_chat_adapters::{EventKind, Events, Incoming, Outgoing, Posted, Role};
use yetibot_conductor::{Admission, AdmissionLimits, Conductor, Limit, Offer, Requester, Slot};

/// How long running requests may finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How many events may wait in the hand-off between the adapters and the supervisor, which
/// empties it as fast as events come; a full intake answers "busy". Requests over a
/// fairness limit wait in the admission queue, not here.
pub const INTAKE_CAPACITY: usize = 1024;

/// The longest one request's task may take, everything included (the conductor stops the
/// command itself after its own deadline; this also bounds posting the answer).
pub const REQUEST_CEILING: Duration = Duration::from_secs(17 * 60);

/// How long posting or deleting a queued status, or a refusal, may take.
const NOTICE_DEADLINE: Duration = Duration::from_secs(10);

/// The most refusal notices being posted at once; past it a refusal is only logged, so a
/// flood cannot turn into as many tasks.
const MAX_NOTICES_IN_FLIGHT: usize = 256;

/// What a user whose message was queued but not started at shutdown sees.
pub const SHUTDOWN_REPLY: &str =
    "The bot is restarting and did not run this; send it again in a moment.";

/// What a user sees when their request outlived [`REQUEST_CEILING`].
pub const TIMEOUT_REPLY: &str = "💥 This request took too long and was stopped. 💥";

/// What a user sees when their request panicked.
pub const PANIC_REPLY: &str = "💥 Something went wrong inside the bot while handling this message. It was logged; please try again. 💥";

/// What the supervisor did, for the shutdown log line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Requests started.
    pub started: u64,
    /// Requests that had to wait before they started (or were told to come back).
    pub queued: u64,
    /// Requests refused because the queue was full.
    pub refused: u64,
    /// Requests that panicked.
    pub panicked: u64,
    /// Requests cancelled at the end of the grace period.
    pub cancelled: u64,
    /// Waiting or late events not started because the bot was stopping.
    pub turned_away: u64,
}

/// A request waiting for its turn, with the status message that says so.
struct Waiting {
    incoming: Incoming,
    status: Option<JoinHandle<Option<Posted>>>,
}

/// The running requests: each task hands back its slot, and whether it finished (`false`:
/// it panicked).
type Running = JoinSet<(Slot, bool)>;

/// Runs every event from `events` as its own task, within `limits`, until `stop` completes;
/// then stops taking events, starts the ones already handed over while there is room, tells
/// the waiting ones to come back, lets the running ones finish for up to `grace` and cancels
/// the rest.
pub async fn supervise(
    mut events: Events,
    conductor: Arc<Conductor>,
    limits: AdmissionLimits,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> Report {
    let mut report = Report::default();
    let mut admission = Admission::new(limits);
    let mut tasks = Running::new();
    let mut notices = JoinSet::new();
    tokio::pin!(stop);
    // With no adapter left to send events, the bot still runs (discovery, the history
    // writer) until it is told to stop.
    let mut open = true;
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                let Some(slot) = note(&mut report, done) else { continue };
                for (slot, waiting) in admission.finish(slot) {
                    start(&mut tasks, &conductor, waiting, slot, &mut report);
                }
            }
            Some(_) = notices.join_next(), if !notices.is_empty() => {}
            incoming = events.next(), if open => match incoming {
                Some(incoming) => admit(
                    &mut admission,
                    &mut tasks,
                    &mut notices,
                    &conductor,
                    incoming,
                    &mut report,
                ),
                None => open = false,
            },
        }
    }
    // Events already handed over still run while there is room; the rest, and every
    // request still waiting, are told to come back.
    events.close();
    let mut leaving: Vec<Waiting> = admission.drain_waiting();
    while let Some(incoming) = events.next().await {
        let requester = Requester::of(&incoming.event);
        let waiting = Waiting {
            incoming,
            status: None,
        };
        match admission.offer(&requester, waiting) {
            Offer::Run(slot, waiting) => start(&mut tasks, &conductor, waiting, slot, &mut report),
            Offer::Refused(waiting, _) => leaving.push(waiting),
            Offer::Queued { .. } => {}
        }
    }
    leaving.extend(admission.drain_waiting());
    report.turned_away += u64::try_from(leaving.len()).unwrap_or(u64::MAX);
    let farewells = leaving.into_iter().map(|waiting| async move {
        let place = waiting.incoming.event.place.clone();
        let outbox = Arc::clone(&waiting.incoming.outbox);
        let reply = Outgoing::text(Role::Notice, SHUTDOWN_REPLY);
        let told = async {
            clear_status(&waiting.incoming, waiting.status).await;
            let _ = outbox.post(&place, vec![reply]).await;
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), told).await;
    });
    futures_util::future::join_all(farewells).await;
    notices.abort_all();
    let drain = async {
        while let Some(done) = tasks.join_next().await {
            note(&mut report, done);
        }
    };
    if tokio::time::timeout(grace, drain).await.is_err() {
        report.cancelled = u64::try_from(tasks.len()).unwrap_or(u64::MAX);
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    report
}

/// Counts a finished task and hands back its slot (none for a cancelled task).
fn note(report: &mut Report, done: Result<(Slot, bool), tokio::task::JoinError>) -> Option<Slot> {
    let (slot, finished) = done.ok()?;
    if !finished {
        report.panicked += 1;
    }
    Some(slot)
}

/// Lets admission decide about one event: it starts, waits with a status message, or is
/// refused with a notice.
fn admit(
    admission: &mut Admission<Waiting>,
    tasks: &mut Running,
    notices: &mut JoinSet<()>,
    conductor: &Arc<Conductor>,
    incoming: Incoming,
    report: &mut Report,
) {
    let requester = Requester::of(&incoming.event);
    let limits = admission.limits();
    let shown = matches!(
        incoming.event.kind,
        EventKind::Message { .. } | EventKind::Edited { .. } | EventKind::Pressed { .. }
    );
    let waiting = Waiting {
        incoming,
        status: None,
    };
    match admission.offer(&requester, waiting) {
        Offer::Run(slot, waiting) => start(tasks, conductor, waiting, slot, report),
        Offer::Queued { limit, waiting } => {
            report.queued += 1;
            if shown {
                attach_status(admission, &requester, queued_text(limit, waiting, limits));
            }
        }
        Offer::Refused(waiting, refusal) => {
            report.refused += 1;
            tracing::warn!(
                adapter = %waiting.incoming.event.place.adapter,
                "a request was refused: {refusal}"
            );
            while notices.try_join_next().is_some() {}
            if shown && notices.len() < MAX_NOTICES_IN_FLIGHT {
                let incoming = waiting.incoming;
                let reply = Outgoing::text(Role::Notice, format!("⏳ {refusal}"));
                notices.spawn(async move {
                    let post = incoming.outbox.post(&incoming.event.place, vec![reply]);
                    let _ = tokio::time::timeout(NOTICE_DEADLINE, post).await;
                });
            }
        }
    }
}

/// Starts posting `text` as the status of the request just queued for `requester`.
fn attach_status(admission: &mut Admission<Waiting>, requester: &Requester, text: String) {
    let Some(waiting) = admission.last_queued(requester) else {
        return;
    };
    let place = waiting.incoming.event.place.clone();
    let outbox = Arc::clone(&waiting.incoming.outbox);
    waiting.status = Some(tokio::spawn(async move {
        let post = outbox.post(&place, vec![Outgoing::text(Role::Status, text)]);
        tokio::time::timeout(NOTICE_DEADLINE, post).await.ok()?.ok()
    }));
}

/// What a waiting request's status says: why it waits, in the user's terms.
fn queued_text(limit: Limit, waiting: usize, limits: AdmissionLimits) -> String {
    let why = match limit {
        Limit::Bot => format!(
            "the bot is running as many requests as it allows ({})",
            limits.in_flight
        ),
        Limit::User => format!("you already have {} requests running", limits.per_user),
        Limit::Channel => format!(
            "this channel already has {} requests running",
            limits.per_channel
        ),
        Limit::Behind => "your earlier requests here are still waiting".to_owned(),
    };
    format!("⏳ Queued: {why}. This starts when a place frees up ({waiting} waiting).")
}

/// Deletes a waiting request's status message once it has been posted, best effort.
async fn clear_status(incoming: &Incoming, status: Option<JoinHandle<Option<Posted>>>) {
    let Some(status) = status else { return };
    let deleted = async {
        if let Ok(Some(posted)) = status.await {
            let _ = incoming.outbox.delete(&posted).await;
        }
    };
    let _ = tokio::time::timeout(NOTICE_DEADLINE, deleted).await;
}

/// Starts one request. The task hands back its slot and `true` when it finished, `false`
/// when it panicked (after telling the user).
fn start(
    tasks: &mut Running,
    conductor: &Arc<Conductor>,
    waiting: Waiting,
    slot: Slot,
    report: &mut Report,
) {
    report.started += 1;
    let conductor = Arc::clone(conductor);
    tasks.spawn(async move {
        let Waiting { incoming, status } = waiting;
        let place = incoming.event.place.clone();
        let outbox = Arc::clone(&incoming.outbox);
        let adapter = place.adapter;
        let cleared = {
            let incoming = incoming.clone();
            async move { clear_status(&incoming, status).await }
        };
        let handle = tokio::time::timeout(
            REQUEST_CEILING,
            AssertUnwindSafe(conductor.handle(incoming)).catch_unwind(),
        );
        let ((), handled) = tokio::join!(cleared, handle);
        match handled {
            Ok(Ok(())) => return (slot, true),
            Ok(Err(_)) => {}
            Err(_) => {
                tracing::warn!(adapter = %adapter, "a request outlived its ceiling and was stopped");
                let reply = Outgoing::text(Role::Answer, TIMEOUT_REPLY).as_error();
                let _ = outbox.post(&place, vec![reply]).await;
                return (slot, true);
            }
        }
        // The panic hook has already reported where (redacted); this says which adapter,
        // never what the message said.
        tracing::error!(adapter = %adapter, "a request panicked; its user was sent an error reply");
        let reply = Outgoing::text(Role::Answer, PANIC_REPLY).as_error();
        let _ = outbox.post(&place, vec![reply]).await;
        (slot, false)
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures_util::future::BoxFuture;
    use yetibot_chat_adapters::{
        AdapterKind, Author, Event, EventKind, HistoryError, HistoryLimits, HistoryMessage, Limits,
        Outbox, Place, Posted, SendError, intake,
    };
    use yetibot_command::{
        Call, Category, CommandSpec, Handler, Interpreter, Outcome, Plain, Settings, builtins,
    };
    use yetibot_history::MemoryAliases;

    use super::*;

    /// Remembers the text of everything posted, and what was deleted.
    #[derive(Default)]
    struct Posts(Mutex<Vec<String>>, Mutex<Vec<Posted>>);

    impl Outbox for Posts {
        fn limits(&self) -> Limits {
            Limits::WEB
        }

        fn post<'a>(
            &'a self,
            place: &'a Place,
            messages: Vec<Outgoing>,
        ) -> BoxFuture<'a, Result<Posted, SendError>> {
            let mut posts = self.0.lock().expect("posts");
            posts.extend(messages.into_iter().map(|m| m.text));
            let ids = vec![posts.len().to_string()];
            Box::pin(std::future::ready(Ok(Posted {
                place: place.clone(),
                ids,
            })))
        }

        fn replace<'a>(
            &'a self,
            posted: &'a Posted,
            messages: Vec<Outgoing>,
        ) -> BoxFuture<'a, Result<Posted, SendError>> {
            self.post(&posted.place, messages)
        }

        fn delete<'a>(&'a self, posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>> {
            self.1.lock().expect("deletes").push(posted.clone());
            Box::pin(std::future::ready(Ok(())))
        }

        fn thread_history<'a>(
            &'a self,
            _place: &'a Place,
            _before: &'a str,
            _limits: HistoryLimits,
        ) -> BoxFuture<'a, Result<Vec<HistoryMessage>, HistoryError>> {
            Box::pin(std::future::ready(Ok(Vec::new())))
        }
    }

    /// A command that never finishes.
    struct Forever;

    impl Handler for Forever {
        fn run<'a>(&'a self, _call: Call<'a>) -> BoxFuture<'a, Outcome> {
            Box::pin(std::future::pending())
        }
    }

    /// A command that answers once the gate lets it through.
    struct Gate(Arc<tokio::sync::Semaphore>);

    impl Handler for Gate {
        fn run<'a>(&'a self, _call: Call<'a>) -> BoxFuture<'a, Outcome> {
            Box::pin(async move {
                let _ = self.0.acquire().await.map(|p| p.forget());
                Outcome::text("opened")
            })
        }
    }

    fn conductor() -> Arc<Conductor> {
        gated_conductor(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    fn gated_conductor(gate: Arc<tokio::sync::Semaphore>) -> Arc<Conductor> {
        let mut registry = builtins();
        registry.add(CommandSpec::new("gate", &[Category::UTIL]).route(
            None,
            "gate # answers when let through",
            Gate(gate),
        ));
        registry.add(CommandSpec::new("boom", &[Category::UTIL]).route(
            None,
            "boom # panics",
            Plain(|_: &Call<'_>| -> Outcome { panic!("a bug in a command") }),
        ));
        registry.add(CommandSpec::new("forever", &[Category::UTIL]).route(
            None,
            "forever # never answers",
            Forever,
        ));
        let interpreter = Interpreter::new(
            registry,
            Arc::new(MemoryAliases::new()),
            Box::new(yetibot_json_util::SplitMix64::new(1)),
            Settings::default(),
        );
        Arc::new(Conductor::new(
            Arc::new(interpreter),
            yetibot_conductor::ConductorOptions::default(),
        ))
    }

    fn event(id: &str, text: &str) -> Event {
        Event {
            place: Place {
                adapter: AdapterKind::Web,
                connection: "local".into(),
                room: "general".into(),
                room_name: None,
                thread: None,
            },
            author: Author {
                id: "local".into(),
                name: "local".into(),
                is_bot: false,
            },
            message_id: id.into(),
            revision: 0,
            attachments: Vec::new(),
            kind: EventKind::Message { text: text.into() },
        }
    }

    #[tokio::test]
    async fn a_panicking_request_is_answered_and_the_next_one_runs() {
        let posts = Arc::new(Posts::default());
        let (intake, events) = intake(8);
        let outbox = Arc::clone(&posts) as Arc<dyn Outbox>;
        intake
            .offer(event("m1", "!boom"), Arc::clone(&outbox))
            .expect("queued");
        intake
            .offer(event("m2", "!echo still here"), outbox)
            .expect("queued");
        drop(intake);
        let report = supervise(
            events,
            conductor(),
            AdmissionLimits::default(),
            std::future::ready(()),
            SHUTDOWN_GRACE,
        )
        .await;
        assert_eq!(
            report,
            Report {
                started: 2,
                panicked: 1,
                ..Report::default()
            }
        );
        let posts = posts.0.lock().expect("posts").clone();
        assert!(posts.contains(&PANIC_REPLY.to_owned()), "{posts:?}");
        assert!(posts.contains(&"still here".to_owned()), "{posts:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn requests_still_running_after_the_grace_are_cancelled() {
        let posts = Arc::new(Posts::default());
        let (intake, events) = intake(8);
        let outbox = Arc::clone(&posts) as Arc<dyn Outbox>;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        intake
            .offer(event("m1", "!forever"), Arc::clone(&outbox))
            .expect("queued");
        let started = tokio::time::Instant::now();
        let supervising = tokio::spawn(supervise(
            events,
            conductor(),
            AdmissionLimits::default(),
            async move {
                let _ = stopped.await;
            },
            SHUTDOWN_GRACE,
        ));
        // Let the request start, then stop: new events are refused at once.
        tokio::task::yield_now().await;
        let _ = stop.send(());
        let report = supervising.await.expect("no panic");
        assert_eq!(report.cancelled, 1);
        assert!(started.elapsed() >= SHUTDOWN_GRACE);
        assert!(intake.offer(event("m2", "!echo late"), outbox).is_err());
    }

    fn event_by(adapter: AdapterKind, user: &str, id: &str, text: &str) -> Event {
        let mut event = event(id, text);
        event.place.adapter = adapter;
        event.author.id = user.into();
        event
    }

    /// Runs the supervisor over `events` with the test conductor until the returned sender
    /// fires, after letting it take what is queued.
    async fn supervising(
        events: yetibot_chat_adapters::Events,
        limits: AdmissionLimits,
    ) -> (
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Report>,
    ) {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(supervise(
            events,
            conductor(),
            limits,
            async move {
                let _ = stopped.await;
            },
            SHUTDOWN_GRACE,
        ));
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        (stop, running)
    }

    fn small_limits() -> AdmissionLimits {
        AdmissionLimits {
            in_flight: 3,
            per_user: 2,
            per_channel: 3,
            queue: 2,
            queue_per_user: 2,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn requests_over_a_limit_wait_with_a_status_and_a_full_queue_refuses() {
        let posts = Arc::new(Posts::default());
        let (intake, events) = intake(INTAKE_CAPACITY);
        let outbox = Arc::clone(&posts) as Arc<dyn Outbox>;
        let offer = |user: &str, n: usize| {
            let event = event_by(AdapterKind::Discord, user, &format!("m{n}"), "!forever");
            intake
                .offer(event, Arc::clone(&outbox))
                .expect("handed over");
        };
        // Two of a's run, a's third waits on a's share; b's first runs and fills the bot,
        // b's second waits on the bot; c's is refused: the queue holds two.
        for (n, user) in ["a", "a", "a", "b", "b", "c"].into_iter().enumerate() {
            offer(user, n);
        }
        let (stop, supervising) = supervising(events, small_limits()).await;
        let shown = posts.0.lock().expect("posts").clone();
        assert!(
            shown.contains(&"⏳ Queued: you already have 2 requests running. This starts when a place frees up (1 waiting).".to_owned()),
            "{shown:?}"
        );
        assert!(
            shown.iter().any(|p| p
                .starts_with("⏳ Queued: the bot is running as many requests as it allows (3)")),
            "{shown:?}"
        );
        assert!(
            shown.contains(
                &"⏳ the bot is busy: 2 requests are already waiting; try again in a moment"
                    .to_owned()
            ),
            "{shown:?}"
        );
        let _ = stop.send(());
        let report = supervising.await.expect("no panic");
        assert_eq!(
            report,
            Report {
                started: 3,
                queued: 2,
                refused: 1,
                cancelled: 3,
                turned_away: 2,
                ..Report::default()
            }
        );
        let shown = posts.0.lock().expect("posts").clone();
        assert_eq!(shown.iter().filter(|p| *p == SHUTDOWN_REPLY).count(), 2);
        // The waiting requests' status messages were taken down when they were turned away.
        assert_eq!(posts.1.lock().expect("deletes").len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_request_starts_when_a_place_frees_and_its_status_goes() {
        let posts = Arc::new(Posts::default());
        let (intake, events) = intake(INTAKE_CAPACITY);
        let outbox = Arc::clone(&posts) as Arc<dyn Outbox>;
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let limits = AdmissionLimits {
            per_user: 1,
            ..small_limits()
        };
        let first = event_by(AdapterKind::Slack, "u", "m1", "!gate");
        let second = event_by(AdapterKind::Slack, "u", "m2", "!echo second");
        intake
            .offer(first, Arc::clone(&outbox))
            .expect("handed over");
        intake
            .offer(second, Arc::clone(&outbox))
            .expect("handed over");
        drop(intake);
        let supervising = tokio::spawn(supervise(
            events,
            gated_conductor(Arc::clone(&gate)),
            limits,
            std::future::pending(),
            SHUTDOWN_GRACE,
        ));
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        {
            let shown = posts.0.lock().expect("posts").clone();
            assert!(shown.iter().all(|p| p != "second"), "{shown:?}");
            assert!(
                shown
                    .iter()
                    .any(|p| p.starts_with("⏳ Queued: you already have 1 requests running")),
                "{shown:?}"
            );
        }
        gate.add_permits(1);
        for _ in 0..40 {
            tokio::task::yield_now().await;
        }
        let shown = posts.0.lock().expect("posts").clone();
        assert!(shown.contains(&"opened".to_owned()), "{shown:?}");
        assert!(shown.contains(&"second".to_owned()), "{shown:?}");
        assert_eq!(
            posts.1.lock().expect("deletes").len(),
            1,
            "the status was deleted"
        );
        supervising.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn the_local_operator_is_not_held_to_the_per_user_share() {
        let posts = Arc::new(Posts::default());
        let (intake, events) = intake(INTAKE_CAPACITY);
        let outbox = Arc::clone(&posts) as Arc<dyn Outbox>;
        for n in 0..3 {
            let event = event_by(AdapterKind::Web, "local", &format!("m{n}"), "!forever");
            intake
                .offer(event, Arc::clone(&outbox))
                .expect("handed over");
        }
        let (stop, supervising) = supervising(events, small_limits()).await;
        let _ = stop.send(());
        let report = supervising.await.expect("no panic");
        assert_eq!((report.started, report.queued), (3, 0));
    }
}
