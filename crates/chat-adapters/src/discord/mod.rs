//! The Discord adapter: twilight's gateway for events, our own bounded REST lanes for
//! everything the bot sends, and Components V2 cards for answers.
//!
//! [`Discord::start`] checks the token (`GET /users/@me`), asks for the recommended shard
//! count (`GET /gateway/bot`) unless [`DiscordOptions::shards`] pins a range, and prepares
//! one twilight shard each; [`Running::run`] reads them all until it is stopped, a shard
//! closes with a code that reconnecting cannot fix (4004, 4010–4014), or Discord refuses the
//! token on REST (401). twilight heartbeats, reconnects and resumes on its own (to the
//! session's `resume_gateway_url`); the events a resume replays are recognised and dropped.
//!
//! Scaling past one process: give each process its own [`DiscordOptions::shards`] range
//! (with the same total), point [`DiscordOptions::http_proxy`] at one twilight-http-proxy
//! compatible proxy so that every process shares one rate limiter, and
//! [`DiscordOptions::gateway_url`] at a gateway proxy where one is used. The processes share
//! one PostgreSQL history store. The same two settings point the adapter's tests at a fake
//! Discord on 127.0.0.1.
//!
//! Sending is split into two lanes with their own connections: the answer lane (answers,
//! notices, reactions, threads, history, acknowledgements) and the ancillary lane (status
//! cards and typing), so live progress can never delay or replace an answer. While a status
//! card is up (an `ai` or `grok` request), the channel shows the typing indicator, renewed
//! every [`DiscordBounds::typing_interval`].
//!
//! ```no_run
//! use yetibot_chat_adapters::discord::{Discord, DiscordBounds, DiscordOptions};
//! use yetibot_chat_adapters::intake;
//! use yetibot_redaction::Secret;
//!
//! # async fn run() -> Result<(), yetibot_chat_adapters::discord::Error> {
//! let (intake, _events) = intake(256);
//! let running = Discord::start(
//!     DiscordOptions {
//!         token: Secret::new("the bot token"),
//!         connection: "discord".into(),  // the history adapter key
//!         http_proxy: None,              // or Some("127.0.0.1:3000") for twilight-http-proxy
//!         gateway_url: None,             // or Some("ws://gateway-proxy:7878")
//!         shards: None,                  // or Some(ShardRange { first, last, total })
//!         bounds: DiscordBounds::default(),
//!     },
//!     intake,
//! )
//! .await?;
//! // Hand the events to the conductor (one task per event), then:
//! running.run(async { /* resolves on shutdown */ }).await
//! # }
//! ```

mod gateway;
mod history;
mod outbox;
mod recent;
mod render;
mod rest;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use twilight_gateway::queue::InMemoryQueue;
use twilight_gateway::{ConfigBuilder, Intents, Shard, ShardId};
use twilight_http::routing::Route;
use yetibot_redaction::Secret;

use crate::outbox::{Intake, Outbox};

pub use render::ACCENT;

/// The `User-Agent` of every REST request, in the form Discord asks bots to use.
const USER_AGENT: &str = concat!(
    "DiscordBot (https://github.com/yetibot/yetibot-rs, ",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// The gateway intents the bot needs: server and direct messages with their content (the
/// privileged MESSAGE_CONTENT intent, without which commands arrive empty), their reactions,
/// and the guilds for the threads they hold.
pub const INTENTS: Intents = Intents::GUILDS
    .union(Intents::GUILD_MESSAGES)
    .union(Intents::GUILD_MESSAGE_REACTIONS)
    .union(Intents::DIRECT_MESSAGES)
    .union(Intents::DIRECT_MESSAGE_REACTIONS)
    .union(Intents::MESSAGE_CONTENT);

/// The most shards one process runs; a bot that needs more splits them over processes
/// with [`DiscordOptions::shards`].
pub const MAX_SHARDS: usize = 256;

/// The most typing indicators sent at once (one per channel at most); typing is best effort.
const MAX_TYPING_CALLS: usize = 32;

/// A pinned range of shards, for splitting one bot over several processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardRange {
    /// The first shard this process runs.
    pub first: u32,
    /// The last shard this process runs (inclusive).
    pub last: u32,
    /// The number of shards of the whole bot, the same in every process.
    pub total: u32,
}

