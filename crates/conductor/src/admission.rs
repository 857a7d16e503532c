//! Which requests run now, which wait their turn, and which are refused.
//!
//! A chat bot spends almost all of a request waiting on a model server, so the number of
//! requests in flight is bounded by memory, not by cores: [`AdmissionLimits::from_budget`]
//! divides a memory budget by the charge of one request ([`REQUEST_CHARGE_BYTES`]). Within
//! that bound two fairness limits keep one person or one channel from taking the bot: a
//! user may have at most `per_user` requests running and a channel at most `per_channel`.
//! A request over any limit waits in a bounded queue; only a full queue refuses it.
//!
//! Waiting requests are kept in lanes, one per user and channel, served round-robin, so a
//! user with a hundred queued requests does not hold up someone else's one, and a user's
//! requests in one channel start in the order they were sent. The local operator (the web
//! console, `yetibot run`) owns the bot and is bound by the budget and the channel limit
//! only, never by the per-user limit.
//!
//! [`Admission`] is plain data with no clock and no I/O: the supervisor that runs the
//! requests calls [`Admission::offer`] for each event and [`Admission::finish`] when one
//! ends, and starts whatever those hand back. Every call costs at most one pass over the
//! lanes that wait, which the queue bound keeps small.

use std::collections::{HashMap, VecDeque};

use serde::Deserialize;
use yetibot_chat_adapters::{AdapterKind, Event};
use yetibot_command::ConfigError;

/// What one request in flight is charged against the memory budget: 512 KiB.
///
/// This is the resident cost of a request at the default limits with room to spare: its
/// line (at most 16 KiB), the conversation sent to the model (the answer's own text is capped
/// by the provider's `:max-output-tokens`, 4,096 tokens by default), the stream parser's
/// buffer and the tasks and futures around them. `scripts/console-load.sh` measures the real
/// figure (resident memory with 1,000 requests waiting on a model, in the report). A request
/// can hold more only through data that has its own hard bound: a thread read for context
/// (1 MiB), one server-sent event (4 Mi characters) or a piped value (1 MiB).
pub const REQUEST_CHARGE_BYTES: u64 = 512 * 1024;

/// The default memory budget for requests in flight, in MiB: 1 GiB, so 2,048 requests.
pub const DEFAULT_MEMORY_BUDGET_MIB: u64 = 1024;
/// The largest memory budget accepted, in MiB (1 TiB).
pub const MAX_MEMORY_BUDGET_MIB: u64 = 1 << 20;
/// How many requests one user may have running at once by default.
pub const DEFAULT_PER_USER: usize = 32;
/// How many requests one channel may have running at once by default.
pub const DEFAULT_PER_CHANNEL: usize = 256;
/// How many requests may wait at once by default.
pub const DEFAULT_QUEUE: usize = 4096;
/// How many requests one user may have waiting at once by default.
pub const DEFAULT_QUEUE_PER_USER: usize = 256;
/// The longest queue accepted.
pub const MAX_QUEUE: usize = 1 << 16;

/// The bounds [`Admission`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Requests running at once, in all.
    pub in_flight: usize,
    /// Requests one user may have running (the local operator is exempt).
    pub per_user: usize,
    /// Requests one channel may have running.
    pub per_channel: usize,
    /// Requests that may wait, in all.
    pub queue: usize,
    /// Requests one user may have waiting (the local operator too).
    pub queue_per_user: usize,
}

impl AdmissionLimits {
    /// The default fairness and queue limits with as many requests in flight as
    /// `budget_bytes` holds at [`REQUEST_CHARGE_BYTES`] each (at least one).
    #[must_use]
    pub fn from_budget(budget_bytes: u64) -> Self {
        let in_flight = usize::try_from(budget_bytes / REQUEST_CHARGE_BYTES)
            .unwrap_or(usize::MAX)
            .max(1);
        Self {
            in_flight,
            per_user: DEFAULT_PER_USER.min(in_flight),
            per_channel: DEFAULT_PER_CHANNEL.min(in_flight),
            queue: DEFAULT_QUEUE,
            queue_per_user: DEFAULT_QUEUE_PER_USER,
        }
    }
}

impl Default for AdmissionLimits {
    fn default() -> Self {
        Self::from_budget(DEFAULT_MEMORY_BUDGET_MIB << 20)
    }
}

