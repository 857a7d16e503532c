//! The Discord adapter with the real conductor, end to end against the fake Discord
//! (`discord-fixture`) and a scripted model provider (`provider-fixture`): scripted
//! conversations for the rules that need both sides, from a captioned answer after its
//! working card to reruns, edits racing runs, replays after a resume and thread history.

use std::time::Duration;

use discord_fixture::{BOT_ID, FakeDiscord, Start, Stored, payload};
use provider_fixture::{Fixture, Reply, script};
use serde_json::{Value, json};
use yetibot_chat_adapters::discord::DiscordBounds;

use crate::platforms::discord::{Running, connect};
use crate::support::Bot;

const ALICE: u64 = 42;
const BOB: u64 = 43;
const CHANNEL: u64 = 10;

/// The fake Discord, the provider, and the adapter feeding the bot.
struct Stack {
    fake: FakeDiscord,
    provider: Fixture,
    bot: Bot,
    running: Running,
}

impl Stack {
    async fn start() -> Self {
        let provider = Fixture::start().await.expect("provider");
        // Cards at once, so every test sees the card and its typing; the delay before a
        // card is the conductor's own test.
        let (bot, intake) = Bot::start(&provider, Duration::ZERO);
        let bounds = DiscordBounds {
            typing_interval: Duration::from_millis(100),
            ..DiscordBounds::default()
        };
        let (fake, running) = connect(intake, bounds).await;
        Self {
            fake,
            provider,
            bot,
            running,
        }
    }

    fn say_as(&self, author: &Value, channel: u64, text: &str) -> u64 {
        let id = self.fake.next_id();
        self.fake.gateway.dispatch(
            "MESSAGE_CREATE",
            &payload::message(id, channel, author, text),
        );
        id
    }

    async fn settle(&self) {
        self.bot.settle().await;
    }

    fn say(&self, channel: u64, text: &str) -> u64 {
        self.say_as(&payload::user(ALICE, "alice", false), channel, text)
    }

    fn edit(&self, id: u64, channel: u64, text: &str, at: u32) {
        let original = payload::message(id, channel, &payload::user(ALICE, "alice", false), "");
        self.fake
            .gateway
            .dispatch("MESSAGE_UPDATE", &payload::edited(original, text, at));
    }

    /// Presses the button with `custom_id` on `message` as `clicker`.
    fn press(&self, clicker: u64, message: &Stored, custom_id: &str) {
        let on = payload::message(
            message.id,
            message.channel,
            &payload::user(BOT_ID, "yetibot", true),
            "",
        );
        let who = payload::user(
            clicker,
            if clicker == ALICE { "alice" } else { "bob" },
            false,
        );
        let id = self.fake.next_id();
        self.fake.gateway.dispatch(
            "INTERACTION_CREATE",
            &payload::press(id, message.channel, &on, &who, custom_id),
        );
    }

    async fn until_visible(
        &self,
        channel: u64,
        what: &str,
        check: impl Fn(&[Stored]) -> bool,
    ) -> Vec<Stored> {
        self.fake.until(what, |f| check(&f.visible(channel))).await;
        self.fake.visible(channel)
    }

    async fn stop(self) {
        self.running.stop().await;
    }
}

