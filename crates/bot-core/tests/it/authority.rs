//! Generated commands (alias bodies, sub-expressions, `xargs` runs) never carry the caller's
//! admin authority or consent, and every bound of the language is an error, never a
//! half-run pipeline.

use std::sync::Arc;

use yetibot_bot_core::{
    Call, Caller, Category, CommandSpec, Interpreter, MemoryAliases, Outcome, Plain, Registry,
    Settings, builtins,
};
use yetibot_json_util::{SplitMix64, Value};

/// The built-ins plus three test commands: `secret` (admin-only), `direct` (says whether
/// it was typed as the only stage), and `rows N` (a collection of N rows).
fn registry() -> Registry {
    let mut registry = builtins();
    registry.add(
        CommandSpec::new("secret", &[Category::Admin])
            .route(
                None,
                "secret # admin only",
                Plain(|_: &Call<'_>| Outcome::text("granted")),
            )
            .admin_only(),
    );
    registry.add(CommandSpec::new("direct", &[Category::Util]).route(
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
    registry.add(CommandSpec::new("rows", &[Category::Util]).route(
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
        room: "#ops".into(),
        user_id: "U1".into(),
        user_name: "op".into(),
        trusted,
        message_id: None,
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
    assert_eq!(
        say(&bot, &me, "direct").await,
        "direct=true generated=false admin=true"
    );
    assert_eq!(
        say(&bot, &me, "echo x | direct").await,
        "direct=false generated=false admin=true"
    );
    assert_eq!(
        say(&bot, &me, "echo `direct`").await,
        "direct=false generated=true admin=false"
    );
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