/// `:yetibot :concurrency`, as written: every key is optional.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct ConcurrencyConfig {
    /// Memory for requests in flight, in MiB (1 to 1,048,576; default 1,024).
    pub memory_budget_mib: Option<i64>,
    /// Requests one user may have running (at least 1; default 32).
    pub per_user: Option<i64>,
    /// Requests one channel may have running (at least 1; default 256).
    pub per_channel: Option<i64>,
    /// Requests that may wait (0 to 65,536; default 4,096). With 0, a request over a limit
    /// is refused at once.
    pub queue: Option<i64>,
    /// Requests one user may have waiting (default 256, at most `queue`).
    pub queue_per_user: Option<i64>,
}

/// Validates `:yetibot :concurrency`. A fairness limit above the number the budget allows
/// in flight is lowered to it.
///
/// # Errors
///
/// Every key out of range, with paths relative to the `:concurrency` map.
pub fn admission_limits(config: &ConcurrencyConfig) -> Result<AdmissionLimits, Vec<ConfigError>> {
    let mut problems = Vec::new();
    let mut read = |key: &str, value: Option<i64>, default: u64, low: u64, high: u64| -> u64 {
        match value {
            None => default,
            Some(n) => match u64::try_from(n) {
                Ok(n) if (low..=high).contains(&n) => n,
                _ => {
                    problems.push(ConfigError::new(
                        key,
                        format!("must be a whole number from {low} to {high}"),
                    ));
                    default
                }
            },
        }
    };
    let budget = read(
        "memory-budget-mib",
        config.memory_budget_mib,
        DEFAULT_MEMORY_BUDGET_MIB,
        1,
        MAX_MEMORY_BUDGET_MIB,
    );
    let big = MAX_QUEUE as u64 * 16;
    let per_user = read("per-user", config.per_user, DEFAULT_PER_USER as u64, 1, big);
    let per_channel = read(
        "per-channel",
        config.per_channel,
        DEFAULT_PER_CHANNEL as u64,
        1,
        big,
    );
    let queue = read(
        "queue",
        config.queue,
        DEFAULT_QUEUE as u64,
        0,
        MAX_QUEUE as u64,
    );
    let queue_per_user = read(
        "queue-per-user",
        config.queue_per_user,
        DEFAULT_QUEUE_PER_USER.min(usize::try_from(queue).unwrap_or(0)) as u64,
        0,
        MAX_QUEUE as u64,
    );
    if queue_per_user > queue {
        problems.push(ConfigError::new(
            "queue-per-user",
            "must not be larger than :queue",
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let limits = AdmissionLimits::from_budget(budget << 20);
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok(AdmissionLimits {
        per_user: size(per_user).min(limits.in_flight),
        per_channel: size(per_channel).min(limits.in_flight),
        queue: size(queue),
        queue_per_user: size(queue_per_user),
        ..limits
    })
}

/// Who sent a request, as admission counts it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requester {
    /// The user, unique across adapters and connections.
    pub user: String,
    /// The channel (a thread counts as its channel), unique likewise.
    pub channel: String,
    /// Whether the per-user limit applies: not to the local operator.
    pub per_user_limit: bool,
}

impl Requester {
    /// The sender and channel of `event`.
    #[must_use]
    pub fn of(event: &Event) -> Self {
        let place = &event.place;
        let scope = format!("{}\u{1f}{}", place.adapter, place.connection);
        Self {
            user: format!("{scope}\u{1f}{}", event.author.id),
            channel: format!("{scope}\u{1f}{}", place.room),
            per_user_limit: !matches!(place.adapter, AdapterKind::Web | AdapterKind::Cli),
        }
    }
}

/// The limit that made a request wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The bot has as many requests in flight as its memory budget allows.
    Bot,
    /// The user has `per_user` requests running.
    User,
    /// The channel has `per_channel` requests running.
    Channel,
    /// The user already has requests waiting in this channel; this one goes after them.
    Behind,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The queue is full.
    #[error("the bot is busy: {0} requests are already waiting; try again in a moment")]
    QueueFull(usize),
    /// The user's share of the queue is full.
    #[error("you already have {0} requests waiting; try again when some have finished")]
    UserQueueFull(usize),
}

/// A running request's claim, handed back to [`Admission::finish`] when it ends.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a slot that is never finished keeps its place taken"]
pub struct Slot {
    lane: Lane,
    per_user_limit: bool,
}

/// What [`Admission::offer`] decided.
#[derive(Debug)]
pub enum Offer<T> {
    /// Run it now.
    Run(Slot, T),
    /// It waits; `waiting` requests wait in all, this one included.
    Queued {
        /// The limit it is waiting on.
        limit: Limit,
        /// How many requests wait, this one included.
        waiting: usize,
    },
    /// It cannot even wait.
    Refused(T, Refusal),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Lane {
    user: String,
    channel: String,
}

struct Waiting<T> {
    per_user_limit: bool,
    item: T,
}

#[derive(Default)]
struct Count {
    running: usize,
    waiting: usize,
}

/// The admission state: what runs and what waits. See the [module](self) docs.
pub struct Admission<T> {
    limits: AdmissionLimits,
    running: usize,
    waiting: usize,
    users: HashMap<String, Count>,
    channels: HashMap<String, usize>,
    lanes: HashMap<Lane, VecDeque<Waiting<T>>>,
    /// Lanes with requests waiting, each once, in the order they are served.
    turns: VecDeque<Lane>,
}

impl<T> std::fmt::Debug for Admission<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("limits", &self.limits)
            .field("running", &self.running)
            .field("waiting", &self.waiting)
            .finish_non_exhaustive()
    }
}

