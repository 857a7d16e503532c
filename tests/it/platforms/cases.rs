//! The cases of the platform suite, one function each: what happens, and what must then be
//! in the channel. Every case runs on every platform.

use std::time::Duration;

use super::Person::{Alice, Bob, Mallory};
use super::Sender::{Myself, OtherBot, Webhook};
use super::Step::{
    Clef, ClefCalls, Delivered, Edit, Fault, Model, ModelCalls, ModelReply, Posts, PostsApart,
    Press, Pulls, Redeliver, Say, SayAs, SayProposal, ShownOnce, Shows, ShowsInPlace, Uploaded,
};
use super::{Case, Fault as Failing, Step};

/// Mass mentions, user and role mentions, in the model's text and in a person's echoed
/// text, reach the channel as text that notifies nobody (checked on every message).
pub(crate) fn mentions_are_neutralised() -> Case {
    vec![
        Model("Hello @everyone and @here: <@42> <@&7> <!channel> <!here> <@U1>".into()),
        Say(Alice, "!ai --no-tools greet everyone"),
        Shows(&["Hello @everyone and @here"]),
        Say(Alice, "!echo @here <!everyone> <@43> ping"),
        Shows(&["Hello @everyone and @here", "@here <!everyone> <@43> ping"]),
    ]
}

/// Who someone is comes from the event's user ID, never from a display name: Mallory,
/// whose display name is Alice's, cannot use Alice's button.
pub(crate) fn identity_comes_only_from_the_event() -> Case {
    vec![
        Say(Alice, "!echo mine"),
        Shows(&["mine"]),
        Press(Mallory, "Run again"),
        Shows(&["mine", "Only alice can run this command again."]),
    ]
}

/// Other bots, webhooks and the bot's own messages start nothing, paid or not.
pub(crate) fn bots_webhooks_and_the_bot_itself_trigger_nothing() -> Case {
    vec![
        SayAs(OtherBot, "!ai --no-tools spend money"),
        SayAs(Webhook, "!echo from a webhook"),
        SayAs(Myself, "!echo a loop"),
        Say(Alice, "!echo human"),
        Shows(&["human"]),
        ModelCalls(0),
    ]
}

/// Events delivered again after a reconnect are never answered twice, and a paid prompt
/// is never paid twice.
pub(crate) fn replays_are_answered_once() -> Case {
    vec![
        Model("Paid once.".into()),
        Say(Alice, "!ai --no-tools say something"),
        Shows(&["Paid once."]),
        Say(Alice, "!echo cheap"),
        Shows(&["Paid once.", "cheap"]),
        Redeliver,
        Say(Alice, "!echo after"),
        Shows(&["Paid once.", "cheap", "after"]),
        ModelCalls(1),
    ]
}

/// A `429` is waited out as long as asked, then the post is sent once more: one answer.
pub(crate) fn a_rate_limit_is_honoured_once() -> Case {
    vec![
        Fault(Failing::RateLimited { seconds: 1 }),
        Say(Alice, "!echo limited"),
        Shows(&["limited"]),
        Posts(2),
        PostsApart(Duration::from_secs(1)),
    ]
}

/// A server error after the message was made never leaves the answer twice.
pub(crate) fn a_server_error_after_posting_never_duplicates() -> Case {
    vec![
        Fault(Failing::ServerErrorAfterPosting),
        Say(Alice, "!echo exactly once"),
        ShownOnce("exactly once"),
    ]
}

/// A connection dropped after the message was made never leaves the answer twice.
pub(crate) fn a_dropped_connection_after_posting_never_duplicates() -> Case {
    vec![
        Fault(Failing::DroppedAfterPosting),
        Say(Alice, "!echo exactly once"),
        ShownOnce("exactly once"),
    ]
}

