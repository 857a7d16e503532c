//! The running bot: the web console and every configured chat adapter feed one intake, and
//! the supervisor runs each event as its own task under the conductor.
//!
//! A request that panics is caught: its user gets an error reply, the panic hook has logged
//! the location (redacted), and the bot carries on. On shutdown the intake closes first (the
//! console answers new messages with 503), requests already taken get [`SHUTDOWN_GRACE`] to
//! finish and are then cancelled, and only then do the adapters stop, so that the last
//! answers are still delivered.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use tokio::task::JoinSet;
use yetibot_chat_adapters::{Events, Incoming, Outgoing, Role};
use yetibot_conductor::Conductor;

/// How long running requests may finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How many events may wait for a task at once; a full intake answers "busy".
pub const INTAKE_CAPACITY: usize = 256;

/// How many requests run at once; more wait in the intake (and past its capacity are
/// refused as busy), so a flood of paid requests cannot all run together.
pub const MAX_RUNNING: usize = 64;

/// The longest one request's task may take, everything included (the conductor stops the
/// command itself after its own deadline; this also bounds posting the answer).
pub const REQUEST_CEILING: Duration = Duration::from_secs(17 * 60);

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
    /// Requests that panicked.
    pub panicked: u64,
    /// Requests cancelled at the end of the grace period.
    pub cancelled: u64,
    /// Queued events not started because the bot was stopping at full capacity.
    pub turned_away: u64,
}

/// Runs every event from `events` as its own task until `stop` completes, then stops taking
/// events, starts the ones already queued, lets all of them finish for up to `grace` and
/// cancels the rest.
pub async fn supervise(
    mut events: Events,
    conductor: Arc<Conductor>,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> Report {
    let mut report = Report::default();
    let mut tasks = JoinSet::new();
    tokio::pin!(stop);
    // With no adapter left to send events, the bot still runs (discovery, the history
    // writer) until it is told to stop.
    let mut open = true;
    loop {
        tokio::select! {
            () = &mut stop => break,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => note(&mut report, &done),
            incoming = events.next(), if open && tasks.len() < MAX_RUNNING => match incoming {
                Some(incoming) => start(&mut tasks, &conductor, incoming, &mut report),
                None => open = false,
            },
        }
    }
    // Events already taken still run while there is room; the rest are told to come back.
    events.close();
    while let Some(incoming) = events.next().await {
        if tasks.len() < MAX_RUNNING {
            start(&mut tasks, &conductor, incoming, &mut report);
        } else {
            report.turned_away += 1;
            let reply = Outgoing::text(Role::Notice, SHUTDOWN_REPLY);
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                incoming.outbox.post(&incoming.event.place, vec![reply]),
            )
            .await;
        }
    }
    let drain = async {
        while let Some(done) = tasks.join_next().await {
            note(&mut report, &done);
        }
    };
    if tokio::time::timeout(grace, drain).await.is_err() {
        report.cancelled = u64::try_from(tasks.len()).unwrap_or(u64::MAX);
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    report
}

fn note(report: &mut Report, done: &Result<bool, tokio::task::JoinError>) {
    if matches!(done, Ok(false)) {
        report.panicked += 1;
    }
}

/// Starts one request. The task answers `true` when it finished, `false` when it panicked
/// (after telling the user).
fn start(
    tasks: &mut JoinSet<bool>,
    conductor: &Arc<Conductor>,
    incoming: Incoming,
    report: &mut Report,
) {
    report.started += 1;
    let conductor = Arc::clone(conductor);
    tasks.spawn(async move {
        let place = incoming.event.place.clone();
        let outbox = Arc::clone(&incoming.outbox);
        let adapter = place.adapter;
        let handled = tokio::time::timeout(
            REQUEST_CEILING,
            AssertUnwindSafe(conductor.handle(incoming)).catch_unwind(),
        )
        .await;
        match handled {
            Ok(Ok(())) => return true,
            Ok(Err(_)) => {}
            Err(_) => {
                tracing::warn!(adapter = %adapter, "a request outlived its ceiling and was stopped");
                let reply = Outgoing::text(Role::Answer, TIMEOUT_REPLY).as_error();
                let _ = outbox.post(&place, vec![reply]).await;
                return true;
            }
        }
        // The panic hook has already reported where (redacted); this says which adapter,
        // never what the message said.
        tracing::error!(adapter = %adapter, "a request panicked; its user was sent an error reply");
        let reply = Outgoing::text(Role::Answer, PANIC_REPLY).as_error();
        let _ = outbox.post(&place, vec![reply]).await;
        false
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

    /// Remembers the text of everything posted.
    #[derive(Default)]
    struct Posts(Mutex<Vec<String>>);

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

        fn delete<'a>(&'a self, _posted: &'a Posted) -> BoxFuture<'a, Result<(), SendError>> {
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

    fn conductor() -> Arc<Conductor> {
        let mut registry = builtins();
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
        let report = supervise(events, conductor(), std::future::ready(()), SHUTDOWN_GRACE).await;
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

    #[tokio::test(start_paused = true)]
    async fn at_most_max_running_requests_run_and_the_rest_wait_or_are_told() {
        let posts = Arc::new(Posts::default());
        let (intake, events) = intake(INTAKE_CAPACITY);
        let outbox = Arc::clone(&posts) as Arc<dyn Outbox>;
        for n in 0..MAX_RUNNING + 6 {
            intake
                .offer(event(&format!("m{n}"), "!forever"), Arc::clone(&outbox))
                .expect("queued");
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let supervising = tokio::spawn(supervise(
            events,
            conductor(),
            async move {
                let _ = stopped.await;
            },
            SHUTDOWN_GRACE,
        ));
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        let _ = stop.send(());
        let report = supervising.await.expect("no panic");
        assert_eq!(report.started, MAX_RUNNING as u64);
        assert_eq!(report.cancelled, MAX_RUNNING as u64);
        assert_eq!(report.turned_away, 6);
        let shown = posts.0.lock().expect("posts").clone();
        assert_eq!(shown.iter().filter(|p| *p == SHUTDOWN_REPLY).count(), 6);
    }
}