impl<T> Admission<T> {
    /// Nothing running, nothing waiting.
    #[must_use]
    pub fn new(limits: AdmissionLimits) -> Self {
        Self {
            limits,
            running: 0,
            waiting: 0,
            users: HashMap::new(),
            channels: HashMap::new(),
            lanes: HashMap::new(),
            turns: VecDeque::new(),
        }
    }

    /// The limits in force.
    #[must_use]
    pub fn limits(&self) -> AdmissionLimits {
        self.limits
    }

    /// How many requests run.
    #[must_use]
    pub fn running(&self) -> usize {
        self.running
    }

    /// How many requests wait.
    #[must_use]
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Decides about one request: run it, queue it, or refuse it.
    pub fn offer(&mut self, requester: &Requester, item: T) -> Offer<T> {
        let lane = Lane {
            user: requester.user.clone(),
            channel: requester.channel.clone(),
        };
        let limit = if self.lanes.contains_key(&lane) {
            Some(Limit::Behind)
        } else {
            self.blocking(&lane, requester.per_user_limit)
        };
        let Some(limit) = limit else {
            let slot = self.start(lane, requester.per_user_limit);
            return Offer::Run(slot, item);
        };
        let user_waiting = self.users.get(&lane.user).map_or(0, |c| c.waiting);
        if self.waiting >= self.limits.queue {
            return Offer::Refused(item, Refusal::QueueFull(self.waiting));
        }
        if user_waiting >= self.limits.queue_per_user {
            return Offer::Refused(item, Refusal::UserQueueFull(user_waiting));
        }
        self.waiting += 1;
        self.users.entry(lane.user.clone()).or_default().waiting += 1;
        let waiting = Waiting {
            per_user_limit: requester.per_user_limit,
            item,
        };
        match self.lanes.get_mut(&lane) {
            Some(queue) => queue.push_back(waiting),
            None => {
                self.lanes.insert(lane.clone(), VecDeque::from([waiting]));
                self.turns.push_back(lane);
            }
        }
        Offer::Queued {
            limit,
            waiting: self.waiting,
        }
    }