/// A long answer, and one long line, reach the channel whole, in messages that each fit
/// the platform.
pub(crate) fn long_answers_fit_the_platform() -> Case {
    let long: String = (1..=400)
        .map(|n| format!("Finding {n}: a line of the report, explained at some length.\n"))
        .collect();
    let line = format!("{}end", "word ".repeat(2_000));
    vec![
        Model(long.clone()),
        Model(line.clone()),
        Say(Alice, "!ai --no-tools tell me everything"),
        Delivered(long),
        Say(Alice, "!ai --no-tools one line please"),
        Delivered(line),
        ModelCalls(2),
    ]
}

/// Editing a command replaces its answer in place.
pub(crate) fn edits_replace_the_answer() -> Case {
    vec![
        Say(Alice, "!echo first"),
        Shows(&["first"]),
        Edit("!echo second"),
        ShowsInPlace(&["second"]),
    ]
}

/// Only the requester may run a command again or confirm the rerun; the confirmation
/// works once.
pub(crate) fn buttons_are_checked_per_user() -> Case {
    vec![
        Say(Alice, "!echo mine"),
        Shows(&["mine"]),
        Press(Bob, "Run again"),
        Shows(&["mine", "Only alice can run this command again."]),
        Press(Alice, "Run again"),
        Shows(&[
            "mine",
            "Only alice can run this command again.",
            "Run `!echo mine` again?",
        ]),
        Press(Bob, "Confirm rerun"),
        Shows(&[
            "mine",
            "Only alice can run this command again.",
            "Run `!echo mine` again?",
            "Only alice can confirm this rerun.",
        ]),
        Press(Alice, "Confirm rerun"),
        Shows(&[
            "mine",
            "Only alice can run this command again.",
            "Only alice can confirm this rerun.",
        ]),
    ]
}

/// `gi` makes an image, which reaches the channel as an upload of exactly its bytes, after
/// the text that names it.
pub(crate) fn generated_images_are_uploaded() -> Case {
    vec![
        Say(Alice, "!gi a yeti commuting by helicopter"),
        Uploaded(provider_fixture::xai_images::GENERATED_PNG),
        ShownOnce("Generated image gi-"),
        ModelCalls(0),
    ]
}

/// A model that calls the `gi` tool answers with its text, and the image it made goes with
/// the answer.
pub(crate) fn a_model_s_generated_image_goes_with_its_answer() -> Case {
    let call = provider_fixture::script::chat_tool_call(
        "c1",
        "yetibot__gi",
        "{\"prompt\":\"a yeti on a helicopter\"}",
    );
    vec![
        ModelReply(call),
        Model("Here is your yeti on a helicopter.".to_owned()),
        Say(
            Alice,
            "!ai Generate a picture of Yetibot commuting by helicopter.",
        ),
        Uploaded(provider_fixture::xai_images::GENERATED_PNG),
        ShownOnce("Here is your yeti on a helicopter."),
        ModelCalls(2),
    ]
}

/// Wise is allowed in this channel by its platform ID (Slack keys rooms by name, which a
/// rename can give to another channel), and reads the configured balance exactly.
pub(crate) fn wise_reads_in_the_allowed_channel_by_its_platform_id() -> Case {
    vec![
        Say(Alice, "!wise balances"),
        ShownOnce("ops: 1234.50 EUR"),
        ModelCalls(0),
    ]
}

/// The model's three turns of a fix: it reads the file, stages the fixed text, and answers.
fn stages_the_fix(answer: &str) -> Vec<Step> {
    let read = provider_fixture::script::chat_tool_call(
        "c1",
        "github-read__get_file_contents",
        r#"{"owner":"your-org","repo":"your-repo","path":"src/example.clj"}"#,
    );
    let stage = serde_json::json!({
        "owner": "your-org", "repo": "your-repo", "base": "main",
        "title": "Fix the greeting's typo", "body": "Corrects helo.",
        "files": [{"path": "src/example.clj", "content": crate::support::AFTER}]
    });
    let stage = provider_fixture::script::chat_tool_call(
        "c2",
        "yetibot__stage_changes",
        &stage.to_string(),
    );
    vec![
        ModelReply(read),
        ModelReply(stage),
        Model(answer.to_owned()),
    ]
}

