//! The Discord adapter against a fake Discord on 127.0.0.1 (`discord-fixture`): events from
//! the gateway with their identity, replays after a resume, bad payloads, close codes, the
//! REST lanes with their 429, 5xx and 401 rules, Components V2 payloads, reactions, threads
//! and complete thread history. Synchronisation is always on a real event from the fake.

use std::sync::Arc;
use std::time::Duration;

use discord_fixture::{BOT_ID, FakeDiscord, Fault, Start, TOKEN, payload};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use yetibot_chat_adapters::discord::{Discord, DiscordBounds, DiscordOptions, Error, ShardRange};
use yetibot_chat_adapters::{
    Action, AdapterKind, Answer, Button, EventKind, Events, HistoryError, HistoryLimits, Incoming,
    Limits, Outbox, Outgoing, Place, ReactionEmoji, Role, SendError, StatusCard, fit, intake,
};
use yetibot_redaction::Secret;

const HUMAN: u64 = 42;
const CHANNEL: u64 = 10;

struct Bot {
    fake: FakeDiscord,
    events: Events,
    outbox: Arc<dyn Outbox>,
    stop: Option<oneshot::Sender<()>>,
    run: JoinHandle<Result<(), Error>>,
}

fn bounds() -> DiscordBounds {
    DiscordBounds {
        default_retry_after: Duration::from_millis(100),
        backoff: Duration::from_millis(300),
        typing_interval: Duration::from_millis(50),
        ..DiscordBounds::default()
    }
}

fn options(fake: &FakeDiscord, bounds: DiscordBounds) -> DiscordOptions {
    DiscordOptions {
        token: Secret::new(TOKEN),
        connection: "main".into(),
        http_proxy: Some(fake.http_proxy()),
        gateway_url: Some(fake.gateway.url()),
        shards: None,
        bounds,
    }
}

impl Bot {
    async fn start() -> Self {
        Self::with(bounds(), 64, |_| {}).await
    }

    async fn with(
        bounds: DiscordBounds,
        queue: usize,
        change: impl FnOnce(&mut DiscordOptions),
    ) -> Self {
        let fake = FakeDiscord::start().await;
        let (intake, events) = intake(queue);
        let mut options = options(&fake, bounds);
        change(&mut options);
        let running = Discord::start(options, intake)
            .await
            .expect("the adapter starts");
        assert_eq!(running.bot_id(), BOT_ID);
        assert!(
            !format!("{running:?}").contains(TOKEN),
            "the token never shows"
        );
        let outbox = running.outbox();
        let (stop, stopped) = oneshot::channel::<()>();
        let run = tokio::spawn(running.run(async move {
            let _ = stopped.await;
        }));
        fake.until("the shard identifies", |f| !f.gateway.starts().is_empty())
            .await;
        Self {
            fake,
            events,
            outbox,
            stop: Some(stop),
            run,
        }
    }

    async fn next(&mut self) -> Incoming {
        tokio::time::timeout(Duration::from_secs(10), self.events.next())
            .await
            .expect("an event in time")
            .expect("an event")
    }

    /// Sends a human's message and returns its ID.
    fn say(&self, channel: u64, text: &str) -> u64 {
        let id = self.fake.next_id();
        let author = payload::user(HUMAN, "alice", false);
        self.fake.gateway.dispatch(
            "MESSAGE_CREATE",
            &payload::message(id, channel, &author, text),
        );
        id
    }

    async fn stop(mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(10), self.run)
            .await
            .expect("the adapter stops")
            .expect("no panic")
    }

    async fn ended(self) -> Result<(), Error> {
        tokio::time::timeout(Duration::from_secs(10), self.run)
            .await
            .expect("the adapter stops by itself")
            .expect("no panic")
    }
}

fn place(channel: u64) -> Place {
    Place {
        adapter: AdapterKind::Discord,
        connection: "main".into(),
        room: channel.to_string(),
        room_name: None,
        thread: None,
    }
}

fn text_of(event: &Incoming) -> &str {
    match &event.event.kind {
        EventKind::Message { text } | EventKind::Edited { text } => text,
        other => panic!("not a message: {other:?}"),
    }
}

#[tokio::test]
async fn a_message_becomes_an_event_with_the_authors_identity_and_its_thread() {
    let mut bot = Bot::start().await;
    let id = bot.say(CHANNEL, "!echo hi");
    let event = bot.next().await;
    assert_eq!(text_of(&event), "!echo hi");
    assert_eq!(event.event.place, place(CHANNEL));
    assert_eq!(event.event.author.id, HUMAN.to_string());
    assert_eq!(event.event.author.name, "alice");
    assert!(!event.event.author.is_bot);
    assert_eq!(event.event.message_id, id.to_string());
    assert_eq!(event.event.revision, 0);
    // A message in a known thread names the parent as its room and the thread.
    bot.fake
        .gateway
        .dispatch("THREAD_CREATE", &payload::thread(30, CHANNEL));
    bot.say(30, "in the thread");
    let event = bot.next().await;
    assert_eq!(event.event.place.room, CHANNEL.to_string());
    assert_eq!(event.event.place.thread.as_deref(), Some("30"));
    assert_eq!(bot.stop().await, Ok(()));
}