/// How the adapter paces and bounds itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscordBounds {
    /// How long one REST request may take.
    pub request_timeout: Duration,
    /// How many times one request is retried after a 429 before it fails.
    pub max_rate_limit_retries: u8,
    /// The longest wait a 429 may ask for; longer ones fail the request at once.
    pub max_retry_after: Duration,
    /// The wait after a 429 that names none (or an unparsable one).
    pub default_retry_after: Duration,
    /// How long every request pauses after a storm of 429s (three within ten seconds).
    pub backoff: Duration,
    /// The most 401, 403 and 429 answers in ten minutes before the adapter stops sending
    /// until the window moves on (Discord's own limit is 10,000).
    pub max_invalid_requests: usize,
    /// The longest message text read, in UTF-8 bytes; longer messages are ignored.
    pub max_message_bytes: usize,
    /// How often the typing indicator is renewed while a status card is up (read as 10 ms
    /// when set lower).
    pub typing_interval: Duration,
    /// The longest a channel shows typing for one request, should its card never be removed.
    pub max_typing: Duration,
    /// Messages per page of thread history (at most 100).
    pub history_page: u16,
    /// How many recent events are remembered to recognise replays.
    pub replay_memory: usize,
}

impl Default for DiscordBounds {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            max_rate_limit_retries: 2,
            max_retry_after: Duration::from_secs(30),
            default_retry_after: Duration::from_secs(5),
            backoff: Duration::from_secs(30),
            max_invalid_requests: 1_000,
            max_message_bytes: 16 * 1024,
            typing_interval: Duration::from_secs(8),
            max_typing: Duration::from_secs(15 * 60),
            history_page: 100,
            replay_memory: 16_384,
        }
    }
}

/// How to connect to Discord.
#[derive(Debug, Clone)]
pub struct DiscordOptions {
    /// The bot token (without the `Bot ` prefix).
    pub token: Secret,
    /// The connection name in every [`crate::Place`]; history stores it as the adapter key.
    pub connection: String,
    /// A twilight-http-proxy compatible proxy (`host:port`), reached over plain HTTP, which
    /// then holds the one rate limiter for every process that uses it.
    pub http_proxy: Option<String>,
    /// The gateway URL (`wss://…` or `ws://…`), for a gateway proxy.
    pub gateway_url: Option<String>,
    /// The shards this process runs; `None` runs all of Discord's recommended count.
    pub shards: Option<ShardRange>,
    /// Bounds.
    pub bounds: DiscordBounds,
}

/// Why the adapter could not start or stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An option is invalid; the text names it and never quotes a value.
    #[error("invalid Discord option: {0}")]
    Invalid(&'static str),
    /// Discord refused the token (401 on REST).
    #[error("Discord refused the bot token (401): check the token in the configuration")]
    Unauthorized,
    /// A shard closed with a code that reconnecting cannot fix.
    #[error("the Discord gateway closed with code {code}: {reason}")]
    Closed {
        /// The close code.
        code: u16,
        /// What it means.
        reason: &'static str,
    },
    /// A start-up request failed; the text is fixed.
    #[error("Discord could not be reached: {0}")]
    Unreachable(&'static str),
    /// A shard's stream ended without a close code.
    #[error("a Discord gateway connection ended")]
    GatewayEnded,
    /// No TLS configuration could be built.
    #[error("no TLS configuration for Discord could be built")]
    Tls,
}

impl Error {
    /// Whether the adapter stopped for good (a refused token or a fatal close code) rather
    /// than for a reason a restart might fix.
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Self::Unauthorized | Self::Closed { .. } | Self::Invalid(_)
        )
    }
}

/// The entry point.
#[derive(Debug)]
pub struct Discord;

