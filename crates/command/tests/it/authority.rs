//! Generated commands (alias bodies, sub-expressions, `xargs` runs) never carry the caller's
//! admin authority or consent, and every bound of the language is an error, never a
//! half-run pipeline.

use std::sync::Arc;

use yetibot_command::{
    Call, Caller, Category, CommandSpec, Interpreter, Outcome, Plain, Registry, Settings, builtins,
};
use yetibot_history::MemoryAliases;
use yetibot_json_util::{SplitMix64, Value};

/// The built-ins plus three test commands: `secret` (admin-only), `direct` (says whether
/// it was typed as the only stage), and `rows N` (a collection of N rows).
fn registry() -> Registry {
    let mut registry = builtins();
    registry.add(
        CommandSpec::new("secret", &[Category::ADMIN])
            .route(
                None,
                "secret # admin only",
                Plain(|_: &Call<'_>| Outcome::text("granted")),
            )
            .admin_only(),
    );
    registry.add(CommandSpec::new("direct", &[Category::UTIL]).route(
        None,
        "direct # whether typed directly",
        Plain(|call: &Call<'_>| {
            Outcome::text(format!(
                "direct={} generated={} admin={}",
                call.runner.is_direct(),
                call.runner.is_generated(),
                call.runner.is_admin()
            ))
        }),
    ));
    registry.add(CommandSpec::new("rows", &[Category::UTIL]).route(
        Some(r"^(\d+)$"),
        "rows <n> # n rows",
        Plain(|call: &Call<'_>| {
            let n: usize = call.group(1).parse().unwrap_or(0);
            Outcome::Value(Value::Array(
                (0..n).map(|i| Value::String(format!("r{i}"))).collect(),
            ))
        }),
    ));
    registry
}

fn bot(admins: &[&str]) -> Interpreter {
    Interpreter::new(
        registry(),
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(1)),
        Settings {
            admins: admins.iter().map(|a| (*a).to_owned()).collect(),
            ..Settings::default()
        },
    )
}

fn caller(trusted: bool) -> Caller {
    Caller {
        adapter: yetibot_conversation::AdapterKind::Cli,
        connection: "cli".into(),
        room: "#ops".into(),
        user_id: "U1".into(),
        user_name: "op".into(),
        trusted,
        message_id: None,
        platform: None,
    }
}

async fn say(bot: &Interpreter, caller: &Caller, line: &str) -> String {
    bot.run(caller, line).await.messages().join("\n")
}

#[tokio::test]
async fn only_a_trusted_admin_typing_the_command_gets_admin_authority() {
    let admin = bot(&["U1"]);
    assert_eq!(say(&admin, &caller(true), "secret").await, "granted");
    let refused = "Only admins are allowed to execute secret commands";
    // Not an admin, or an identity the platform did not vouch for.
    assert!(
        say(&bot(&[]), &caller(true), "secret")
            .await
            .contains(refused)
    );
    assert!(
        say(&admin, &caller(false), "secret")
            .await
            .contains(refused)
    );
    // Generated: an alias body, a sub-expression, an xargs run.
    admin.run(&caller(true), "alias s = \"secret\"").await;
    assert!(say(&admin, &caller(true), "s").await.contains(refused));
    assert!(
        say(&admin, &caller(true), "echo `secret`")
            .await
            .contains(refused)
    );
    assert!(
        say(&admin, &caller(true), "echo $(secret)")
            .await
            .contains(refused)
    );
    let xargs = admin.run(&caller(true), "rows 2 | xargs secret").await;
    assert_eq!(xargs.value, Value::parse(r#"["",""]"#).expect("json"));
}

#[tokio::test]
async fn generated_commands_are_marked_and_pipes_are_not_direct() {
    let bot = bot(&["U1"]);
    let me = caller(true);
    for (line, shown) in [
        ("direct", "direct=true generated=false admin=true"),
        ("echo x | direct", "direct=false generated=false admin=true"),
        ("echo `direct`", "direct=false generated=true admin=false"),
        // Typed, but with words a command made: not the caller's own words, so not direct.
        (
            "direct $(echo approve)",
            "direct=false generated=false admin=true",
        ),
        ("direct `echo x`", "direct=false generated=false admin=true"),
    ] {
        assert_eq!(say(&bot, &me, line).await, shown, "{line}");
    }
    bot.run(&me, "alias d = direct").await;
    assert_eq!(
        say(&bot, &me, "d").await,
        "direct=false generated=true admin=false"
    );
}

#[tokio::test]
async fn bounds_are_clear_errors() {
    let bot = bot(&[]);
    let me = caller(true);
    // Rows and text.
    assert_eq!(say(&bot, &me, "rows 10000").await.lines().count(), 10_000);
    let too_many = say(&bot, &me, "rows 10001").await;
    assert!(too_many.contains("more than 10,000 rows"), "{too_many}");
    // Alias expansion depth: a chain of nine aliases.
    for i in 0..9 {
        bot.run(&me, &format!("alias a{i} = a{}", i + 1)).await;
    }
    bot.run(&me, "alias a9 = \"echo bottom\"").await;
    let deep = say(&bot, &me, "a0").await;
    assert!(deep.contains("aliases expand more than 8 deep"), "{deep}");
    assert_eq!(say(&bot, &me, "a2").await, "bottom");
    // xargs items.
    let many = say(&bot, &me, "rows 65 | xargs echo").await;
    assert!(many.contains("xargs runs at most 64 items"), "{many}");
    assert_eq!(
        say(&bot, &me, "rows 64 | xargs echo").await.lines().count(),
        64
    );
    // Line, stages and nesting come from the parser.
    let long = say(&bot, &me, &format!("echo {}", "x".repeat(16 * 1024))).await;
    assert!(long.contains("longer than 16384 bytes"), "{long}");
    let stages = say(&bot, &me, &vec!["echo"; 33].join(" | ")).await;
    assert!(stages.contains("at most 32 stages"), "{stages}");
}

/// Nested `repeat`s used to multiply without limit (seven levels made ten million runs in
/// one poll of the future); a line now shares one budget of runs.
#[tokio::test]
async fn nested_repeat_stops_at_the_run_budget() {
    let bot = bot(&[]);
    let reply = bot
        .run(
            &caller(true),
            "repeat 10 repeat 10 repeat 10 repeat 10 repeat 10 echo tick",
        )
        .await;
    let shown = reply.messages().join("\n");
    assert!(
        shown.contains("this line runs more than 1000 commands"),
        "{}",
        &shown[..shown.len().min(300)]
    );
}

/// Generated runs nested inside one another (here a thousand `repeat 1`) used to recurse
/// until the stack overflowed and the process aborted; they now stop at a fixed depth, on
/// the 2 MiB stack of a runtime worker thread.
#[test]
fn deep_generated_nesting_is_an_error_not_a_stack_overflow() {
    let line = format!("{}echo x", "repeat 1 ".repeat(1000));
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            runtime.block_on(async { bot(&[]).run(&caller(true), &line).await.messages() })
        })
        .expect("thread");
    let shown = handle.join().expect("no stack overflow").join("\n");
    assert!(shown.contains("more than 32 deep"), "{shown}");
}

