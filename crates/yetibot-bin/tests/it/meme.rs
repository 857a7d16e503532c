//! `meme` through `yetibot run`, against the fake Imgflip API of `provider-fixture` on
//! loopback (`:imgflip :api-url` points at it): upstream Yetibot's command forms, the
//! catalog-then-search order, the native tool through a tool-capable model, and every
//! failure (a refused login whose message must not be shown, a credential in a caption, a
//! 5xx after a caption request, search without Imgflip's premium plan, no account).

use provider_fixture::imgflip::{self, Imgflip};
use provider_fixture::{End, Fixture, Recorded, Reply};
use serde_json::Value;

use crate::{Configured, printed};

const USER: &str = "yetibot-memes";
/// The account's password: it may appear only in the form Imgflip receives.
const PASSWORD: &str = "imgflip-password-canary-93f1";

/// A bot whose Imgflip account (with `password`) is on the fixture; `extra` goes inside
/// `:yetibot`.
fn imgflip(fixture: &Fixture, password: &str, extra: &str) -> Configured {
    let api = fixture.url("/imgflip");
    Configured::new(&format!(
        r#"{{:yetibot {{:imgflip {{:username "{USER}" :password "{password}" :api-url "{api}"}} {extra}}}}}"#
    ))
}

async fn fake(imgflip: &Imgflip) -> Fixture {
    let fixture = Fixture::start().await.expect("fixture");
    imgflip.mount(&fixture, "/imgflip");
    fixture
}