/// A started adapter: its shards, ready to [`run`](Running::run).
#[derive(Debug)]
pub struct Running {
    shards: Vec<Shard>,
    dispatcher: Arc<gateway::Dispatcher>,
    typing: mpsc::Receiver<outbox::Typing>,
}

#[derive(Deserialize)]
struct Me {
    id: String,
}

#[derive(Deserialize)]
struct GatewayBot {
    shards: u32,
    session_start_limit: StartLimit,
}

#[derive(Deserialize)]
struct StartLimit {
    max_concurrency: u16,
    remaining: u32,
    reset_after: u64,
    total: u32,
}

impl Discord {
    /// Checks the token, learns the bot's own ID and the shard count, and prepares the
    /// shards. Events go to `intake`.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for a bad option, [`Error::Unauthorized`] when Discord refuses the
    /// token, [`Error::Unreachable`] when it cannot be asked.
    pub async fn start(options: DiscordOptions, intake: Intake) -> Result<Running, Error> {
        validate(&options)?;
        let bounds = options.bounds;
        let token = Arc::new(options.token);
        let limiter = Arc::new(rest::Limiter::default());
        let proxy = options.http_proxy.as_deref();
        let answers = rest::Rest::new(Arc::clone(&token), proxy, bounds, Arc::clone(&limiter))?;
        let ancillary = rest::Rest::new(Arc::clone(&token), proxy, bounds, limiter)?;
        let me: Me = get(&answers, &Route::GetCurrentUser).await?;
        let bot_id = me
            .id
            .parse::<u64>()
            .ok()
            .filter(|id| *id > 0)
            .ok_or(Error::Unreachable(
                "Discord's answer about the bot was malformed",
            ))?;
        let (numbers, total, limit) = match options.shards {
            Some(range) => (range.first..=range.last, range.total, None),
            None => {
                let info: GatewayBot = get(&answers, &Route::GetGatewayBot).await?;
                let total = info.shards.clamp(1, 65_535);
                (0..=total - 1, total, Some(info.session_start_limit))
            }
        };
        let count = usize::try_from(numbers.end() - numbers.start()).unwrap_or(usize::MAX);
        if count >= MAX_SHARDS {
            return Err(Error::Invalid(
                "shards: more than 256 shards for one process; pin a range per process",
            ));
        }
        let queue = match limit {
            Some(limit) => InMemoryQueue::new(
                limit.max_concurrency.max(1),
                limit.remaining.min(limit.total),
                Duration::from_millis(limit.reset_after),
                limit.total,
            ),
            None => InMemoryQueue::default(),
        };
        let mut config = ConfigBuilder::new(token.expose().to_owned(), INTENTS).queue(queue);
        if let Some(url) = &options.gateway_url {
            config = config.proxy_url(url.trim_end_matches('/').to_owned());
        }
        let config = config.build();
        let shards = numbers
            .map(|number| Shard::with_config(ShardId::new(number, total), config.clone()))
            .collect();
        let (typing_tx, typing) = mpsc::channel(256);
        let shared = Arc::new(outbox::Shared::new(
            answers,
            ancillary,
            bot_id,
            options.connection,
            bounds,
            typing_tx,
        ));
        let dispatcher = Arc::new(gateway::Dispatcher {
            outbox: Arc::new(outbox::DiscordOutbox(Arc::clone(&shared))),
            shared,
            intake,
            seen: std::sync::Mutex::new(gateway::Seen::new(bounds.replay_memory)),
        });
        Ok(Running {
            shards,
            dispatcher,
            typing,
        })
    }
}

impl Running {
    /// Where the bot's answers to Discord events go (the outbox every event carries).
    #[must_use]
    pub fn outbox(&self) -> Arc<dyn Outbox> {
        Arc::clone(&self.dispatcher.outbox) as Arc<dyn Outbox>
    }

    /// The shards this process runs, as `(number, total)`.
    #[must_use]
    pub fn shards(&self) -> Vec<(u32, u32)> {
        self.shards
            .iter()
            .map(|shard| (shard.id().number(), shard.id().total()))
            .collect()
    }