/// Backticks are inline code in chat markdown: quoting a command in prose used to run it
/// with the caller's admin authority and as typed.
#[tokio::test]
async fn embedded_commands_carry_no_admin_authority() {
    let bot = bot(&["U1"]);
    let me = caller(true);
    let replies = bot
        .handle_message(&me, "to see it run `secret` or `direct`")
        .await;
    let shown: Vec<String> = replies.iter().flat_map(|r| r.messages()).collect();
    assert_eq!(shown, ["direct=false generated=true admin=false"]);
}

/// A command word produced by a sub-expression or by the piped text is not one the caller
/// typed (and an alias behind it may have been replaced by anyone).
#[tokio::test]
async fn a_command_word_that_was_not_typed_gets_no_authority() {
    let bot = bot(&["U1"]);
    let me = caller(true);
    let refused = "Only admins are allowed to execute secret commands";
    assert!(say(&bot, &me, "$(echo secret)").await.contains(refused));
    assert!(say(&bot, &me, "echo secret | %s").await.contains(refused));
    assert_eq!(
        say(&bot, &me, "$(echo direct)").await,
        "direct=false generated=true admin=false"
    );
    assert_eq!(say(&bot, &me, "secret").await, "granted");
}

/// `%s` repeated in a stage used to build the substituted line whatever its size (about
/// 8 GB for one line), aborting the process before the size check saw it.
#[tokio::test]
async fn piped_text_that_would_grow_past_the_bound_is_refused_first() {
    let bot = bot(&[]);
    let me = caller(true);
    let line = format!(
        "rows 60 | join {} | echo {}",
        "y".repeat(16_000),
        "%s".repeat(100)
    );
    let shown = say(&bot, &me, &line).await;
    assert!(
        shown.contains("longer than 1 MiB"),
        "{}",
        &shown[..shown.len().min(300)]
    );
    assert!(
        shown.chars().count() < 600,
        "the error quotes only the start of the stage"
    );
    let render = say(
        &bot,
        &me,
        &format!("rows 10000 | render {}", "{{.}}".repeat(3000)),
    )
    .await;
    assert!(
        render.contains("would pass 1 MiB"),
        "{}",
        &render[..render.len().min(300)]
    );
}

/// Records are handed to a command only when they pair with its rows one for one: `xargs`
/// used to give the lines of new text the records of an earlier collection.
#[tokio::test]
async fn records_that_do_not_pair_with_the_rows_are_not_handed_over() {
    let bot = bot(&[]);
    let reply = bot
        .run(
            &caller(true),
            "rows 3 | sort | echo two\nlines | xargs data",
        )
        .await;
    // Each run's data is its own item, never the record of row 0 or 1 of `rows`.
    assert_eq!(reply.messages(), ["two\nlines"]);
}

/// One chat message runs at most five embedded commands.
#[tokio::test]
async fn embedded_commands_per_message_are_capped() {
    let bot = bot(&[]);
    let text = "`echo a` ".repeat(50);
    let replies = bot.handle_message(&caller(true), &text).await;
    assert_eq!(replies.len(), 5);
}

/// The prefix is removed once: `!!echo double` is not `echo double`.
#[tokio::test]
async fn the_prefix_is_removed_once() {
    let bot = bot(&[]);
    let replies = bot.handle_message(&caller(true), "!!echo double").await;
    let shown: Vec<String> = replies.iter().flat_map(|r| r.messages()).collect();
    assert_ne!(shown, ["double"]);
}
