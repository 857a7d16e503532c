//! One suite of platform behaviours, run against Discord and Slack alike, so that a rule
//! fixed on one platform cannot stay broken on the other.
//!
//! Each case in [`cases`] is data: a list of [`Step`]s that say what people, other bots and
//! the platform do, and what must then be in the channel. [`run`] plays a case against one
//! [`Platform`]: the real adapter connected to its wire-level fake (`discord-fixture`,
//! `slack-fixture`), feeding the real conductor and interpreter with a scripted model
//! provider. The `suite!` table at the end makes one test per case and platform.
//!
//! Whatever a case does, every message the bot leaves must notify nobody and fit the
//! platform's documented limits; [`run`] checks both each time it looks at the channel, with
//! the platform's own reading of a message ([`Shown`]).

mod cases;
pub(crate) mod discord;
mod slack;

use std::time::Duration;

use provider_fixture::{Fixture, Reply, script};
use tokio::time::Instant;
use yetibot_chat_adapters::Intake;

use crate::support::Bot;

/// The people in the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Person {
    /// Alice, who runs the commands.
    Alice,
    /// Bob, another member.
    Bob,
    /// Another member whose display name is also "alice": only the event's user ID may
    /// decide who someone is.
    Mallory,
}

impl Person {
    /// The display name the platform shows.
    pub(crate) fn display_name(self) -> &'static str {
        match self {
            Self::Alice | Self::Mallory => "alice",
            Self::Bob => "bob",
        }
    }
}

/// Senders whose messages must never trigger anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sender {
    /// Another bot (an app on Slack).
    OtherBot,
    /// An incoming webhook.
    Webhook,
    /// This bot itself.
    Myself,
}

/// How the platform fails the next message the bot posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// `429` asking to wait this many seconds; the message was not posted.
    RateLimited { seconds: u64 },
    /// `500` after the message was posted.
    ServerErrorAfterPosting,
    /// The connection closes with no answer after the message was posted.
    DroppedAfterPosting,
}

/// A message in the channel as a reader of the platform sees it.
#[derive(Debug, Clone)]
pub(crate) struct Shown {
    /// The platform's ID of the message.
    pub(crate) id: String,
    /// Its text, with the platform's escaping undone.
    pub(crate) text: String,
    /// The labels of its buttons.
    pub(crate) buttons: Vec<String>,
    /// Why it would notify someone, if it would.
    pub(crate) pings: Option<String>,
    /// Which of the platform's limits it breaks, if any.
    pub(crate) breaks: Option<String>,
    /// The thread it is in, on a platform that answers in threads (Slack).
    pub(crate) thread: Option<String>,
}

/// A platform's adapter against its fake, feeding the bot.
pub(crate) trait Platform: Sized {
    /// The platform's name, for messages.
    const NAME: &'static str;
    /// Starts the fake and connects the adapter, which offers its events to `intake`.
    async fn start(intake: Intake) -> Self;
    /// `who` sends `text` to the channel; returns the message's ID.
    fn say(&mut self, who: Person, text: &str) -> String;
    /// `who` answers `message` where the platform keeps its conversation: in its thread on
    /// Slack (where every answer opens one), in the channel on Discord.
    fn reply(&mut self, who: Person, message: &Shown, text: &str) -> String;
    /// Someone who is not a person sends `text` to the channel.
    fn say_as(&mut self, sender: Sender, text: &str);
    /// `who` edits their message `id` to `text`.
    fn edit(&mut self, who: Person, id: &str, text: &str);
    /// The connection drops, and the platform delivers every earlier event again (a resume
    /// that replays dispatches on Discord, a reconnect and redelivery on Slack).
    async fn redeliver(&mut self);
    /// `who` presses the button labelled `label` on `message`.
    fn press(&mut self, who: Person, message: &Shown, label: &str);
    /// The next message the bot posts meets `fault`.
    fn fault_next_post(&self, fault: Fault);
    /// The channel's visible messages, oldest first.
    fn shown(&self) -> Vec<Shown>;
    /// The files uploaded to the channel: their contents.
    fn files(&self) -> Vec<String>;
    /// The files uploaded to the channel: their bytes.
    fn uploads(&self) -> Vec<Vec<u8>>;
    /// When each request that creates a message arrived, faulted ones included.
    fn posts(&self) -> Vec<Instant>;
    /// Waits until `check` holds of the platform, or for [`PATIENCE`] at most.
    async fn until(&self, what: &str, check: impl Fn(&Self) -> bool);
    /// Stops the adapter.
    async fn stop(self);
}

