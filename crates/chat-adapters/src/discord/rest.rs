//! The adapter's own REST lane to Discord: twilight-http names the routes and builds
//! multipart bodies, and this module sends them, so that every retry is ours to bound.
//!
//! twilight-http's client retries a 429 by itself without a cap: with its rate limiter it
//! waits only as the headers say (and not at all when they are missing, unparsable or
//! global), and without one it resends at once, so a misbehaving peer could make the bot
//! hammer it (`tests/it/discord` measures this against the fake). Here a 429 is retried at
//! most [`DiscordBounds::max_rate_limit_retries`] times, each after the longest wait the
//! response names (`retry_after` in the body, `Retry-After` or `X-RateLimit-Reset-After`,
//! fractions allowed) or a default when it names none, and never when that wait is longer
//! than [`DiscordBounds::max_retry_after`]; then the caller gets a failure to report. A
//! global 429, or several 429s close together, pause every request of the adapter (both
//! lanes) for a shared back-off, and a bucket whose `X-RateLimit-Remaining` reached zero is
//! paced until its reset. Discord bans a bot for a while after 10,000 invalid requests (401,
//! 403, 429) in ten minutes; the adapter stops sending at a tenth of that
//! ([`DiscordBounds::max_invalid_requests`]) until the window moves on. Nothing else is ever
//! resent here: a 5xx or a timeout is the
//! caller's to judge (a message create is resent only with its nonce enforced). A 401 marks
//! the token invalid, fails every later request at once and stops the adapter.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Notify;
use tokio::time::Instant;
use twilight_http::request::Form;
use twilight_http::routing::Route;
use yetibot_redaction::Secret;

use super::DiscordBounds;

/// The most bytes of one response body read.
const MAX_RESPONSE_BYTES: usize = 8 << 20;
/// How many 429s within [`STORM_WINDOW`] start the shared back-off.
const STORM_COUNT: usize = 3;
/// The window in which repeated 429s count as one storm.
const STORM_WINDOW: Duration = Duration::from_secs(10);
/// The window over which Discord counts invalid requests (401, 403 and 429 answers).
const INVALID_WINDOW: Duration = Duration::from_secs(600);

/// A request body.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    None,
    Json(Vec<u8>),
    Form(Form),
}

/// How a request failed. Never carries a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// A status other than success, 401 and 429.
    Status(u16),
    /// Still rate limited after the retries we allow, or told to wait longer than we would.
    RateLimited,
    /// No answer within the request timeout: the request may have taken effect.
    Timeout,
    /// The connection failed: the request may have taken effect.
    Transport,
    /// The token was refused (now or earlier).
    Unauthorized,
}

impl Failure {
    /// Whether the request may have taken effect although it was not confirmed.
    pub(crate) fn is_uncertain(self) -> bool {
        matches!(self, Self::Timeout | Self::Transport)
            || matches!(self, Self::Status(s) if s >= 500)
    }
}

/// What every lane of one adapter shares: the token's state and the rate-limit pauses.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    state: Mutex<LimiterState>,
    unauthorized: AtomicBool,
    /// Woken when the token is refused, so the adapter stops.
    pub(crate) refused: Notify,
}

#[derive(Debug, Default)]
struct LimiterState {
    /// Every request waits until then (a global 429 or a storm of them).
    paused_until: Option<Instant>,
    /// Recent 429s, for the storm rule.
    recent: Vec<Instant>,
    /// Buckets (by route) exhausted until their reset.
    buckets: HashMap<String, Instant>,
    /// When the invalid requests of the current window were answered (at most the bound).
    invalid: std::collections::VecDeque<Instant>,
}

impl Limiter {
    /// Whether the token was refused.
    pub(crate) fn is_unauthorized(&self) -> bool {
        self.unauthorized.load(Ordering::SeqCst)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LimiterState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When a request on `bucket` may go, if it must wait.
    fn ready_at(&self, bucket: &str) -> Option<Instant> {
        let now = Instant::now();
        let mut state = self.state();
        state.buckets.retain(|_, reset| *reset > now);
        let pause = state.paused_until.filter(|until| *until > now);
        let bucket = state.buckets.get(bucket).copied();
        pause.max(bucket)
    }

    /// Records a 429 that asked for `wait`; returns whether the adapter is now paused.
    fn limited(&self, global: bool, wait: Duration, backoff: Duration) {
        let now = Instant::now();
        let mut state = self.state();
        state
            .recent
            .retain(|at| now.duration_since(*at) < STORM_WINDOW);
        state.recent.push(now);
        let pause = if state.recent.len() >= STORM_COUNT {
            Some(wait.max(backoff))
        } else if global {
            Some(wait)
        } else {
            None
        };
        if let Some(pause) = pause {
            let until = now + pause;
            state.paused_until = Some(state.paused_until.map_or(until, |old| old.max(until)));
        }
    }

    fn exhausted(&self, bucket: String, reset: Duration) {
        let mut state = self.state();
        if state.buckets.len() < 4_096 {
            state.buckets.insert(bucket, Instant::now() + reset);
        }
    }

    /// Counts a 401, 403 or 429 answer.
    fn invalid(&self, max: usize) {
        let now = Instant::now();
        let mut state = self.state();
        while state
            .invalid
            .front()
            .is_some_and(|at| now.duration_since(*at) >= INVALID_WINDOW)
        {
            state.invalid.pop_front();
        }
        if state.invalid.len() < max {
            state.invalid.push_back(now);
        }
    }

    /// Whether the invalid requests of the last ten minutes reached `max`: then nothing is
    /// sent until the oldest of them ages out of the window.
    fn over_invalid(&self, max: usize) -> bool {
        let now = Instant::now();
        let state = self.state();
        state
            .invalid
            .iter()
            .filter(|at| now.duration_since(**at) < INVALID_WINDOW)
            .count()
            >= max
    }

    fn refuse(&self) {
        if !self.unauthorized.swap(true, Ordering::SeqCst) {
            self.refused.notify_waiters();
            self.refused.notify_one();
        }
    }
}

/// One lane: its own connection pool, so that one lane's slow requests never hold up the
/// other's, and the limiter every lane shares.
#[derive(Debug, Clone)]
pub(crate) struct Rest {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: Arc<str>,
    token: Arc<Secret>,
    bounds: DiscordBounds,
    limiter: Arc<Limiter>,
}

/// A confirmed answer: its status and body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) body: Bytes,
}