    /// Gives back a finished request's slot and returns the waiting requests that may start
    /// now, each with its own slot, in the order to start them.
    pub fn finish(&mut self, slot: Slot) -> Vec<(Slot, T)> {
        self.running = self.running.saturating_sub(1);
        if let Some(count) = self.channels.get_mut(&slot.lane.channel) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.channels.remove(&slot.lane.channel);
            }
        }
        self.release_user(&slot.lane.user, |count| {
            count.running = count.running.saturating_sub(1);
        });
        self.dispatch()
    }

    /// The request `requester` queued last, to attach something to it (a status message)
    /// right after [`Admission::offer`] queued it.
    pub fn last_queued(&mut self, requester: &Requester) -> Option<&mut T> {
        let lane = Lane {
            user: requester.user.clone(),
            channel: requester.channel.clone(),
        };
        self.lanes
            .get_mut(&lane)
            .and_then(VecDeque::back_mut)
            .map(|w| &mut w.item)
    }

    /// Takes every waiting request out (at shutdown), oldest lane first.
    pub fn drain_waiting(&mut self) -> Vec<T> {
        let mut items = Vec::with_capacity(self.waiting);
        while let Some(lane) = self.turns.pop_front() {
            if let Some(queue) = self.lanes.remove(&lane) {
                let n = queue.len();
                items.extend(queue.into_iter().map(|w| w.item));
                self.release_user(&lane.user, |count| {
                    count.waiting = count.waiting.saturating_sub(n);
                });
            }
        }
        self.waiting = 0;
        items
    }

    /// The limit that keeps a request in `lane` from starting now, if any.
    fn blocking(&self, lane: &Lane, per_user_limit: bool) -> Option<Limit> {
        if self.running >= self.limits.in_flight {
            return Some(Limit::Bot);
        }
        let user_running = self.users.get(&lane.user).map_or(0, |c| c.running);
        if per_user_limit && user_running >= self.limits.per_user {
            return Some(Limit::User);
        }
        if self.channels.get(&lane.channel).copied().unwrap_or(0) >= self.limits.per_channel {
            return Some(Limit::Channel);
        }
        None
    }

    fn start(&mut self, lane: Lane, per_user_limit: bool) -> Slot {
        self.running += 1;
        *self.channels.entry(lane.channel.clone()).or_default() += 1;
        self.users.entry(lane.user.clone()).or_default().running += 1;
        Slot {
            lane,
            per_user_limit,
        }
    }

    /// One pass over the waiting lanes, starting each lane's first request where every
    /// limit allows it. A slot frees at most one place in the bot, one in a user's share and
    /// one in a channel's, so one pass starts everything that can start.
    fn dispatch(&mut self) -> Vec<(Slot, T)> {
        let mut started = Vec::new();
        for _ in 0..self.turns.len() {
            if self.running >= self.limits.in_flight {
                break;
            }
            let Some(lane) = self.turns.pop_front() else {
                break;
            };
            let head = self
                .lanes
                .get(&lane)
                .and_then(VecDeque::front)
                .map(|w| w.per_user_limit);
            let Some(per_user_limit) = head else {
                self.lanes.remove(&lane);
                continue;
            };
            if self.blocking(&lane, per_user_limit).is_some() {
                self.turns.push_back(lane);
                continue;
            }
            let Some(queue) = self.lanes.get_mut(&lane) else {
                continue;
            };
            let Some(waiting) = queue.pop_front() else {
                continue;
            };
            let more = !queue.is_empty();
            if !more {
                self.lanes.remove(&lane);
            }
            self.waiting = self.waiting.saturating_sub(1);
            if let Some(count) = self.users.get_mut(&lane.user) {
                count.waiting = count.waiting.saturating_sub(1);
            }
            if more {
                self.turns.push_back(lane.clone());
            }
            let slot = self.start(lane, per_user_limit);
            started.push((slot, waiting.item));
        }
        started
    }

    fn release_user(&mut self, user: &str, change: impl FnOnce(&mut Count)) {
        if let Some(count) = self.users.get_mut(user) {
            change(count);
            if count.running == 0 && count.waiting == 0 {
                self.users.remove(user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn who(user: &str, channel: &str) -> Requester {
        Requester {
            user: user.into(),
            channel: channel.into(),
            per_user_limit: true,
        }
    }

    fn operator(channel: &str) -> Requester {
        Requester {
            per_user_limit: false,
            ..who("operator", channel)
        }
    }

    fn limits(in_flight: usize, per_user: usize, per_channel: usize) -> AdmissionLimits {
        AdmissionLimits {
            in_flight,
            per_user,
            per_channel,
            queue: 8,
            queue_per_user: 4,
        }
    }

    fn run<T: std::fmt::Debug>(offer: Offer<T>) -> (Slot, T) {
        match offer {
            Offer::Run(slot, item) => (slot, item),
            other => panic!("expected to run, got {other:?}"),
        }
    }

    fn queued<T: std::fmt::Debug>(offer: Offer<T>) -> Limit {
        match offer {
            Offer::Queued { limit, .. } => limit,
            other => panic!("expected to wait, got {other:?}"),
        }
    }

    #[test]
    fn the_default_budget_runs_two_thousand_requests_at_once() {
        let limits = AdmissionLimits::default();
        assert_eq!(limits.in_flight, 2048);
        assert_eq!(limits.per_user, DEFAULT_PER_USER);
        assert_eq!(AdmissionLimits::from_budget(0).in_flight, 1);
    }

    #[test]
    fn configuration_is_checked_and_fairness_is_capped_by_the_budget() {
        assert_eq!(
            admission_limits(&ConcurrencyConfig::default()),
            Ok(AdmissionLimits::default())
        );
        let small = ConcurrencyConfig {
            memory_budget_mib: Some(4),
            per_user: Some(100),
            ..ConcurrencyConfig::default()
        };
        let limits = admission_limits(&small).expect("valid");
        assert_eq!(
            (limits.in_flight, limits.per_user, limits.per_channel),
            (8, 8, 8)
        );
        let bad = ConcurrencyConfig {
            memory_budget_mib: Some(0),
            per_user: Some(-1),
            per_channel: Some(0),
            queue: Some(10),
            queue_per_user: Some(11),
        };
        let problems = admission_limits(&bad).expect_err("invalid");
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "memory-budget-mib",
                "per-user",
                "per-channel",
                "queue-per-user"
            ]
        );
        let no_queue = ConcurrencyConfig {
            queue: Some(0),
            ..ConcurrencyConfig::default()
        };
        assert_eq!(admission_limits(&no_queue).map(|l| l.queue_per_user), Ok(0));
    }

    #[test]
    fn a_user_over_their_share_waits_while_others_still_run() {
        let mut admission = Admission::new(limits(10, 2, 10));
        let (a1, _) = run(admission.offer(&who("a", "c"), 1));
        let (_a2, _) = run(admission.offer(&who("a", "c"), 2));
        assert_eq!(queued(admission.offer(&who("a", "c"), 3)), Limit::User);
        assert_eq!(queued(admission.offer(&who("a", "c"), 4)), Limit::Behind);
        let (_b1, _) = run(admission.offer(&who("b", "c"), 5));
        assert_eq!((admission.running(), admission.waiting()), (3, 2));
        let started = admission.finish(a1);
        let items: Vec<i32> = started.into_iter().map(|(_, item)| item).collect();
        assert_eq!(items, [3]);
        assert_eq!((admission.running(), admission.waiting()), (3, 1));
    }

    #[test]
    fn a_busy_channel_waits_and_the_operator_is_bound_only_by_budget_and_channel() {
        let mut admission = Admission::new(limits(5, 1, 3));
        let mut slots = Vec::new();
        for n in 0..3 {
            slots.push(run(admission.offer(&operator("x"), n)).0);
        }
        assert_eq!(queued(admission.offer(&operator("x"), 3)), Limit::Channel);
        // Another room of the operator's is not held up behind the busy one.
        let (_y, _) = run(admission.offer(&operator("y"), 4));
        let (_z, _) = run(admission.offer(&who("someone", "z"), 5));
        assert_eq!(queued(admission.offer(&who("other", "w"), 6)), Limit::Bot);
        // The bot is full: the first slot back goes to the lane that has waited longest.
        let started = admission.finish(slots.remove(0));
        assert_eq!(started.into_iter().map(|(_, i)| i).collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn waiting_lanes_are_served_round_robin() {
        let mut admission = Admission::new(AdmissionLimits {
            queue: 100,
            queue_per_user: 100,
            ..limits(1, 1, 1)
        });
        let (mut slot, _) = run(admission.offer(&who("busy", "c"), 0));
        for n in 1..=3 {
            queued(admission.offer(&who("busy", "c"), n));
        }
        queued(admission.offer(&who("quiet", "d"), 10));
        let mut order = Vec::new();
        while admission.waiting() > 0 || admission.running() > 0 {
            let mut started = admission.finish(slot);
            let Some((next, item)) = started.pop() else {
                break;
            };
            assert!(started.is_empty(), "one place frees one start");
            order.push(item);
            slot = next;
        }
        assert_eq!(order, [1, 10, 2, 3]);
    }

    #[test]
    fn a_full_queue_refuses_and_a_users_share_of_it_is_bounded() {
        let mut admission = Admission::new(limits(1, 1, 1));
        let (_slot, _) = run(admission.offer(&who("a", "c"), 0));
        for n in 1..=4 {
            queued(admission.offer(&who("a", "c"), n));
        }
        match admission.offer(&who("a", "c"), 5) {
            Offer::Refused(5, Refusal::UserQueueFull(4)) => {}
            other => panic!("{other:?}"),
        }
        for n in 6..=9 {
            queued(admission.offer(&who("b", "d"), n));
        }
        match admission.offer(&who("c", "e"), 10) {
            Offer::Refused(10, refusal @ Refusal::QueueFull(8)) => {
                assert!(
                    refusal
                        .to_string()
                        .contains("8 requests are already waiting")
                );
            }
            other => panic!("{other:?}"),
        }
        let drained = admission.drain_waiting();
        assert_eq!(drained, [1, 2, 3, 4, 6, 7, 8, 9]);
        assert_eq!(admission.waiting(), 0);
    }

    #[test]
    fn requesters_are_told_apart_by_adapter_connection_and_id() {
        use yetibot_chat_adapters::{Author, EventKind, Place};
        let event = |adapter, connection: &str, user: &str| Event {
            place: Place {
                adapter,
                connection: connection.into(),
                room: "general".into(),
                room_name: None,
                thread: Some("t".into()),
            },
            author: Author {
                id: user.into(),
                name: "same name".into(),
                is_bot: false,
            },
            message_id: "m".into(),
            revision: 0,
            attachments: Vec::new(),
            kind: EventKind::Message {
                text: "!echo".into(),
            },
        };
        let a = Requester::of(&event(AdapterKind::Discord, "one", "u"));
        let b = Requester::of(&event(AdapterKind::Discord, "two", "u"));
        let c = Requester::of(&event(AdapterKind::Slack, "one", "u"));
        assert!(a.user != b.user && a.user != c.user && b.user != c.user);
        assert!(a.per_user_limit);
        assert!(!Requester::of(&event(AdapterKind::Web, "local", "local")).per_user_limit);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Offer { user: u8, channel: u8 },
        Finish(usize),
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        prop::collection::vec(
            prop_oneof![
                (0u8..4, 0u8..3).prop_map(|(user, channel)| Step::Offer { user, channel }),
                (0usize..64).prop_map(Step::Finish),
            ],
            0..200,
        )
    }

    proptest! {
        /// Whatever arrives and finishes in whatever order: no limit is ever exceeded,
        /// nothing is lost or started twice, and nothing waits that could run.
        #[test]
        fn limits_hold_and_nothing_is_lost(steps in steps(), in_flight in 1usize..6,
                                           per_user in 1usize..4, per_channel in 1usize..4) {
            let limits = AdmissionLimits { in_flight, per_user, per_channel, queue: 10,
                                           queue_per_user: 5 };
            let mut admission = Admission::new(limits);
            let mut running: Vec<(Slot, usize, u8, u8)> = Vec::new();
            let mut who_of = HashMap::new();
            let mut refused = 0usize;
            let mut started = std::collections::HashSet::new();
            let mut next = 0usize;
            for step in steps {
                match step {
                    Step::Offer { user, channel } => {
                        let id = next;
                        next += 1;
                        who_of.insert(id, (user, channel));
                        let requester = who(&user.to_string(), &channel.to_string());
                        match admission.offer(&requester, id) {
                            Offer::Run(slot, id) => {
                                prop_assert!(started.insert(id));
                                running.push((slot, id, user, channel));
                            }
                            Offer::Queued { .. } => {}
                            Offer::Refused(..) => refused += 1,
                        }
                    }
                    Step::Finish(k) if !running.is_empty() => {
                        let (slot, ..) = running.swap_remove(k % running.len());
                        for (slot, id) in admission.finish(slot) {
                            prop_assert!(started.insert(id));
                            let (user, channel) = who_of[&id];
                            running.push((slot, id, user, channel));
                        }
                    }
                    Step::Finish(_) => {}
                }
                prop_assert!(running.len() <= in_flight);
                prop_assert_eq!(admission.running(), running.len());
                for u in 0..4u8 {
                    prop_assert!(running.iter().filter(|r| r.2 == u).count() <= per_user);
                }
                for c in 0..3u8 {
                    prop_assert!(running.iter().filter(|r| r.3 == c).count() <= per_channel);
                }
                prop_assert!(admission.waiting() <= 10);
                prop_assert_eq!(started.len() + admission.waiting() + refused, next);
                // Nothing waits that could run: the head of every lane is blocked.
                for lane in &admission.turns {
                    let head = admission.lanes[lane].front().map(|w| w.per_user_limit);
                    prop_assert!(head.is_some_and(|p| admission.blocking(lane, p).is_some()));
                }
            }
        }
    }
}