#[tokio::test]
async fn a_messages_attachments_come_with_its_event_bounded() {
    let mut bot = Bot::start().await;
    let author = payload::user(HUMAN, "alice", false);
    let mut message = payload::message(bot.fake.next_id(), CHANNEL, &author, "!clairic count cats");
    let attachment = |n: u64, name: &str, media: Option<&str>| {
        serde_json::json!({"id": n.to_string(), "filename": name, "size": 2048,
            "url": format!("https://cdn.discordapp.com/attachments/1/{n}/{name}"),
            "proxy_url": format!("https://media.discordapp.net/attachments/1/{n}/{name}"),
            "content_type": media})
    };
    let mut files = vec![
        attachment(1, "cats.png", Some("image/png")),
        attachment(2, "notes.txt", Some("text/plain; charset=utf-8")),
    ];
    // Discord allows ten; anything past the bound is not kept.
    files.extend((3..15).map(|n| attachment(n, "x.jpg", None)));
    message["attachments"] = serde_json::Value::Array(files);
    bot.fake.gateway.dispatch("MESSAGE_CREATE", &message);
    let event = bot.next().await;
    let attachments = &event.event.attachments;
    assert_eq!(attachments.len(), yetibot_conversation::MAX_ATTACHMENTS);
    assert_eq!(attachments[0].name, "cats.png");
    assert_eq!(attachments[0].media_type.as_deref(), Some("image/png"));
    assert_eq!(
        attachments[0].url,
        "https://cdn.discordapp.com/attachments/1/1/cats.png"
    );
    assert_eq!(attachments[0].size, Some(2048));
    assert!(attachments[0].is_image() && !attachments[1].is_image() && attachments[2].is_image());
    assert_eq!(bot.stop().await, Ok(()));
}