/// The manual workflow: Alice asks for a proposal, reads every page, Bob cannot approve it,
/// Alice approves, and one draft pull request holds exactly the staged bytes; a
/// redelivery changes nothing.
pub(crate) fn a_reviewed_proposal_is_approved_into_one_draft_pull_request() -> Case {
    let mut case = stages_the_fix("I staged the fix for your review.");
    case.extend([
        Say(
            Alice,
            "!ai --toolset github-pr In your-org/your-repo, fix the typo in src/example.clj and propose a draft PR.",
        ),
        Delivered("nothing has been pushed".to_owned()),
        SayProposal(Alice, "!ai approve {id}"),
        Delivered("before approving it".to_owned()),
        SayProposal(Alice, "!ai proposal {id}"),
        Delivered("Repository: your-org/your-repo".to_owned()),
        SayProposal(Alice, "!ai proposal {id} 2"),
        Delivered("Pull request body, exactly:".to_owned()),
        SayProposal(Alice, "!ai proposal {id} 3"),
        Delivered("File 1/1: \"src/example.clj\" (update, +1 -1)".to_owned()),
        // The rows reach the channel exactly: signs, quotes and escapes unformatted.
        Delivered("- \"(defn greet [] \\\"helo\\\")\\n\"\n+ \"(defn greet [] \\\"hello\\\")\\n\"".to_owned()),
        SayProposal(Bob, "!ai approve {id}"),
        Delivered("of yours here".to_owned()),
        Pulls(0),
        SayProposal(Alice, "!ai approve {id}"),
        Delivered("Opened draft pull request https://github.com/your-org/your-repo/pull/1".to_owned()),
        Pulls(1),
        Redeliver,
        Pulls(1),
        ModelCalls(3),
        ClefCalls(0),
    ]);
    case
}

/// The automatic workflow: Clef finds an explicit change request naming the one approved
/// repository, the model stages, and the bot opens one draft pull request with no review in
/// chat; a redelivery opens nothing more.
pub(crate) fn an_explicit_change_request_opens_one_draft_pull_request() -> Case {
    let mut case = vec![Clef("code_change", 0.97, 0.96)];
    case.extend(stages_the_fix("I fixed the typo."));
    case.extend([
        Say(
            Alice,
            "!ai In your-org/your-repo, fix the typo in src/example.clj",
        ),
        Delivered(
            "Opened draft pull request https://github.com/your-org/your-repo/pull/1".to_owned(),
        ),
        Pulls(1),
        Redeliver,
        Pulls(1),
        ModelCalls(3),
        ClefCalls(1),
    ]);
    case
}

/// Bob is not on the toolset's users, so his identical request is answered normally and
/// never classified; Alice's edit of a message into a change request is not a new message,
/// and a confident change decision below one threshold asks for clarification.
pub(crate) fn change_requests_from_others_or_edits_never_write() -> Case {
    vec![
        Clef("code_change", 0.99, 0.5),
        Model("You would change helo to hello.".to_owned()),
        Model("Edited: you would change helo to hello.".to_owned()),
        Say(
            Bob,
            "!ai In your-org/your-repo, fix the typo in src/example.clj",
        ),
        Delivered("You would change helo to hello.".to_owned()),
        ClefCalls(0),
        Say(
            Alice,
            "!ai In your-org/your-repo, fix the typo in src/example.clj",
        ),
        Delivered("not clearly enough to push a change automatically".to_owned()),
        ClefCalls(1),
        Say(Alice, "!echo hi"),
        Delivered("hi".to_owned()),
        Edit("!ai In your-org/your-repo, please fix the typo in src/example.clj"),
        Delivered("Edited: you would change helo to hello.".to_owned()),
        ClefCalls(1),
        Pulls(0),
        ModelCalls(2),
    ]
}