impl Rest {
    /// A lane to `https://discord.com`, or over plain HTTP to a twilight-http-proxy
    /// compatible `proxy` (`host:port`).
    pub(crate) fn new(
        token: Arc<Secret>,
        proxy: Option<&str>,
        bounds: DiscordBounds,
        limiter: Arc<Limiter>,
    ) -> Result<Self, super::Error> {
        // Small requests go out at once rather than waiting on Nagle's algorithm.
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|_| super::Error::Tls)?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .retry_canceled_requests(false)
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        let base = match proxy {
            Some(proxy) => format!("http://{proxy}/api/v10/"),
            None => "https://discord.com/api/v10/".to_owned(),
        };
        Ok(Self {
            client,
            base: base.into(),
            token,
            bounds,
            limiter,
        })
    }

    /// The limiter this lane shares.
    pub(crate) fn limiter(&self) -> &Arc<Limiter> {
        &self.limiter
    }

    /// Sends a request on `route`, with the bot's token unless the route is an interaction
    /// callback, retrying only 429s and only within the bounds.
    pub(crate) async fn send(&self, route: &Route<'_>, body: &Body) -> Result<Reply, Failure> {
        let path = route.to_string();
        let bucket = bucket_of(route.method().name(), &path);
        let authorize = !matches!(route, Route::InteractionCallback { .. });
        let mut retries = 0u8;
        loop {
            if self.limiter.is_unauthorized() {
                return Err(Failure::Unauthorized);
            }
            if self.limiter.over_invalid(self.bounds.max_invalid_requests) {
                return Err(Failure::RateLimited);
            }
            if let Some(at) = self.limiter.ready_at(&bucket) {
                if at.saturating_duration_since(Instant::now()) > self.bounds.max_retry_after {
                    return Err(Failure::RateLimited);
                }
                tokio::time::sleep_until(at).await;
            }
            let request = self.request(route, &path, body, authorize)?;
            let response = match tokio::time::timeout(
                self.bounds.request_timeout,
                self.client.request(request),
            )
            .await
            {
                Err(_) => {
                    tracing::warn!(
                        method = route.method().name(),
                        "a Discord request timed out"
                    );
                    return Err(Failure::Timeout);
                }
                Ok(Err(_)) => {
                    tracing::warn!(
                        method = route.method().name(),
                        "a Discord request's connection failed"
                    );
                    return Err(Failure::Transport);
                }
                Ok(Ok(response)) => response,
            };
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            if header(&headers, "x-ratelimit-remaining").as_deref() == Some("0")
                && let Some(reset) = header(&headers, "x-ratelimit-reset-after")
                    .as_deref()
                    .and_then(seconds)
            {
                self.limiter.exhausted(bucket.clone(), reset);
            }
            let read = Limited::new(response.into_body(), MAX_RESPONSE_BYTES).collect();
            let body_bytes = match tokio::time::timeout(self.bounds.request_timeout, read).await {
                Ok(Ok(collected)) => collected.to_bytes(),
                Ok(Err(_)) | Err(_) if (200..300).contains(&status) => {
                    return Err(Failure::Transport);
                }
                _ => Bytes::new(),
            };
            if matches!(status, 401 | 403 | 429) {
                self.limiter.invalid(self.bounds.max_invalid_requests);
            }
            match status {
                200..=299 => return Ok(Reply { body: body_bytes }),
                401 => {
                    if authorize {
                        tracing::error!(
                            "Discord refused the bot token (401); the connection stops sending"
                        );
                        self.limiter.refuse();
                    }
                    return Err(Failure::Unauthorized);
                }
                429 => {
                    let (wait, global) = retry_after(&headers, &body_bytes);
                    let wait = wait.unwrap_or(self.bounds.default_retry_after);
                    tracing::warn!(
                        method = route.method().name(),
                        wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        global,
                        "Discord rate limited a request (429)"
                    );
                    self.limiter.limited(global, wait, self.bounds.backoff);
                    if retries >= self.bounds.max_rate_limit_retries
                        || wait > self.bounds.max_retry_after
                    {
                        return Err(Failure::RateLimited);
                    }
                    retries += 1;
                    tokio::time::sleep(wait).await;
                }
                other => {
                    if other >= 500 {
                        tracing::warn!(
                            method = route.method().name(),
                            status = other,
                            "Discord answered a request with a server error"
                        );
                    }
                    return Err(Failure::Status(other));
                }
            }
        }
    }

    fn request(
        &self,
        route: &Route<'_>,
        path: &str,
        body: &Body,
        authorize: bool,
    ) -> Result<http::Request<Full<Bytes>>, Failure> {
        let mut builder = http::Request::builder()
            .method(route.method().name())
            .uri(format!("{}{path}", self.base))
            .header(http::header::USER_AGENT, super::USER_AGENT);
        if authorize {
            let mut value = http::HeaderValue::from_str(&format!("Bot {}", self.token.expose()))
                .map_err(|_| Failure::Unauthorized)?;
            value.set_sensitive(true);
            builder = builder.header(http::header::AUTHORIZATION, value);
        }
        let body = match body {
            Body::None => Full::default(),
            Body::Json(json) => {
                builder = builder.header(http::header::CONTENT_TYPE, "application/json");
                Full::from(json.clone())
            }
            Body::Form(form) => {
                builder = builder.header(http::header::CONTENT_TYPE, form.content_type());
                Full::from(form.clone().build())
            }
        };
        builder.body(body).map_err(|_| Failure::Transport)
    }
}