    /// The bot's own user ID.
    #[must_use]
    pub fn bot_id(&self) -> u64 {
        self.dispatcher.shared.bot_id
    }

    /// Reads every shard until `stop` completes (then closes them normally), a shard closes
    /// with a fatal code, or Discord refuses the token. Every shard's task and the typing
    /// indicator run on tasks this future owns: none outlives it.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] for a fatal close code, [`Error::Unauthorized`] for a refused token.
    pub async fn run(self, stop: impl Future<Output = ()>) -> Result<(), Error> {
        let Self {
            shards,
            dispatcher,
            mut typing,
        } = self;
        let (stopping_tx, stopping) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for shard in shards {
            tasks.spawn(gateway::drive(
                shard,
                Arc::clone(&dispatcher),
                stopping.clone(),
            ));
        }
        let shared = Arc::clone(&dispatcher.shared);
        let refused = shared.answers.limiter().clone();
        let mut typists: HashMap<u64, (usize, tokio::time::Instant)> = HashMap::new();
        // Typing is sent on tasks of its own, at most one per channel and MAX_TYPING_CALLS
        // in all, so a slow or rate-limited ancillary lane never holds up this loop (stop,
        // a refused token, a finished shard, the next Stop) and never piles up: a ping
        // that finds its channel's previous one still in flight is skipped.
        let mut pings: JoinSet<u64> = JoinSet::new();
        let mut pinging: HashSet<u64> = HashSet::new();
        let ping = |channel: u64, pings: &mut JoinSet<u64>, pinging: &mut HashSet<u64>| {
            if pinging.len() < MAX_TYPING_CALLS && pinging.insert(channel) {
                let shared = Arc::clone(&shared);
                pings.spawn(async move {
                    shared.trigger_typing(channel).await;
                    channel
                });
            }
        };
        let mut tick =
            tokio::time::interval(shared.bounds.typing_interval.max(Duration::from_millis(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(stop);
        let outcome = loop {
            tokio::select! {
                () = &mut stop => break Ok(()),
                () = refused.refused.notified() => break Err(Error::Unauthorized),
                joined = tasks.join_next() => match joined {
                    Some(Ok(Ok(()))) => {}
                    Some(Ok(Err(error))) => break Err(error),
                    // A shard whose task panicked reads nothing more: stop rather than run
                    // with part of the bot deaf.
                    Some(Err(_)) | None => break Err(Error::GatewayEnded),
                },
                Some(done) = pings.join_next(), if !pings.is_empty() => {
                    if let Ok(channel) = done {
                        pinging.remove(&channel);
                    }
                }
                Some(change) = typing.recv() => match change {
                    outbox::Typing::Start(channel) => {
                        let entry = typists.entry(channel).or_insert((0, tokio::time::Instant::now()));
                        entry.0 += 1;
                        entry.1 = tokio::time::Instant::now();
                        ping(channel, &mut pings, &mut pinging);
                    }
                    outbox::Typing::Stop(channel) => {
                        if let Some(entry) = typists.get_mut(&channel) {
                            entry.0 = entry.0.saturating_sub(1);
                            if entry.0 == 0 {
                                typists.remove(&channel);
                            }
                        }
                    }
                },
                _ = tick.tick(), if !typists.is_empty() => {
                    let now = tokio::time::Instant::now();
                    typists.retain(|_, (_, since)| now.duration_since(*since) < shared.bounds.max_typing);
                    let channels: Vec<u64> = typists.keys().copied().collect();
                    for channel in channels {
                        ping(channel, &mut pings, &mut pinging);
                    }
                }
            }
        };
        // Typing is best effort: whatever is still in flight is dropped.
        pings.abort_all();
        while pings.join_next().await.is_some() {}
        let outcome = match outcome {
            Ok(()) if refused.is_unauthorized() => Err(Error::Unauthorized),
            other => other,
        };
        stopping_tx.send_replace(true);
        let drain = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(5), drain)
            .await
            .is_err()
        {
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
        outcome
    }
}

fn validate(options: &DiscordOptions) -> Result<(), Error> {
    let token = options.token.expose();
    if token.is_empty() || token.starts_with("Bot ") || !token.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(Error::Invalid(
            "token: must be the bot token itself, printable ASCII without the Bot prefix",
        ));
    }
    if options.connection.trim().is_empty() {
        return Err(Error::Invalid("connection: must not be blank"));
    }
    if let Some(proxy) = &options.http_proxy {
        let ok = !proxy.is_empty()
            && !proxy.contains("://")
            && !proxy.contains('/')
            && proxy.bytes().all(|b| b.is_ascii_graphic());
        if !ok {
            return Err(Error::Invalid(
                "http-proxy: must be host:port, without a scheme",
            ));
        }
    }
    if let Some(url) = &options.gateway_url {
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("wss://") || lower.starts_with("ws://"))
            || url.contains('?')
            || url.chars().any(char::is_whitespace)
        {
            return Err(Error::Invalid(
                "gateway-url: must be a ws:// or wss:// URL without a query",
            ));
        }
    }
    if let Some(range) = options.shards
        && !(range.first <= range.last && range.last < range.total)
    {
        return Err(Error::Invalid("shards: needs first <= last < total"));
    }
    if options.bounds.history_page == 0 || options.bounds.history_page > 100 {
        return Err(Error::Invalid("history page: must be 1 to 100"));
    }
    Ok(())
}

async fn get<T: serde::de::DeserializeOwned>(
    lane: &rest::Rest,
    route: &Route<'_>,
) -> Result<T, Error> {
    let reply = lane
        .send(route, &rest::Body::None)
        .await
        .map_err(|failure| match failure {
            rest::Failure::Unauthorized => Error::Unauthorized,
            rest::Failure::RateLimited => Error::Unreachable("rate limited"),
            rest::Failure::Timeout => Error::Unreachable("no answer in time"),
            rest::Failure::Transport => Error::Unreachable("the connection failed"),
            rest::Failure::Status(_) => Error::Unreachable("an error status"),
        })?;
    serde_json::from_slice(&reply.body).map_err(|_| Error::Unreachable("a malformed answer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> DiscordOptions {
        DiscordOptions {
            token: Secret::new("abc.def"),
            connection: "main".into(),
            http_proxy: None,
            gateway_url: None,
            shards: None,
            bounds: DiscordBounds::default(),
        }
    }

    #[test]
    fn options_are_checked_without_quoting_them() {
        assert_eq!(validate(&options()), Ok(()));
        let check = |change: fn(&mut DiscordOptions)| {
            let mut o = options();
            change(&mut o);
            validate(&o).map_err(|e| e.to_string())
        };
        assert!(check(|o| o.token = Secret::new("Bot abc")).is_err());
        assert!(check(|o| o.token = Secret::new("a b")).is_err());
        assert!(check(|o| o.connection = " ".into()).is_err());
        assert!(check(|o| o.http_proxy = Some("http://x:1".into())).is_err());
        assert_eq!(
            check(|o| o.http_proxy = Some("127.0.0.1:3000".into())),
            Ok(())
        );
        assert!(check(|o| o.gateway_url = Some("https://x".into())).is_err());
        assert_eq!(
            check(|o| o.gateway_url = Some("ws://127.0.0.1:1".into())),
            Ok(())
        );
        assert!(
            check(|o| o.shards = Some(ShardRange {
                first: 2,
                last: 1,
                total: 4
            }))
            .is_err()
        );
        assert!(
            check(|o| o.shards = Some(ShardRange {
                first: 0,
                last: 4,
                total: 4
            }))
            .is_err()
        );
        let error = check(|o| o.token = Secret::new("Bot secret-value")).unwrap_err();
        assert!(!error.contains("secret-value"));
    }

    #[test]
    fn the_intents_include_message_content() {
        assert!(INTENTS.contains(Intents::MESSAGE_CONTENT));
        assert!(INTENTS.contains(Intents::GUILD_MESSAGES | Intents::GUILD_MESSAGE_REACTIONS));
    }
}