#[tokio::test]
async fn bot_webhook_system_and_own_messages_trigger_nothing() {
    let mut bot = Bot::start().await;
    let other_bot = payload::user(7, "otherbot", true);
    let me = payload::user(BOT_ID, "yetibot", true);
    let mut system = payload::user(8, "system", false);
    system["system"] = Value::Bool(true);
    for author in [&other_bot, &me, &system] {
        let id = bot.fake.next_id();
        bot.fake.gateway.dispatch(
            "MESSAGE_CREATE",
            &payload::message(id, CHANNEL, author, "!ai spend money"),
        );
    }
    let mut webhook = payload::message(
        bot.fake.next_id(),
        CHANNEL,
        &payload::user(9, "hook", false),
        "!ai x",
    );
    webhook["webhook_id"] = Value::from("55");
    bot.fake.gateway.dispatch("MESSAGE_CREATE", &webhook);
    let mut join = payload::message(
        bot.fake.next_id(),
        CHANNEL,
        &payload::user(HUMAN, "alice", false),
        "!ai x",
    );
    join["type"] = Value::from(7);
    bot.fake.gateway.dispatch("MESSAGE_CREATE", &join);
    bot.say(CHANNEL, "the first that counts");
    // Events arrive in order: the human's message is the first offered.
    assert_eq!(text_of(&bot.next().await), "the first that counts");
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn events_replayed_after_a_resume_are_offered_once() {
    let mut bot = Bot::start().await;
    bot.fake.gateway.replay_on_resume(3);
    let first = bot.say(CHANNEL, "!ai one paid call");
    assert_eq!(bot.next().await.event.message_id, first.to_string());
    bot.fake.gateway.drop_connection();
    bot.fake
        .until("the shard resumes", |f| {
            f.gateway
                .starts()
                .iter()
                .any(|s| matches!(s, Start::Resume(..)))
        })
        .await;
    let starts = bot.fake.gateway.starts();
    assert!(
        matches!(&starts[1], Start::Resume(session, _) if session == "session-1"),
        "{starts:?}"
    );
    let second = bot.say(CHANNEL, "after the resume");
    // The replayed message is not offered again: the next event is the new one.
    assert_eq!(bot.next().await.event.message_id, second.to_string());
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn edits_get_increasing_revisions_and_replayed_edits_are_dropped() {
    let mut bot = Bot::start().await;
    let author = payload::user(HUMAN, "alice", false);
    let id = bot.say(CHANNEL, "!echo a");
    bot.next().await;
    let original = payload::message(id, CHANNEL, &author, "!echo a");
    // Discord adding an embed is an update without an edit time.
    bot.fake.gateway.dispatch("MESSAGE_UPDATE", &original);
    let one = payload::edited(original.clone(), "!echo b", 5);
    bot.fake.gateway.dispatch("MESSAGE_UPDATE", &one);
    bot.fake.gateway.dispatch("MESSAGE_UPDATE", &one);
    bot.fake
        .gateway
        .dispatch("MESSAGE_UPDATE", &payload::edited(original, "!echo c", 9));
    let first = bot.next().await;
    assert_eq!((text_of(&first), first.event.revision), ("!echo b", 1));
    assert!(matches!(first.event.kind, EventKind::Edited { .. }));
    let second = bot.next().await;
    assert_eq!((text_of(&second), second.event.revision), ("!echo c", 2));
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn malformed_unknown_and_oversized_payloads_are_skipped() {
    let mut bot = Bot::start().await;
    let gateway = &bot.fake.gateway;
    gateway.send_raw("{not json");
    gateway.send_raw("[]");
    gateway.send_raw(r#"{"op": 99, "d": null}"#);
    gateway.send_raw(r#"{"op": 0, "t": "SOMETHING_NEW", "s": 2, "d": {"x": 1}}"#);
    gateway.send_raw(r#"{"op": 0, "t": "MESSAGE_CREATE", "s": 3, "d": {"id": [], "content": 5}}"#);
    gateway.send_raw(format!(
        r#"{{"op": 0, "t": "MESSAGE_CREATE", "s": 4, "d": {}}}"#,
        "[".repeat(10_000)
    ));
    let huge = "x".repeat(1 << 20);
    bot.say(CHANNEL, &huge);
    bot.say(CHANNEL, "still here");
    assert_eq!(text_of(&bot.next().await), "still here");
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn close_codes_that_mean_stop_end_the_adapter_with_a_clear_error() {
    for code in [4004u16, 4010, 4011, 4012, 4013, 4014] {
        let bot = Bot::start().await;
        bot.fake.gateway.close(code);
        let error = bot
            .ended()
            .await
            .expect_err("a fatal close stops the adapter");
        assert!(
            matches!(error, Error::Closed { code: c, .. } if c == code),
            "{error}"
        );
        assert!(error.is_fatal());
        assert!(error.to_string().contains(&code.to_string()), "{error}");
    }
    // 4014 says what to do about it.
    let bot = Bot::start().await;
    bot.fake.gateway.close(4014);
    let error = bot.ended().await.expect_err("stops");
    assert!(error.to_string().contains("MESSAGE CONTENT"), "{error}");
}

#[tokio::test]
async fn other_close_codes_reconnect_and_resume() {
    let mut bot = Bot::start().await;
    bot.fake.gateway.close(4000);
    bot.fake
        .until("a resume", |f| f.gateway.starts().len() == 2)
        .await;
    assert!(matches!(bot.fake.gateway.starts()[1], Start::Resume(..)));
    bot.say(CHANNEL, "hello again");
    assert_eq!(text_of(&bot.next().await), "hello again");
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_refused_token_stops_at_start_and_a_401_later_stops_the_adapter() {
    let fake = FakeDiscord::start().await;
    let (intake, _events) = intake(4);
    let mut wrong = options(&fake, bounds());
    wrong.token = Secret::new("wrong.token");
    let error = Discord::start(wrong, intake).await.expect_err("refused");
    assert_eq!(error, Error::Unauthorized);
    assert!(!error.to_string().contains("wrong.token"));

    let bot = Bot::start().await;
    bot.fake.fault(Fault::new("POST", "/messages", 401));
    let answer = Outgoing::text(Role::Answer, "hi");
    assert_eq!(
        bot.outbox.post(&place(CHANNEL), vec![answer.clone()]).await,
        Err(SendError::Stopping)
    );
    // Every later request fails at once, without reaching Discord.
    let before = bot.fake.requests().len();
    assert!(
        bot.outbox
            .post(&place(CHANNEL), vec![answer])
            .await
            .is_err()
    );
    assert_eq!(bot.fake.requests().len(), before);
    assert_eq!(bot.ended().await, Err(Error::Unauthorized));
}

#[tokio::test]
async fn shards_follow_the_recommendation_or_the_pinned_range() {
    let fake = FakeDiscord::start().await;
    fake.recommend_shards(2);
    let (intake, _events) = intake(4);
    let running = Discord::start(options(&fake, bounds()), intake)
        .await
        .expect("starts");
    assert_eq!(running.shards(), [(0, 2), (1, 2)]);
    let (stop, stopped) = oneshot::channel::<()>();
    let run = tokio::spawn(running.run(async move {
        let _ = stopped.await;
    }));
    fake.until("both shards identify", |f| f.gateway.starts().len() == 2)
        .await;
    let mut starts = fake.gateway.starts();
    starts.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(starts, [Start::Identify(0, 2), Start::Identify(1, 2)]);
    let _ = stop.send(());
    run.await.expect("no panic").expect("stops");

    let fake = FakeDiscord::start().await;
    let (queue, _events) = yetibot_chat_adapters::intake(4);
    let mut pinned = options(&fake, bounds());
    pinned.shards = Some(ShardRange {
        first: 1,
        last: 2,
        total: 4,
    });
    let running = Discord::start(pinned, queue).await.expect("starts");
    assert_eq!(running.shards(), [(1, 4), (2, 4)]);
    assert!(fake.requests_to("GET", "gateway/bot").is_empty());
}

fn answer(text: &str) -> Answer {
    Answer {
        files: Vec::new(),
        messages: vec![text.to_owned()],
        caption: Some("m1 · 0.4 s · cost n/a".into()),
        error: false,
        buttons: vec![Button {
            action: Action::RunAgain,
            token: "c1".into(),
        }],
    }
}

fn sent_fields(fake: &FakeDiscord) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method == "POST" || r.method == "PATCH")
        .filter(|r| r.path.contains("/messages"))
        .filter_map(|r| r.fields)
        .collect()
}

#[tokio::test]
async fn answers_are_cyan_v2_cards_with_subtext_captions_and_no_mentions() {
    let bot = Bot::start().await;
    let messages = fit(
        &answer("Hi @everyone and <@&5> and <@42>"),
        &Limits::DISCORD,
    );
    let posted = bot
        .outbox
        .post(&place(CHANNEL), messages)
        .await
        .expect("posted");
    assert_eq!(posted.ids.len(), 1);
    let stored = bot.fake.visible(CHANNEL);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].id.to_string(), posted.ids[0]);
    let fields = &stored[0].fields;
    assert_eq!(fields["flags"], 32768);
    assert_eq!(fields["allowed_mentions"], json!({"parse": []}));
    assert_eq!(fields["components"][0]["type"], 17);
    assert_eq!(fields["components"][0]["accent_color"], 0x00BCD4);
    assert_eq!(
        stored[0].text(),
        "Hi @everyone and <@&5> and <@42>\n-# m1 · 0.4 s · cost n/a"
    );
    assert_eq!(
        fields["components"][1]["components"][0]["custom_id"],
        "yb:run-again:c1"
    );
    // Edits turn mentions off too.
    bot.outbox
        .replace(&posted, fit(&answer("@here again"), &Limits::DISCORD))
        .await
        .expect("replaced");
    for fields in sent_fields(&bot.fake) {
        assert_eq!(fields["allowed_mentions"], json!({"parse": []}), "{fields}");
    }
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_long_answer_is_an_excerpt_with_the_exact_answer_md() {
    let bot = Bot::start().await;
    let text = format!("# Notes\n\n{}", "a line with 😀 in it\n".repeat(400));
    let messages = fit(&answer(&text), &Limits::DISCORD);
    bot.outbox
        .post(&place(CHANNEL), messages)
        .await
        .expect("posted");
    let stored = &bot.fake.visible(CHANNEL)[0];
    let (name, bytes) = stored.file.clone().expect("answer.md uploaded");
    assert_eq!(name, "answer.md");
    assert_eq!(bytes, text.as_bytes());
    assert!(stored.text().starts_with("# Notes"));
    assert!(
        stored
            .text()
            .contains("The whole answer is attached as answer.md")
    );
    assert_eq!(stored.fields["attachments"][0]["filename"], "answer.md");
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn tables_are_aligned_code_blocks_and_unsafe_ones_attached() {
    let bot = Bot::start().await;
    let table = "| Name | Qty |\n|---|--:|\n| apple | 3 |\n| kiwi | 12 |";
    bot.outbox
        .post(&place(CHANNEL), fit(&answer(table), &Limits::DISCORD))
        .await
        .expect("posted");
    let ragged = "| a |\n|---|\n| b | c |";
    bot.outbox
        .post(&place(CHANNEL), fit(&answer(ragged), &Limits::DISCORD))
        .await
        .expect("posted");
    let stored = bot.fake.visible(CHANNEL);
    assert_eq!(
        stored[0].text(),
        "```\nName  | Qty\n------+----\napple |   3\nkiwi  |  12\n```\n-# m1 · 0.4 s · cost n/a"
    );
    assert_eq!(
        stored[1].file.as_ref().map(|f| f.1.clone()),
        Some(ragged.as_bytes().to_vec())
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn admission_counts_chunks_without_splitting_surrogate_pairs() {
    let bot = Bot::start().await;
    // 1,999 ASCII characters then an emoji: a cut at 2,000 units would split the emoji's
    // surrogate pair, so each such message takes two chunks, the second the whole emoji.
    let line = format!("{}😀", "x".repeat(1_999));
    assert_eq!(
        yetibot_chat_adapters::chunks(&line, 2_000),
        [&line[..1_999], "😀"]
    );
    let mut fits = answer("");
    fits.messages = vec![line.clone(); 15];
    let mut over = fits.clone();
    over.messages.push(line.clone());
    // Fifteen such messages are thirty chunks: admitted whole, one card each.
    bot.outbox
        .post(&place(CHANNEL), fit(&fits, &Limits::DISCORD))
        .await
        .expect("posted");
    let stored = bot.fake.visible(CHANNEL);
    assert_eq!(stored.len(), 15);
    assert!(stored.iter().all(|m| m.text().starts_with(&line)));
    // Sixteen are thirty-two: replaced whole by one notice.
    bot.outbox
        .post(&place(CHANNEL), fit(&over, &Limits::DISCORD))
        .await
        .expect("posted");
    let stored = bot.fake.visible(CHANNEL);
    assert_eq!(stored.len(), 16);
    assert!(
        stored[15].text().starts_with("This answer is too long"),
        "{}",
        stored[15].text()
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_429_waits_as_told_and_is_retried_a_bounded_number_of_times() {
    let bot = Bot::start().await;
    let here = place(CHANNEL);
    let post = || {
        bot.outbox
            .post(&here, vec![Outgoing::text(Role::Answer, "x")])
    };
    // Retry-After with a fraction, which twilight would not parse.
    bot.fake.fault(
        Fault::new("POST", "/messages", 429)
            .header("retry-after", "0.25")
            .body("{}"),
    );
    post().await.expect("posted after one wait");
    let attempts = bot.fake.requests_to("POST", "/messages");
    assert_eq!(attempts.len(), 2);
    assert!(attempts[1].at - attempts[0].at >= Duration::from_millis(250));
    // The body's retry_after counts too; no headers at all waits the default.
    bot.fake.fault(
        Fault::new("POST", "/messages", 429).body(r#"{"retry_after": 0.2, "global": false}"#),
    );
    post().await.expect("posted");
    let attempts = bot.fake.requests_to("POST", "/messages");
    assert!(attempts[3].at - attempts[2].at >= Duration::from_millis(200));
    bot.stop().await.expect("stops");

    // A peer that keeps answering 429 gets three attempts, then the failure is reported,
    // and the repeated 429s pause every request for the shared back-off.
    let bot = Bot::start().await;
    for _ in 0..5 {
        bot.fake.fault(Fault::new("POST", "/messages", 429));
    }
    let result = bot
        .outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "x")])
        .await;
    assert_eq!(result, Err(SendError::Refused("Discord's rate limit")));
    let attempts = bot.fake.requests_to("POST", "/messages");
    assert_eq!(attempts.len(), 3, "one try and two retries");
    for pair in attempts.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(100),
            "never at once"
        );
    }
    bot.outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "y")])
        .await
        .expect("posted after the back-off");
    let attempts = bot.fake.requests_to("POST", "/messages");
    assert!(
        attempts[3].at - attempts[2].at >= Duration::from_millis(300),
        "the shared back-off"
    );
    // A wait longer than the bound fails at once.
    bot.fake
        .fault(Fault::new("POST", "/messages", 429).header("retry-after", "3600"));
    assert!(
        bot.outbox
            .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "z")])
            .await
            .is_err()
    );
    bot.stop().await.expect("stops");
}