fn button(message: &Stored, label: &str) -> String {
    let rows = message.fields["components"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    rows.iter()
        .filter(|c| c["type"] == 1)
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .find(|b| b["label"] == label)
        .and_then(|b| b["custom_id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no {label} button on {}", message.fields))
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
async fn a_prompt_gets_a_working_card_then_a_captioned_answer_that_mentions_nobody() {
    let stack = Stack::start().await;
    stack.provider.route(
        "/v1/chat/completions",
        Reply::json(tool_call("yetibot__help")),
    );
    stack.provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Here is **help**, @everyone."))
            .slow(Duration::from_millis(1_500)),
    );
    stack.say(CHANNEL, "!ai What can you do?");
    let visible = stack
        .until_visible(CHANNEL, "the answer, and the card gone", |v| {
            v.len() == 1 && v[0].text().starts_with("Here is")
        })
        .await;
    let answer = &visible[0];
    assert_eq!(
        answer.text(),
        format!(
            "Here is **help**, @everyone.\n-# {}",
            answer.text().split("-# ").nth(1).unwrap_or_default()
        )
    );
    let caption = answer
        .text()
        .split("-# ")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    assert!(
        caption.starts_with("m1 · ") && caption.contains("1 tool"),
        "{caption}"
    );
    assert_eq!(answer.fields["allowed_mentions"], json!({"parse": []}));
    assert_eq!(answer.fields["components"][0]["accent_color"], 0x00BCD4);
    for label in ["Run again", "Help", "Show details"] {
        button(answer, label);
    }
    // The working card came first, was edited with the finished call, and was deleted by
    // its own ID only after the answer was posted.
    let all = stack.fake.messages(CHANNEL);
    let card = &all[0];
    assert!(card.deleted);
    assert!(card.edits >= 1, "edited with the tool's progress");
    assert!(card.text().starts_with("Working…"));
    let requests = stack.fake.requests();
    let answered = requests
        .iter()
        .position(|r| {
            r.method == "POST"
                && r.fields
                    .as_ref()
                    .is_some_and(|f| f.to_string().contains("Here is"))
        })
        .expect("the answer was posted");
    let removed = requests
        .iter()
        .position(|r| r.method == "DELETE")
        .expect("the card was removed");
    assert!(answered < removed);
    assert!(requests[removed].path.ends_with(&card.id.to_string()));
    assert!(
        !stack.fake.requests_to("POST", "10/typing").is_empty(),
        "typing while it ran"
    );
    // Show details posts the tool snapshot publicly.
    stack.press(BOB, answer, &button(answer, "Show details"));
    let visible = stack
        .until_visible(CHANNEL, "the details", |v| v.len() == 2)
        .await;
    assert_eq!(
        visible[1].text(),
        "Tool calls of this answer:\n1. `yetibot/help`: ok\n\nBudget: 1 of 6 host calls used."
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_answers_and_tables_from_a_model() {
    let stack = Stack::start().await;
    let long = format!(
        "# Findings\n\n{}",
        "A finding, explained at length.\n".repeat(200)
    );
    let table = "| Model | Cost |\n|:--|--:|\n| m1 | $0.01 |\n| m2 | $0.10 |";
    stack.provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion(&long)),
    );
    stack.provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion(table)),
    );
    stack.say(CHANNEL, "!ai --no-tools Tell me everything.");
    let visible = stack
        .until_visible(CHANNEL, "the long answer", |v| {
            v.len() == 1 && v[0].file.is_some()
        })
        .await;
    let (name, bytes) = visible[0].file.clone().expect("answer.md");
    assert_eq!(name, "answer.md");
    // The exact text the model sent (the chat rendering drops its final line break).
    assert!(
        bytes == long.trim_end().as_bytes(),
        "{} bytes attached for {}",
        bytes.len(),
        long.len()
    );
    assert!(visible[0].text().starts_with("# Findings"));
    stack.say(CHANNEL, "!ai --no-tools Compare the costs.");
    let visible = stack
        .until_visible(CHANNEL, "the table", |v| {
            v.len() == 2 && v[1].text().starts_with("```")
        })
        .await;
    assert!(
        visible[1]
            .text()
            .starts_with("```\nModel |  Cost\n------+------\nm1    | $0.01\nm2    | $0.10\n```"),
        "{}",
        visible[1].text()
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_again_is_confirmed_publicly_and_an_edit_expires_the_confirmation() {
    let stack = Stack::start().await;
    let command = stack.say(CHANNEL, "!echo first");
    let visible = stack
        .until_visible(CHANNEL, "the answer", |v| v.len() == 1)
        .await;
    let answer = visible[0].clone();
    stack.settle().await;
    assert!(answer.text().starts_with("first"));
    // Only the requester may run it again.
    stack.press(BOB, &answer, &button(&answer, "Run again"));
    let visible = stack
        .until_visible(CHANNEL, "a refusal", |v| v.len() == 2)
        .await;
    assert_eq!(visible[1].text(), "Only alice can run this command again.");
    stack.press(ALICE, &answer, &button(&answer, "Run again"));
    let visible = stack
        .until_visible(CHANNEL, "the confirmation", |v| v.len() == 3)
        .await;
    let confirmation = visible[2].clone();
    stack.settle().await;
    assert!(
        confirmation.text().starts_with("Run `!echo first` again?"),
        "{}",
        confirmation.text()
    );
    let confirm = button(&confirmation, "Confirm rerun");
    // An edit supersedes the confirmation: it is removed, and the answer is the edit's.
    stack.edit(command, CHANNEL, "!echo edited", 30);
    let visible = stack
        .until_visible(CHANNEL, "the edit's answer", |v| {
            v.iter()
                .any(|m| m.id == answer.id && m.text().starts_with("edited"))
                && !v.iter().any(|m| m.id == confirmation.id)
        })
        .await;
    assert_eq!(visible.len(), 2);
    stack.press(ALICE, &confirmation, &confirm);
    let visible = stack
        .until_visible(CHANNEL, "an expiry notice", |v| v.len() == 3)
        .await;
    // The edit retired its token: the press explains how to resend.
    assert!(
        visible[2].text().starts_with("This button has expired"),
        "{}",
        visible[2].text()
    );
    // A fresh confirmation runs the edited command once, consumed before it runs.
    let answer = visible
        .iter()
        .find(|m| m.id == answer.id)
        .cloned()
        .expect("the answer");
    stack.settle().await;
    stack.press(ALICE, &answer, &button(&answer, "Run again"));
    let visible = stack
        .until_visible(CHANNEL, "a new confirmation", |v| v.len() == 4)
        .await;
    let confirmation = visible[3].clone();
    stack.settle().await;
    let confirm = button(&confirmation, "Confirm rerun");
    stack.press(ALICE, &confirmation, &confirm);
    stack.press(ALICE, &confirmation, &confirm);
    stack
        .until_visible(CHANNEL, "the rerun, and the card consumed", |v| {
            !v.iter().any(|m| m.id == confirmation.id) && v.iter().any(|m| m.edits >= 2)
        })
        .await;
    // The press was acknowledged before its card was deleted: Discord cannot acknowledge a
    // press on a message that is gone, and the user would see "This interaction failed".
    let requests = stack.fake.requests();
    let deleted = requests
        .iter()
        .position(|r| {
            r.method == "DELETE" && r.path.contains(&format!("messages/{}", confirmation.id))
        })
        .expect("the card was deleted");
    let acknowledged = requests
        .iter()
        .filter(|r| r.method == "POST" && r.path.contains("/callback"))
        .count();
    let acknowledged_before = requests[..deleted]
        .iter()
        .filter(|r| r.method == "POST" && r.path.contains("/callback"))
        .count();
    assert!(
        acknowledged_before >= acknowledged.saturating_sub(1) && acknowledged_before > 0,
        "{requests:#?}"
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_racing_a_running_command_owns_the_answer() {
    let stack = Stack::start().await;
    let command = stack.say(CHANNEL, "!wait");
    stack.edit(command, CHANNEL, "!echo newer", 10);
    let visible = stack
        .until_visible(CHANNEL, "the newer answer", |v| !v.is_empty())
        .await;
    assert!(visible[0].text().starts_with("newer"));
    // The obsolete run finishes now and publishes nothing.
    stack.bot.gate.add_permits(1);
    stack.say(CHANNEL, "!echo sync");
    let visible = stack
        .until_visible(CHANNEL, "a later answer", |v| v.len() == 2)
        .await;
    assert!(visible[0].text().starts_with("newer") && visible[0].edits == 0);
    assert!(visible[1].text().starts_with("sync"));
    assert!(
        !stack
            .fake
            .messages(CHANNEL)
            .iter()
            .any(|m| m.text().contains("waited"))
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_replayed_by_a_resume_makes_one_paid_call() {
    let stack = Stack::start().await;
    stack.fake.gateway.replay_on_resume(5);
    stack.provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Paid once.")),
    );
    stack.say(CHANNEL, "!ai --no-tools Say something.");
    stack
        .until_visible(CHANNEL, "the answer", |v| {
            v.len() == 1 && v[0].text().starts_with("Paid once.")
        })
        .await;
    stack.fake.gateway.drop_connection();
    stack
        .fake
        .until("a resume", |f| {
            f.gateway
                .starts()
                .iter()
                .any(|s| matches!(s, Start::Resume(..)))
        })
        .await;
    stack.say(CHANNEL, "!echo after");
    // The `ai` request's status card may land after its answer and go a moment later; what
    // counts is the answers once it has gone.
    let visible = stack
        .until_visible(CHANNEL, "the next answer, and no card", |v| {
            v.iter().any(|m| m.text().starts_with("after"))
                && !v.iter().any(|m| m.text().starts_with("Working"))
        })
        .await;
    let answers: Vec<String> = visible.iter().map(|m| m.text()).collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers[0].starts_with("Paid once.") && answers[1].starts_with("after"));
    assert_eq!(stack.provider.requests().len(), 1, "one paid call");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_from_a_bot_triggers_nothing() {
    let stack = Stack::start().await;
    stack.say_as(
        &payload::user(7, "otherbot", true),
        CHANNEL,
        "!ai --no-tools spend",
    );
    stack.say_as(
        &payload::user(BOT_ID, "yetibot", true),
        CHANNEL,
        "!echo loop",
    );
    stack.say(CHANNEL, "!echo human");
    let visible = stack
        .until_visible(CHANNEL, "the human's answer", |v| !v.is_empty())
        .await;
    assert_eq!(visible.len(), 1);
    assert!(visible[0].text().starts_with("human"));
    assert!(stack.provider.requests().is_empty());
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_in_a_thread_carries_every_page_of_it_and_answers_there() {
    let stack = Stack::start().await;
    stack
        .fake
        .gateway
        .dispatch("THREAD_CREATE", &payload::thread(30, CHANNEL));
    let alice = payload::user(ALICE, "alice", false);
    let me = payload::user(BOT_ID, "yetibot", true);
    let history: Vec<Value> = (1..=150)
        .map(|n| {
            let author = if n % 2 == 0 { &me } else { &alice };
            payload::message(n, 30, author, &format!("turn {n}"))
        })
        .collect();
    stack.fake.add_history(30, history);
    stack.provider.route(
        "/v1/chat/completions",
        Reply::json(script::chat_completion("Continued.")),
    );
    stack.say(30, "!ai --no-tools Continue.");
    let visible = stack
        .until_visible(30, "the answer in the thread", |v| {
            v.len() == 1 && v[0].text().starts_with("Continued.")
        })
        .await;
    assert!(visible[0].text().starts_with("Continued."));
    assert!(
        stack.fake.visible(CHANNEL).is_empty(),
        "nothing in the parent channel"
    );
    assert_eq!(
        stack.fake.requests_to("GET", "channels/30/messages").len(),
        2,
        "two pages"
    );
    let requests = stack.provider.requests();
    let body: Value = serde_json::from_slice(&requests[0].body).expect("json");
    let messages = body["messages"].as_array().expect("messages");
    // The system message, 150 earlier turns oldest first, then the prompt.
    assert_eq!(messages.len(), 152);
    assert_eq!(
        messages[1]["content"]
            .as_str()
            .map(|c| c.contains("turn 1")),
        Some(true)
    );
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[150]["role"], "assistant");
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_wraps_a_command_in_a_new_thread_and_a_delete_reaction_removes_the_answer() {
    let stack = Stack::start().await;
    let command = stack.say(CHANNEL, "!thread echo in a thread");
    stack
        .fake
        .until("a thread", |f| {
            !f.requests_to("POST", &format!("messages/{command}/threads"))
                .is_empty()
        })
        .await;
    let created = stack.fake.requests_to("POST", "/threads");
    assert_eq!(
        created[0].fields.as_ref().map(|f| f["name"].clone()),
        Some(json!("echo in a thread"))
    );
    let answer_channel = |f: &FakeDiscord| {
        f.requests_to("POST", "/messages")
            .into_iter()
            .find(|r| !r.path.contains("threads"))
            .and_then(|r| r.path.split('/').nth(1).and_then(|c| c.parse::<u64>().ok()))
    };
    stack
        .fake
        .until("the answer", |f| answer_channel(f).is_some())
        .await;
    let thread = answer_channel(&stack.fake).expect("the answer's channel");
    assert_ne!(thread, CHANNEL);
    let visible = stack
        .until_visible(thread, "the answer", |v| !v.is_empty())
        .await;
    assert!(visible[0].text().starts_with("in a thread"));
    stack.settle().await;
    assert!(stack.fake.visible(CHANNEL).is_empty());
    // ❌ on the bot's answer deletes it.
    stack.fake.gateway.dispatch(
        "MESSAGE_REACTION_ADD",
        &payload::reaction(thread, visible[0].id, ALICE, "❌", Some(BOT_ID)),
    );
    stack
        .until_visible(thread, "the answer deleted", <[Stored]>::is_empty)
        .await;
    stack.stop().await;
}

/// One Grok answer over the Responses API.
fn grok_answer(text: &str) -> Reply {
    Reply::sse_events([
        script::text_delta(text),
        json!({"type": "response.completed", "response": {
            "status": "completed",
            "output": [serde_json::from_str::<Value>(&script::message_item(text)).expect("item")],
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }})
        .to_string(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grok_answers_in_a_reply_thread_unless_told_not_to_and_stays_in_a_thread() {
    let stack = Stack::start().await;
    for text in ["In a thread.", "In the channel.", "Still in the thread."] {
        stack.provider.route("/g/v1/responses", grok_answer(text));
    }
    let command = stack.say(CHANNEL, "!grok --no-tools What is new?");
    stack
        .fake
        .until("a reply thread", |f| {
            !f.requests_to("POST", &format!("messages/{command}/threads"))
                .is_empty()
        })
        .await;
    let created = stack.fake.requests_to("POST", "/threads");
    assert_eq!(
        created[0].fields.as_ref().map(|f| f["name"].clone()),
        Some(json!("grok --no-tools What is new?"))
    );
    // The working card and the answer go in the thread; the channel stays empty.
    let first_post = |f: &FakeDiscord| {
        f.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/messages"))
            .find_map(|r| r.path.split('/').nth(1).and_then(|c| c.parse::<u64>().ok()))
    };
    stack
        .fake
        .until("a post", |f| first_post(f).is_some())
        .await;
    let thread = first_post(&stack.fake).expect("a post");
    assert_ne!(thread, CHANNEL);
    stack
        .until_visible(thread, "the answer in the thread", |v| {
            v.len() == 1 && v[0].text().starts_with("In a thread.")
        })
        .await;
    // The working card went in the thread too (its post runs beside the answer, so either
    // may be first), and is removed once confirmed.
    stack
        .fake
        .until("the card posted and removed", |f| {
            f.messages(thread)
                .iter()
                .any(|m| m.text().starts_with("Working…"))
                && f.visible(thread).len() == 1
        })
        .await;
    assert!(stack.fake.messages(CHANNEL).is_empty());
    // --no-thread answers in the channel.
    stack.say(CHANNEL, "!grok --no-thread --no-tools Quick one.");
    stack
        .until_visible(CHANNEL, "the answer in the channel", |v| {
            v.len() == 1 && v[0].text().starts_with("In the channel.")
        })
        .await;
    // Inside the thread the conversation stays there, without another thread.
    stack.say(thread, "!grok --no-tools And then?");
    stack
        .until_visible(thread, "the second answer in the thread", |v| {
            v.len() == 2 && v[1].text().starts_with("Still in the thread.")
        })
        .await;
    assert_eq!(stack.fake.requests_to("POST", "/threads").len(), 1);
    stack.stop().await;
}