/// A rate-limit bucket key: the method and the route's top-level resource (`channels/123`),
/// coarser than Discord's buckets, so pacing errs on the slow side.
fn bucket_of(method: &str, path: &str) -> String {
    let mut parts = path.split(['/', '?']);
    let first = parts.next().unwrap_or_default();
    let second = parts.next().unwrap_or_default();
    format!("{method} {first}/{second}")
}

fn header(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_owned())
}

/// A number of seconds as Discord writes them (`1`, `0.25`), if it is a sane one.
fn seconds(text: &str) -> Option<Duration> {
    let value: f64 = text.trim().parse().ok()?;
    (value.is_finite() && (0.0..1e7).contains(&value)).then(|| Duration::from_secs_f64(value))
}

/// The wait a 429 asks for (the longest that any of its fields names) and whether it is
/// global.
fn retry_after(headers: &http::HeaderMap, body: &[u8]) -> (Option<Duration>, bool) {
    #[derive(serde::Deserialize)]
    struct Limited {
        retry_after: Option<f64>,
        #[serde(default)]
        global: bool,
    }
    let parsed: Option<Limited> = serde_json::from_slice(body).ok();
    let from_body = parsed
        .as_ref()
        .and_then(|p| p.retry_after)
        .and_then(|s| seconds(&s.to_string()));
    let waits = [
        from_body,
        header(headers, "retry-after").as_deref().and_then(seconds),
        header(headers, "x-ratelimit-reset-after")
            .as_deref()
            .and_then(seconds),
    ];
    let global = parsed.is_some_and(|p| p.global)
        || header(headers, "x-ratelimit-global").is_some_and(|g| g.eq_ignore_ascii_case("true"))
        || header(headers, "x-ratelimit-scope").is_some_and(|s| s == "global");
    (waits.into_iter().flatten().max(), global)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn a_429_names_its_wait_in_any_field_and_the_longest_wins() {
        let check = |h: &[(&'static str, &'static str)], body: &str| {
            retry_after(&headers(h), body.as_bytes())
        };
        assert_eq!(
            check(&[("retry-after", "1.5")], ""),
            (Some(Duration::from_millis(1500)), false)
        );
        assert_eq!(
            check(
                &[("retry-after", "1")],
                r#"{"retry_after": 2.25, "global": true}"#
            ),
            (Some(Duration::from_millis(2250)), true)
        );
        assert!(check(&[("x-ratelimit-scope", "global")], "").1);
        assert_eq!(check(&[("retry-after", "soon")], "not json"), (None, false));
        assert_eq!(
            check(&[("retry-after", "-1")], r#"{"retry_after": "NaN"}"#),
            (None, false)
        );
        assert_eq!(check(&[("retry-after", "1e300")], ""), (None, false));
    }

    #[test]
    fn buckets_group_a_resource_and_method() {
        assert_eq!(bucket_of("POST", "channels/1/messages"), "POST channels/1");
        assert_eq!(
            bucket_of("GET", "channels/1/messages?limit=100"),
            "GET channels/1"
        );
        assert_eq!(bucket_of("GET", "gateway/bot"), "GET gateway/bot");
    }

    #[test]
    fn uncertain_failures_are_the_ones_that_may_have_taken_effect() {
        assert!(Failure::Timeout.is_uncertain());
        assert!(Failure::Status(502).is_uncertain());
        assert!(!Failure::Status(403).is_uncertain());
        assert!(!Failure::RateLimited.is_uncertain());
    }
}