/// The measurement behind our own 429 handling: twilight-http's client without its rate
/// limiter resends a 429 at once, with no cap, however often the peer answers it.
#[tokio::test]
async fn twilight_http_alone_resends_a_429_at_once_without_a_cap() {
    let fake = FakeDiscord::start().await;
    for _ in 0..8 {
        fake.fault(Fault::new("POST", "/messages", 429).header("retry-after", "1.5"));
    }
    let client = twilight_http::Client::builder()
        .proxy(fake.http_proxy(), true)
        .ratelimiter(None)
        .token(TOKEN.to_owned())
        .build();
    let channel = twilight_model::id::Id::new(CHANNEL);
    let sent = tokio::time::timeout(Duration::from_secs(5), async {
        client.create_message(channel).content("x").await
    })
    .await
    .expect("it never waits");
    assert!(sent.is_ok());
    let attempts = fake.requests_to("POST", "/messages");
    assert_eq!(attempts.len(), 9, "eight 429s resent, then the success");
    assert!(
        attempts[8].at - attempts[0].at < Duration::from_millis(1_500),
        "none waited"
    );
}

#[tokio::test]
async fn a_5xx_on_create_is_resent_once_with_its_enforced_nonce_and_never_duplicates() {
    let bot = Bot::start().await;
    // Discord made the message but answered 500: the resend returns it, nothing new.
    bot.fake
        .fault(Fault::new("POST", "/messages", 500).applied());
    let posted = bot
        .outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "once")])
        .await
        .expect("confirmed by the resend");
    assert_eq!(bot.fake.visible(CHANNEL).len(), 1);
    assert_eq!(posted.ids, [bot.fake.visible(CHANNEL)[0].id.to_string()]);
    let attempts = bot.fake.requests_to("POST", "/messages");
    assert_eq!(attempts.len(), 2);
    let nonce = |i: usize| {
        attempts[i]
            .fields
            .as_ref()
            .map(|f| (f["nonce"].clone(), f["enforce_nonce"].clone()))
    };
    assert_eq!(nonce(0), nonce(1));
    assert_eq!(nonce(0).map(|n| n.1), Some(Value::Bool(true)));
    // Two failures in a row: reported as unconfirmed, no third attempt.
    bot.fake.fault(Fault::new("POST", "/messages", 502));
    bot.fake.fault(Fault::new("POST", "/messages", 503));
    let result = bot
        .outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "twice")])
        .await;
    assert!(
        matches!(result, Err(SendError::Unconfirmed(_))),
        "{result:?}"
    );
    assert_eq!(bot.fake.requests_to("POST", "/messages").len(), 4);
    // A 4xx is refused without a resend.
    bot.fake.fault(Fault::new("POST", "/messages", 403));
    let result = bot
        .outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "no")])
        .await;
    assert!(matches!(result, Err(SendError::Refused(_))));
    assert_eq!(bot.fake.requests_to("POST", "/messages").len(), 5);
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_status_card_shows_typing_on_its_own_lane_until_it_is_removed() {
    let bot = Bot::start().await;
    let card = bot
        .outbox
        .post(&place(CHANNEL), vec![StatusCard::default().to_outgoing()])
        .await
        .expect("card");
    bot.fake
        .until("typing renewed", |f| {
            f.requests_to("POST", "10/typing").len() >= 3
        })
        .await;
    // A slow card edit does not hold up an answer.
    bot.fake.fault(
        Fault::new("PATCH", format!("messages/{}", card.ids[0]), 200)
            .applied()
            .delayed(Duration::from_secs(2)),
    );
    let here = place(CHANNEL);
    {
        let edit = bot
            .outbox
            .replace(&card, vec![StatusCard::default().to_outgoing()]);
        let answer = bot
            .outbox
            .post(&here, vec![Outgoing::text(Role::Answer, "the answer")]);
        tokio::pin!(edit);
        tokio::select! {
            posted = answer => { posted.expect("answer posted"); }
            _ = &mut edit => panic!("the slow status edit finished first"),
        }
        edit.await.expect("the edit ends too");
    }
    bot.outbox.delete(&card).await.expect("removed");
    let typed = bot.fake.requests_to("POST", "10/typing").len();
    // Another channel's card proves time passed; the first channel's typing has stopped.
    bot.outbox
        .post(&place(11), vec![StatusCard::default().to_outgoing()])
        .await
        .expect("card");
    bot.fake
        .until("typing elsewhere", |f| {
            f.requests_to("POST", "11/typing").len() >= 3
        })
        .await;
    assert!(bot.fake.requests_to("POST", "10/typing").len() <= typed + 1);
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_typing_call_that_hangs_holds_up_nothing() {
    // Requests may take 30 s before they count as failed, and Discord takes a minute to
    // answer the first typing call.
    let bot = Bot::with(
        DiscordBounds {
            request_timeout: Duration::from_secs(30),
            ..bounds()
        },
        64,
        |_| {},
    )
    .await;
    bot.fake
        .fault(Fault::new("POST", "10/typing", 204).delayed(Duration::from_secs(60)));
    let card = bot
        .outbox
        .post(&place(CHANNEL), vec![StatusCard::default().to_outgoing()])
        .await
        .expect("card");
    bot.fake
        .until("typing sent", |f| {
            !f.requests_to("POST", "10/typing").is_empty()
        })
        .await;
    // The hanging call is the channel's only one (renewals skip a channel whose call is
    // still out), and the adapter stops at once (`stop` allows 10 s), the call dropped.
    bot.outbox.delete(&card).await.expect("removed");
    assert_eq!(bot.fake.requests_to("POST", "10/typing").len(), 1);
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn replace_edits_in_place_deletes_extras_and_posts_what_is_missing() {
    let bot = Bot::start().await;
    let two = vec![
        Outgoing::text(Role::Answer, "a"),
        Outgoing::text(Role::Answer, "b"),
    ];
    let posted = bot.outbox.post(&place(CHANNEL), two).await.expect("posted");
    let one = bot
        .outbox
        .replace(&posted, vec![Outgoing::text(Role::Answer, "c")])
        .await
        .expect("replaced");
    assert_eq!(one.ids, posted.ids[..1]);
    let visible = bot.fake.visible(CHANNEL);
    assert_eq!(visible.len(), 1);
    assert_eq!((visible[0].text(), visible[0].edits), ("c".to_owned(), 1));
    let three = bot
        .outbox
        .replace(
            &one,
            vec![
                Outgoing::text(Role::Answer, "d"),
                Outgoing::text(Role::Answer, "e"),
                Outgoing::text(Role::Answer, "f"),
            ],
        )
        .await
        .expect("replaced");
    assert_eq!(three.ids.len(), 3);
    let texts: Vec<String> = bot.fake.visible(CHANNEL).iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["d", "e", "f"]);
    // A message deleted meanwhile is posted anew; deleting twice is fine.
    bot.outbox.delete(&three).await.expect("deleted");
    bot.outbox
        .delete(&three)
        .await
        .expect("already gone is fine");
    let again = bot
        .outbox
        .replace(&three, vec![Outgoing::text(Role::Answer, "g")])
        .await
        .expect("reposted");
    assert_ne!(again.ids[0], three.ids[0]);
    assert_eq!(bot.fake.visible(CHANNEL).len(), 1);
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn reactions_accept_every_discord_form_and_refuse_shortcodes() {
    let bot = Bot::start().await;
    let posted = bot
        .outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "x")])
        .await
        .expect("posted");
    let id = &posted.ids[0];
    for emoji in ["👍", "<:party:123>", "<a:dance:456>", "wave:789"] {
        bot.outbox
            .react(&place(CHANNEL), id, emoji)
            .await
            .expect(emoji);
    }
    let paths: Vec<String> = bot
        .fake
        .requests_to("PUT", "/reactions/")
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths.len(), 4);
    assert!(paths[0].contains("%F0%9F%91%8D"), "{}", paths[0]);
    assert!(
        paths[1].contains("party:123") && paths[3].contains("wave:789"),
        "{paths:?}"
    );
    assert!(matches!(
        bot.outbox.react(&place(CHANNEL), id, ":thumbsup:").await,
        Err(SendError::Refused(_))
    ));
    assert_eq!(bot.fake.requests_to("PUT", "/reactions/").len(), 4);
    assert_eq!(
        ReactionEmoji::parse("<a:dance:456>").map(|e| e.api_form()),
        Ok("dance:456".into())
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_reaction_on_a_bot_message_is_an_event_and_the_bots_own_are_ignored() {
    let mut bot = Bot::start().await;
    let reaction = payload::reaction(CHANNEL, 77, HUMAN, "❌", Some(BOT_ID));
    bot.fake.gateway.dispatch(
        "MESSAGE_REACTION_ADD",
        &payload::reaction(CHANNEL, 77, BOT_ID, "❌", Some(BOT_ID)),
    );
    bot.fake.gateway.dispatch("MESSAGE_REACTION_ADD", &reaction);
    bot.fake.gateway.dispatch("MESSAGE_REACTION_ADD", &reaction);
    bot.fake.gateway.dispatch(
        "MESSAGE_REACTION_ADD",
        &payload::reaction(CHANNEL, 78, HUMAN, "👍", Some(HUMAN)),
    );
    let first = bot.next().await;
    assert_eq!(first.event.message_id, "77");
    assert_eq!(first.event.author.id, HUMAN.to_string());
    assert_eq!(
        first.event.kind,
        EventKind::Reacted {
            emoji: "❌".into(),
            on_bot_message: true
        }
    );
    let second = bot.next().await;
    assert_eq!(
        second.event.kind,
        EventKind::Reacted {
            emoji: "👍".into(),
            on_bot_message: false
        }
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn presses_are_acknowledged_publicly_and_become_events_of_the_clicker() {
    let mut bot = Bot::start().await;
    let message = payload::message(700, CHANNEL, &payload::user(BOT_ID, "yetibot", true), "");
    let clicker = payload::user(43, "bob", false);
    let press = payload::press(1, CHANNEL, &message, &clicker, "yb:run-again:c9");
    bot.fake.gateway.dispatch("INTERACTION_CREATE", &press);
    bot.fake.gateway.dispatch("INTERACTION_CREATE", &press);
    bot.fake.gateway.dispatch(
        "INTERACTION_CREATE",
        &payload::press(2, CHANNEL, &message, &clicker, "someone-else:thing"),
    );
    bot.fake.gateway.dispatch(
        "INTERACTION_CREATE",
        &payload::press(3, CHANNEL, &message, &clicker, "yb:help:c9"),
    );
    let event = bot.next().await;
    assert_eq!(event.event.author.id, "43");
    assert_eq!(event.event.message_id, "700");
    assert_eq!(
        event.event.kind,
        EventKind::Pressed {
            action: Action::RunAgain,
            token: "c9".into()
        }
    );
    assert_eq!(
        bot.next().await.event.kind,
        EventKind::Pressed {
            action: Action::Help,
            token: "c9".into()
        }
    );
    bot.fake
        .until("three acknowledgements", |f| {
            f.requests_to("POST", "/callback").len() == 3
        })
        .await;
    for ack in bot.fake.requests_to("POST", "/callback") {
        assert_eq!(ack.fields, Some(json!({"type": 6})));
        assert_eq!(ack.authorization, None, "callbacks carry no token");
    }
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn many_concurrent_presses_are_each_acknowledged_once() {
    let mut bot = Bot::start().await;
    let message = payload::message(700, CHANNEL, &payload::user(BOT_ID, "yetibot", true), "");
    for n in 0..40 {
        let clicker = payload::user(100 + n, "someone", false);
        bot.fake.gateway.dispatch(
            "INTERACTION_CREATE",
            &payload::press(1_000 + n, CHANNEL, &message, &clicker, "yb:help:c1"),
        );
    }
    let mut clickers = Vec::new();
    for _ in 0..40 {
        clickers.push(bot.next().await.event.author.id);
    }
    clickers.sort();
    clickers.dedup();
    assert_eq!(clickers.len(), 40);
    bot.fake
        .until("forty acknowledgements", |f| {
            f.requests_to("POST", "/callback").len() == 40
        })
        .await;
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_full_intake_answers_busy_in_the_channel() {
    let bot = Bot::with(bounds(), 1, |_| {}).await;
    bot.say(CHANNEL, "!echo one");
    bot.say(CHANNEL, "!echo two");
    bot.fake
        .until("a busy notice", |f| !f.visible(CHANNEL).is_empty())
        .await;
    assert_eq!(
        bot.fake.visible(CHANNEL)[0].text(),
        "the bot is busy; try again in a moment"
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_reply_thread_is_opened_on_the_message_and_a_thread_stays_a_thread() {
    let bot = Bot::start().await;
    let thread = bot
        .outbox
        .open_thread(&place(CHANNEL), "600", "What are people saying?")
        .await
        .expect("a thread");
    assert_eq!(thread.room, CHANNEL.to_string());
    let id = thread.thread.clone().expect("in the thread");
    let created = bot.fake.requests_to("POST", "messages/600/threads");
    assert_eq!(
        created[0].fields.as_ref().map(|f| f["name"].clone()),
        Some(json!("What are people saying?"))
    );
    let inside = bot
        .outbox
        .open_thread(&thread, "601", "again")
        .await
        .expect("stays");
    assert_eq!(inside, thread);
    assert_eq!(bot.fake.requests_to("POST", "/threads").len(), 1);
    bot.outbox
        .post(&thread, vec![Outgoing::text(Role::Answer, "in the thread")])
        .await
        .expect("posted");
    assert_eq!(bot.fake.visible(id.parse().expect("id")).len(), 1);
    bot.stop().await.expect("stops");
}

fn history_message(id: u64, author: &Value, content: &str) -> Value {
    payload::message(id, 30, author, content)
}

#[tokio::test]
async fn thread_history_reads_every_page_oldest_first_with_v2_text_and_excerpts() {
    let bot = Bot::start().await;
    let alice = payload::user(HUMAN, "alice", false);
    let me = payload::user(BOT_ID, "yetibot", true);
    let mut history: Vec<Value> = (1..=230)
        .map(|n| history_message(n, &alice, &format!("message {n}")))
        .collect();
    let mut card = history_message(231, &me, "");
    card["flags"] = json!(32768);
    card["components"] = json!([{"type": 17, "components": [
        {"type": 10, "content": "An excerpt of a long answer…"},
        {"type": 13, "file": {"url": "attachment://answer.md"}},
        {"type": 10, "content": "-# m1 · 2.0 s · cost n/a"}
    ]}]);
    history.push(card);
    history.push(history_message(300, &alice, "after the trigger"));
    bot.fake.add_history(30, history);
    let thread = place(CHANNEL).in_thread("30");
    let limits = HistoryLimits {
        max_messages: 1_000,
        max_bytes: 1 << 20,
    };
    let read = bot
        .outbox
        .thread_history(&thread, "299", limits)
        .await
        .expect("read");
    assert_eq!(read.len(), 231);
    assert_eq!(read[0].text, "message 1");
    assert_eq!(read[229].text, "message 230");
    assert_eq!(read[230].text, "An excerpt of a long answer…");
    assert!(read[230].from_bot && !read[0].from_bot);
    assert_eq!(read[0].author, "alice");
    assert_eq!(
        bot.fake.requests_to("GET", "channels/30/messages").len(),
        3,
        "three pages"
    );
    // Longer than the limits: an error, never a shorter thread.
    let small = HistoryLimits {
        max_messages: 100,
        max_bytes: 1 << 20,
    };
    assert_eq!(
        bot.outbox.thread_history(&thread, "299", small).await,
        Err(HistoryError::TooLong)
    );
    // Outside a thread there is nothing to read.
    assert_eq!(
        bot.outbox
            .thread_history(&place(CHANNEL), "299", limits)
            .await,
        Ok(Vec::new())
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn thread_history_without_permission_is_an_error_naming_it() {
    let bot = Bot::start().await;
    bot.fake.forbid_history(31);
    let thread = place(CHANNEL).in_thread("31");
    let limits = HistoryLimits {
        max_messages: 100,
        max_bytes: 1 << 20,
    };
    let error = bot
        .outbox
        .thread_history(&thread, "5", limits)
        .await
        .expect_err("refused");
    assert!(
        matches!(error, HistoryError::Unavailable(reason) if reason.contains("Read Message History")),
        "{error}"
    );
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn invalid_requests_stop_far_below_discords_threshold() {
    let bot = Bot::with(
        DiscordBounds {
            max_invalid_requests: 3,
            ..bounds()
        },
        4,
        |_| {},
    )
    .await;
    for _ in 0..3 {
        bot.fake.fault(Fault::new("POST", "/messages", 403));
        let refused = bot
            .outbox
            .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "x")])
            .await;
        assert!(matches!(refused, Err(SendError::Refused(_))), "{refused:?}");
    }
    // The fourth is not sent at all.
    let result = bot
        .outbox
        .post(&place(CHANNEL), vec![Outgoing::text(Role::Answer, "x")])
        .await;
    assert_eq!(result, Err(SendError::Refused("Discord's rate limit")));
    assert_eq!(bot.fake.requests_to("POST", "/messages").len(), 3);
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn a_thread_of_messages_without_text_cannot_be_paged_without_end() {
    let bot = Bot::start().await;
    let alice = payload::user(HUMAN, "alice", false);
    bot.fake.add_history(
        32,
        (1..=600)
            .map(|n| payload::message(n, 32, &alice, ""))
            .collect(),
    );
    let thread = place(CHANNEL).in_thread("32");
    let limits = HistoryLimits {
        max_messages: 10,
        max_bytes: 1 << 20,
    };
    assert_eq!(
        bot.outbox.thread_history(&thread, "1000", limits).await,
        Err(HistoryError::TooLong)
    );
    assert!(bot.fake.requests_to("GET", "channels/32/messages").len() <= 3);
    bot.stop().await.expect("stops");
}

#[tokio::test]
async fn one_process_runs_at_most_its_share_of_shards() {
    let fake = FakeDiscord::start().await;
    let (queue, _events) = yetibot_chat_adapters::intake(4);
    let mut too_many = options(&fake, bounds());
    too_many.shards = Some(ShardRange {
        first: 0,
        last: 299,
        total: 1_000,
    });
    let error = Discord::start(too_many, queue).await.expect_err("refused");
    assert!(matches!(error, Error::Invalid(_)), "{error}");
    fake.recommend_shards(4_000_000);
    let (queue, _events) = yetibot_chat_adapters::intake(4);
    let error = Discord::start(options(&fake, bounds()), queue)
        .await
        .expect_err("refused");
    assert!(matches!(error, Error::Invalid(_)), "{error}");
}