/// Runs `line`, asserting success and that neither the password nor Imgflip's own error
/// words were printed; returns standard output.
async fn answer(setup: &Configured, line: &str) -> String {
    let out = setup.run(&[line]).await;
    assert_eq!(out.status.code(), Some(0), "{line}: {}", printed(&out));
    assert!(!printed(&out).contains(PASSWORD));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `line`, asserting failure and that neither the password nor Imgflip's error words
/// were printed; returns everything printed.
async fn failure(setup: &Configured, line: &str) -> String {
    let out = setup.run(&[line]).await;
    assert_ne!(out.status.code(), Some(0), "{line}: {}", printed(&out));
    let text = printed(&out);
    assert!(!text.contains(PASSWORD), "{text}");
    assert!(!text.contains(imgflip::ERROR_CANARY), "{text}");
    text
}

fn paths(fixture: &Fixture) -> Vec<String> {
    fixture.requests().into_iter().map(|r| r.path).collect()
}

fn captions(fixture: &Fixture) -> Vec<Vec<(String, String)>> {
    fixture
        .requests()
        .iter()
        .filter(|r| r.path == "/imgflip/caption_image")
        .map(imgflip::form)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popular_and_search_list_templates_as_rows_with_records() {
    let fake_imgflip = Imgflip::new(USER, PASSWORD);
    let fixture = fake(&fake_imgflip).await;
    let setup = imgflip(&fixture, PASSWORD, "");

    let popular = answer(&setup, "meme popular").await;
    let names: Vec<&str> = imgflip::POPULAR.iter().map(|(_, name)| *name).collect();
    assert_eq!(popular, format!("{}\n", names.join("\n")));
    assert_eq!(answer(&setup, "meme popular | count").await, "5\n");
    let picked = answer(&setup, "meme popular | random").await;
    assert!(names.contains(&picked.trim_end()), "{picked}");
    assert_eq!(
        answer(&setup, "meme popular | head | data $.id").await,
        "181913649\n"
    );

    // A name in the catalog: no search request.
    assert_eq!(
        answer(&setup, "meme search DRAKE").await,
        "Drake Hotline Bling\n"
    );
    assert!(!paths(&fixture).iter().any(|p| p.ends_with("search_memes")));
    // None in the catalog: exactly one search page.
    assert_eq!(
        answer(&setup, "meme search yeti").await,
        "Yeti Deploys On Friday\nYeti Reads The Logs\n"
    );
    let searches: Vec<Recorded> = fixture
        .requests()
        .into_iter()
        .filter(|r| r.path == "/imgflip/search_memes")
        .collect();
    assert_eq!(searches.len(), 1);
    let form = imgflip::form(&searches[0]);
    assert_eq!(imgflip::field(&form, "query"), Some("yeti"));
    assert_eq!(imgflip::field(&form, "username"), Some(USER));
    assert!(
        failure(&setup, "meme search no such template")
            .await
            .contains("no template matches")
    );
    // Usage for a form that is none of these, before anything is sent.
    let before = fixture.requests().len();
    let out = answer(&setup, "meme just some words").await;
    assert!(out.contains("meme popular"), "{out}");
    assert_eq!(fixture.requests().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_by_name_or_id_is_captioned_and_answered_with_its_url() {
    let fake_imgflip = Imgflip::new(USER, PASSWORD);
    let fixture = fake(&fake_imgflip).await;
    let setup = imgflip(&fixture, PASSWORD, "");

    assert_eq!(
        answer(&setup, "meme drake: deploy on Friday / what could go wrong").await,
        "https://i.imgflip.com/181913649-1.jpg\n"
    );
    let sent = captions(&fixture);
    assert_eq!(sent.len(), 1);
    assert_eq!(imgflip::field(&sent[0], "template_id"), Some("181913649"));
    assert_eq!(imgflip::field(&sent[0], "text0"), Some("deploy on Friday"));
    assert_eq!(
        imgflip::field(&sent[0], "text1"),
        Some("what could go wrong")
    );
    assert_eq!(imgflip::field(&sent[0], "password"), Some(PASSWORD));

    // By ID: no catalog read; the caption goes as typed, form-encoded.
    let before = fixture.count("/imgflip/get_memes");
    assert_eq!(
        answer(&setup, "meme 87743020: 100% & \"quoted\" = yes / ").await,
        "https://i.imgflip.com/87743020-2.jpg\n"
    );
    assert_eq!(fixture.count("/imgflip/get_memes"), before);
    let sent = captions(&fixture);
    assert_eq!(
        imgflip::field(&sent[1], "text0"),
        Some("100% & \"quoted\" = yes")
    );
    assert_eq!(imgflip::field(&sent[1], "text1"), Some(""));

    // A name only search knows; the data keeps the page and the template.
    assert_eq!(
        answer(
            &setup,
            "meme yeti reads the logs: / all of them | data $.template.id"
        )
        .await,
        "99990002\n"
    );
    assert_eq!(
        answer(&setup, "meme change my mind: tabs | data $.page_url").await,
        "https://imgflip.com/i/129242436-4\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_specific_and_never_show_the_password_or_imgflips_words() {
    let fake_imgflip = Imgflip::new(USER, PASSWORD);
    let fixture = fake(&fake_imgflip).await;

    // A wrong password: Imgflip's refusal is named, its message is not shown.
    let wrong = imgflip(&fixture, "imgflip-wrong-password-1", "");
    let out = failure(&wrong, "meme drake: a / b").await;
    assert!(out.contains("user name or password"), "{out}");
    assert!(!out.contains("imgflip-wrong-password-1"), "{out}");

    // A caption quoting the password is refused before anything is sent.
    let setup = imgflip(&fixture, PASSWORD, "");
    let before = fixture.requests().len();
    let out = failure(&setup, &format!("meme 181913649: {PASSWORD} / x")).await;
    assert!(out.contains("quotes a configured credential"), "{out}");
    assert_eq!(fixture.requests().len(), before);

    // Captions over 1,000 characters, or both empty: usage-level errors, nothing sent.
    let long = "x".repeat(1001);
    assert!(
        failure(&setup, &format!("meme 181913649: {long}"))
            .await
            .contains("at most 1000 characters")
    );
    assert!(
        failure(&setup, "meme 181913649: / ")
            .await
            .contains("usage")
    );
    assert_eq!(fixture.requests().len(), before);

    // Search without Imgflip's premium plan says so.
    let fixture_plain = fake(&Imgflip::new(USER, PASSWORD).without_search()).await;
    let plain = imgflip(&fixture_plain, PASSWORD, "");
    let out = failure(&plain, "meme search yeti").await;
    assert!(out.contains("API Premium"), "{out}");

    // No account.
    let none = Configured::new("{:yetibot {}}");
    let out = failure(&none, "meme popular").await;
    assert!(out.contains(":imgflip :username"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caption_that_fails_after_sending_is_not_retried() {
    let fixture = Fixture::start().await.expect("fixture");
    fixture.route(
        "/imgflip/caption_image",
        Reply::status_json(500, format!(r#"{{"error":"{}"}}"#, imgflip::ERROR_CANARY)),
    );
    let setup = imgflip(&fixture, PASSWORD, "");
    let out = failure(&setup, "meme 181913649: a / b").await;
    assert!(out.contains("500"), "{out}");
    assert_eq!(fixture.count("/imgflip/caption_image"), 1);

    let cut = Fixture::start().await.expect("fixture");
    cut.route(
        "/imgflip/caption_image",
        Reply::json("{}").ending(End::Abort),
    );
    let setup = imgflip(&cut, PASSWORD, "");
    let out = failure(&setup, "meme 181913649: a / b").await;
    assert!(out.contains("may have been made"), "{out}");
    assert_eq!(cut.count("/imgflip/caption_image"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_searches_and_captions_for_a_model_and_is_listed_only_when_configured() {
    let fake_imgflip = Imgflip::new(USER, PASSWORD);
    let fixture = fake(&fake_imgflip).await;
    let chat = fixture.url("/v1");
    let provider = format!(r#":ai {{:providers [{{:name "local" :url "{chat}" :model "m1"}}]}}"#);
    let setup = imgflip(&fixture, PASSWORD, &provider);

    let listed = answer(&setup, "ai tools yetibot/meme").await;
    assert!(
        listed.starts_with("`yetibot/meme`") && listed.contains("template_id"),
        "{listed}"
    );
    let unconfigured = Configured::new(&format!("{{:yetibot {{{provider}}}}}"));
    assert!(
        !answer(&unconfigured, "ai tools")
            .await
            .contains("yetibot/meme")
    );

    for reply in [
        provider_fixture::script::chat_tool_call(
            "c1",
            "yetibot__meme",
            r#"{"action": "search", "query": "drake"}"#,
        ),
        provider_fixture::script::chat_tool_call(
            "c2",
            "yetibot__meme",
            r#"{"action": "generate", "template_id": "181913649", "top": "deploy on Friday", "bottom": "deploy on Monday"}"#,
        ),
        provider_fixture::script::chat_completion("Here: https://i.imgflip.com/181913649-1.jpg"),
    ] {
        fixture.route("/v1/chat/completions", Reply::json(reply));
    }
    let out = answer(&setup, "ai Make a Drake meme about deploying on Friday.").await;
    assert!(
        out.starts_with("Here: https://i.imgflip.com/181913649-1.jpg"),
        "{out}"
    );
    let results = provider_fixture::script::tool_results(&fixture, "/v1/chat/completions");
    assert_eq!(results.len(), 2, "{results:?}");
    let found: Value = serde_json::from_str(&results[0]).expect("JSON");
    assert_eq!(found["source"], "popular");
    assert_eq!(
        found["templates"][0],
        serde_json::json!({"id": "181913649", "name": "Drake Hotline Bling"})
    );
    let made: Value = serde_json::from_str(&results[1]).expect("JSON");
    assert_eq!(made["url"], "https://i.imgflip.com/181913649-1.jpg");
    let sent = captions(&fixture);
    assert_eq!(imgflip::field(&sent[0], "text1"), Some("deploy on Monday"));
    // The model never sees the password.
    for request in fixture.requests() {
        if request.path == "/v1/chat/completions" {
            assert!(!String::from_utf8_lossy(&request.body).contains(PASSWORD));
        }
    }
}
