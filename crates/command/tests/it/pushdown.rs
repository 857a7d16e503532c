//! The push-down mechanism: a command sees the plain stages after it that the caller could
//! run, and the stages it says it consumed are skipped.

use std::sync::Arc;

use yetibot_command::{
    Call, Caller, Category, CommandSpec, Interpreter, Outcome, Plain, Registry, Settings, builtins,
};
use yetibot_history::MemoryAliases;
use yetibot_json_util::SplitMix64;

/// `offered` answers with the stages it was offered, joined by `;`, and consumes as many
/// as its argument says (all of them with `all`).
fn registry() -> Registry {
    let mut registry = builtins();
    registry.add(CommandSpec::new("offered", &[Category::UTIL]).route(
        None,
        "offered [n|all] # the stages it may consume",
        Plain(|call: &Call<'_>| {
            let text = call.following.join(";");
            let stages = match call.args.trim() {
                "all" => usize::MAX,
                n => n.parse().unwrap_or(0),
            };
            Outcome::Consumed {
                stages,
                outcome: Box::new(Outcome::text(format!("[{text}]"))),
            }
        }),
    ));
    registry.add(
        CommandSpec::new("secret", &[Category::ADMIN])
            .route(
                None,
                "secret # admin only",
                Plain(|_: &Call<'_>| Outcome::text("s")),
            )
            .admin_only(),
    );
    registry
}

fn bot() -> Interpreter {
    Interpreter::new(
        registry(),
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(1)),
        Settings::default(),
    )
}

fn me() -> Caller {
    Caller {
        adapter: yetibot_conversation::AdapterKind::Cli,
        connection: "cli".into(),
        room: "#room".into(),
        user_id: "U1".into(),
        user_name: "me".into(),
        trusted: true,
        message_id: None,
        platform: None,
    }
}

async fn say(bot: &Interpreter, line: &str) -> String {
    bot.run(&me(), line).await.messages().join("\n")
}

#[tokio::test]
async fn a_command_is_offered_the_plain_runnable_stages_after_it() {
    let bot = bot();
    assert_eq!(say(&bot, "offered").await, "[]");
    // Not consumed: the later stages still run on the result.
    assert_eq!(
        say(&bot, "offered | echo x | echo y").await,
        "y x [echo x;echo y]"
    );
    // Offering stops at a stage with a sub-expression.
    assert_eq!(
        say(&bot, "offered | echo a | echo `echo b` | echo c").await,
        "c b a [echo a]"
    );
    // A command the caller may not run is not offered, so it runs (and refuses).
    assert!(
        say(&bot, "offered 5 | secret")
            .await
            .contains("Only admins are allowed to execute secret commands")
    );
    bot.set_category_disabled("#room", Category::COLLECTION, true);
    assert!(
        say(&bot, "offered all | count")
            .await
            .contains("count commands are disabled in this channel")
    );
}

#[tokio::test]
async fn consumed_stages_are_skipped_and_a_claim_past_the_offer_takes_only_the_offer() {
    let bot = bot();
    assert_eq!(
        say(&bot, "offered 1 | echo x | echo y").await,
        "y [echo x;echo y]"
    );
    assert_eq!(
        say(&bot, "offered all | echo x | echo y").await,
        "[echo x;echo y]"
    );
    assert_eq!(
        say(&bot, "offered all | echo a | echo `echo b` | echo c").await,
        "c b [echo a]",
        "the sub-expression stage was not offered, so it and the rest ran"
    );
}

#[tokio::test]
async fn nothing_is_offered_across_an_alias_or_a_generated_run() {
    let bot = bot();
    say(&bot, r#"alias peek = "offered all""#).await;
    assert_eq!(say(&bot, "peek | echo after").await, "after []");
    assert_eq!(say(&bot, "list a | xargs offered all | join ,").await, "[]");
}