/// How long a step waits for the channel to look as it should (the fakes give up after 10
/// seconds).
pub(crate) const PATIENCE: Duration = Duration::from_secs(9);

/// One thing that happens in a case, or one thing that must then hold.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Queues the model's next answer (the last one queued answers every later request).
    Model(String),
    /// Queues the model's next reply as this raw Chat Completions body (a tool call).
    ModelReply(String),
    /// A person sends a message.
    Say(Person, &'static str),
    /// A bot, a webhook or this bot sends a message.
    SayAs(Sender, &'static str),
    /// Alice edits the last message she sent.
    Edit(&'static str),
    /// The platform delivers every earlier event again.
    Redeliver,
    /// A person presses the button with this label on the newest message that has one.
    Press(Person, &'static str),
    /// The next post meets a fault.
    Fault(Fault),
    /// Once the bot is idle, the channel shows exactly these messages, in order, each
    /// starting with its text.
    Shows(&'static [&'static str]),
    /// As [`Step::Shows`], and they are the very messages the previous `Shows` saw, edited.
    ShowsInPlace(&'static [&'static str]),
    /// Once the bot is idle, exactly one message starts with this text (notices aside).
    ShownOnce(&'static str),
    /// Once the bot is idle, every line of this text reached the channel, in a message or
    /// an uploaded file.
    Delivered(String),
    /// Once the bot is idle, a file of exactly these bytes was uploaded to the channel.
    Uploaded(&'static [u8]),
    /// The model was asked this many times in all.
    ModelCalls(usize),
    /// Message-creating requests sent in all, faulted ones included.
    Posts(usize),
    /// The last two message-creating requests were at least this far apart.
    PostsApart(Duration),
    /// Queues Clef's next intent classification: the chosen option, P(code_change) and
    /// the explicit-change score. A case with any GitHub step runs with the fake GitHub,
    /// its toolsets and automatic routing.
    Clef(&'static str, f64, f64),
    /// A person answers the newest message showing a proposal ID (in its thread on Slack)
    /// with this text, `{id}` replaced by that ID.
    SayProposal(Person, &'static str),
    /// Once the bot is idle, GitHub holds exactly this many pull requests, all drafts whose
    /// head holds the fixed file and whose one parent is `main`.
    Pulls(usize),
    /// Clef was asked this many times in all.
    ClefCalls(usize),
}

impl Step {
    /// Whether the step needs the fake GitHub.
    fn github(&self) -> bool {
        matches!(
            self,
            Self::Clef(..) | Self::SayProposal(..) | Self::Pulls(_) | Self::ClefCalls(_)
        )
    }
}

/// The newest proposal ID in the channel (the 16 hex digits after "Proposal ") and the
/// message that shows it.
fn proposal_id(shown: &[Shown]) -> Option<(String, &Shown)> {
    shown.iter().rev().find_map(|message| {
        message
            .text
            .match_indices("Proposal ")
            .find_map(|(at, word)| {
                let id: String = message.text[at + word.len()..].chars().take(16).collect();
                (id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
                    .then_some((id, message))
            })
    })
}

/// A case: its steps, in order.
pub(crate) type Case = Vec<Step>;

/// Plays `case` against platform `P`.
pub(crate) async fn run<P: Platform>(case: Case) {
    let provider = Fixture::start().await.expect("provider");
    // No status cards: the cases are about answers, and a card's timing would make the
    // channel's contents depend on the machine's speed.
    provider_fixture::xai_images::XaiImages::new(crate::support::XAI_KEY).mount(&provider, "/x/v1");
    provider_fixture::wise::Wise::new(crate::support::WISE_TOKEN).mount(&provider, "/wise");
    let github = if case.iter().any(Step::github) {
        Some(crate::support::Github::start(&provider).await)
    } else {
        None
    };
    let (bot, intake) = Bot::start_with(&provider, Duration::from_secs(3_600), github.as_ref());
    let mut platform = P::start(intake).await;
    let mut said: Option<String> = None;
    let mut seen: Vec<Shown> = Vec::new();
    for (index, step) in case.into_iter().enumerate() {
        let mut at = format!("{} step {index} ({step:?})", P::NAME);
        if at.len() > 160 {
            at.truncate(at.floor_char_boundary(160));
            at.push_str("…)");
        }
        match step {
            Step::Model(text) => provider.route(
                "/v1/chat/completions",
                Reply::json(script::chat_completion(&text)),
            ),
            Step::ModelReply(body) => provider.route("/v1/chat/completions", Reply::json(body)),
            Step::Say(who, text) => {
                let id = platform.say(who, text);
                if who == Person::Alice {
                    said = Some(id);
                }
            }
            Step::SayAs(sender, text) => platform.say_as(sender, text),
            Step::Edit(text) => {
                let id = said
                    .clone()
                    .unwrap_or_else(|| panic!("{at}: nothing to edit"));
                platform.edit(Person::Alice, &id, text);
            }
            Step::Redeliver => platform.redeliver().await,
            Step::Press(who, label) => {
                bot.settle().await;
                let shown = platform.shown();
                let on = shown
                    .iter()
                    .rev()
                    .find(|m| m.buttons.iter().any(|b| b == label))
                    .unwrap_or_else(|| panic!("{at}: no {label:?} button in {shown:#?}"));
                platform.press(who, on, label);
            }
            Step::Fault(fault) => platform.fault_next_post(fault),
            Step::Shows(expected) | Step::ShowsInPlace(expected) => {
                let now = settled(&platform, &bot, &at, |shown| matches(shown, expected)).await;
                if matches!(step, Step::ShowsInPlace(_)) {
                    let before: Vec<&str> = seen.iter().map(|m| m.id.as_str()).collect();
                    let after: Vec<&str> = now.iter().map(|m| m.id.as_str()).collect();
                    assert_eq!(after, before, "{at}: not the same messages");
                }
                seen = now;
            }
            Step::ShownOnce(text) => {
                let once = |shown: &[Shown]| {
                    shown.iter().filter(|m| m.text.starts_with(text)).count() == 1
                };
                seen = settled(&platform, &bot, &at, once).await;
            }
            Step::Delivered(text) => {
                // A line may be split between messages, at a space the split may drop.
                let bare = |t: &str| t.split_whitespace().collect::<String>();
                let all = |p: &P| {
                    let mut delivered: Vec<String> =
                        p.shown().into_iter().map(|m| bare(&m.text)).collect();
                    delivered.extend(p.files().iter().map(|f| bare(f)));
                    let delivered = delivered.concat();
                    text.lines().all(|line| delivered.contains(&bare(line)))
                };
                platform.until(&at, all).await;
                bot.settle().await;
                assert!(all(&platform), "{at}: {:#?}", platform.shown());
                seen = platform.shown();
                well_behaved(&seen, &at);
            }
            Step::Uploaded(bytes) => {
                let uploaded = |p: &P| p.uploads().iter().any(|file| file.as_slice() == bytes);
                platform.until(&at, uploaded).await;
                bot.settle().await;
                assert!(
                    uploaded(&platform),
                    "{at}: {} uploads",
                    platform.uploads().len()
                );
                seen = platform.shown();
                well_behaved(&seen, &at);
            }
            Step::ModelCalls(n) => {
                bot.settle().await;
                assert_eq!(provider.count("/v1/chat/completions"), n, "{at}");
            }
            Step::Posts(n) => {
                bot.settle().await;
                assert_eq!(platform.posts().len(), n, "{at}");
            }
            Step::Clef(choice, change, explicit) => provider.route(
                crate::support::CLEF,
                provider_fixture::workers::clef_intent(choice, change, explicit),
            ),
            Step::SayProposal(who, template) => {
                bot.settle().await;
                let shown = platform.shown();
                let (id, message) = proposal_id(&shown)
                    .unwrap_or_else(|| panic!("{at}: no proposal in {shown:#?}"));
                let message = message.clone();
                platform.reply(who, &message, &template.replace("{id}", &id));
            }
            Step::Pulls(n) => {
                bot.settle().await;
                let Some(github) = &github else {
                    panic!("{at}: no GitHub");
                };
                let pulls = github.fake.pulls();
                assert_eq!(pulls.len(), n, "{at}: {pulls:#?}");
                let main = github.fake.tip(crate::support::REPO, "main");
                for pull in pulls {
                    assert!(pull.draft, "{at}: {pull:#?}");
                    let head = github.fake.tip(crate::support::REPO, &pull.head);
                    assert_eq!(
                        head.as_deref().and_then(|h| github.fake.parent(h)),
                        main.clone(),
                        "{at}"
                    );
                    assert_eq!(
                        github
                            .fake
                            .file(crate::support::REPO, &pull.head, "src/example.clj")
                            .as_deref(),
                        Some(crate::support::AFTER.as_bytes()),
                        "{at}"
                    );
                }
            }
            Step::ClefCalls(n) => {
                bot.settle().await;
                assert_eq!(provider.count(crate::support::CLEF), n, "{at}");
            }
            Step::PostsApart(gap) => {
                let posts = platform.posts();
                let [.., before, last] = posts.as_slice() else {
                    panic!("{at}: fewer than two posts");
                };
                assert!(
                    last.duration_since(*before) >= gap,
                    "{at}: {:?} apart",
                    last.duration_since(*before)
                );
            }
        }
    }
    platform.stop().await;
}

/// Waits until `check` holds of the channel with the bot idle, and checks that every
/// message in it behaves.
async fn settled<P: Platform>(
    platform: &P,
    bot: &Bot,
    at: &str,
    check: impl Fn(&[Shown]) -> bool,
) -> Vec<Shown> {
    platform.until(at, |p| check(&p.shown())).await;
    // What the bot still does for earlier events lands before the channel is judged.
    bot.settle().await;
    let shown = platform.shown();
    assert!(check(&shown), "{at}: {shown:#?}");
    well_behaved(&shown, at);
    shown
}

fn matches(shown: &[Shown], expected: &[&str]) -> bool {
    shown.len() == expected.len()
        && shown
            .iter()
            .zip(expected)
            .all(|(m, text)| m.text.starts_with(text))
}

fn well_behaved(shown: &[Shown], at: &str) {
    for message in shown {
        assert_eq!(message.pings, None, "{at}: {message:#?}");
        assert_eq!(message.breaks, None, "{at}: {message:#?}");
    }
}

/// One test per case and platform.
macro_rules! suite {
    ($($case:ident),* $(,)?) => {
        mod on_discord {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run::<super::discord::OnDiscord>(super::cases::$case()).await;
                }
            )*
        }
        mod on_slack {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run::<super::slack::OnSlack>(super::cases::$case()).await;
                }
            )*
        }
    };
}

suite!(
    mentions_are_neutralised,
    identity_comes_only_from_the_event,
    bots_webhooks_and_the_bot_itself_trigger_nothing,
    replays_are_answered_once,
    a_rate_limit_is_honoured_once,
    a_server_error_after_posting_never_duplicates,
    a_dropped_connection_after_posting_never_duplicates,
    long_answers_fit_the_platform,
    edits_replace_the_answer,
    buttons_are_checked_per_user,
    generated_images_are_uploaded,
    a_model_s_generated_image_goes_with_its_answer,
    wise_reads_in_the_allowed_channel_by_its_platform_id,
    a_reviewed_proposal_is_approved_into_one_draft_pull_request,
    an_explicit_change_request_opens_one_draft_pull_request,
    change_requests_from_others_or_edits_never_write,
);
