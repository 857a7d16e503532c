//! Imgflip's API as the `meme` command and tool use it: the popular-template catalog
//! (`GET /get_memes`), one page of template search (`POST /search_memes`) and captioning
//! (`POST /caption_image`), with the account's user name and password as form fields. Every
//! reply is Imgflip's envelope, `{"success": true, "data": ...}` or `{"success": false,
//! "error_message": ...}`; the error message is read only to tell a refused login from other
//! refusals and is never shown.

use serde_json::Value;

use super::ImgflipAccount;

/// The name Imgflip requests carry in errors.
pub(crate) const IMGFLIP: &str = "Imgflip";
/// The largest reply read.
pub(crate) const MAX_REPLY_BYTES: usize = 1 << 20;
/// The most templates read from one reply; Imgflip's catalog has 100.
pub(crate) const MAX_TEMPLATES: usize = 1_000;
/// The longest template name kept, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 200;
/// The longest template name read, in characters: a name is redacted of credentials before
/// it is cut to [`MAX_NAME_CHARS`].
const MAX_NAME_READ_CHARS: usize = 2_000;
/// The longest template ID, in digits.
pub(crate) const MAX_ID_DIGITS: usize = 20;
/// The longest image or page URL kept, in characters.
pub(crate) const MAX_URL_CHARS: usize = 2_048;

/// One meme template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    /// Imgflip's ID: ASCII digits.
    pub(crate) id: String,
    /// Its name, on one line.
    pub(crate) name: String,
    /// The blank template's image, when Imgflip gives a usable HTTPS URL.
    pub(crate) url: Option<String>,
    /// How many text boxes it has, when given.
    pub(crate) box_count: Option<u64>,
}

impl Template {
    /// The template as data.
    pub(crate) fn to_json(&self) -> Value {
        serde_json::json!({
            "id": self.id,
            "name": self.name,
            "url": self.url,
            "box_count": self.box_count,
        })
    }
}

/// A captioned meme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Meme {
    /// The image.
    pub(crate) url: String,
    /// Imgflip's page for it, when given.
    pub(crate) page_url: Option<String>,
}

/// Why a reply gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// `success: false`; `login` when Imgflip's message is about the account.
    Refused { login: bool },
    /// Not the documented shape.
    Malformed(&'static str),
}

/// Whether `text` is an Imgflip template ID.
pub(crate) fn is_template_id(text: &str) -> bool {
    (1..=MAX_ID_DIGITS).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

/// The catalog's URL.
pub(crate) fn popular_url(account: &ImgflipAccount) -> String {
    format!("{}/get_memes", account.api_url())
}

/// Search's URL and form.
pub(crate) fn search_request(account: &ImgflipAccount, query: &str) -> (String, Vec<u8>) {
    let form = form(account, &[("query", query), ("include_nsfw", "0")]);
    (format!("{}/search_memes", account.api_url()), form)
}

/// Captioning's URL and form.
pub(crate) fn caption_request(
    account: &ImgflipAccount,
    template_id: &str,
    top: &str,
    bottom: &str,
) -> (String, Vec<u8>) {
    let form = form(
        account,
        &[
            ("template_id", template_id),
            ("text0", top),
            ("text1", bottom),
        ],
    );
    (format!("{}/caption_image", account.api_url()), form)
}

fn form(account: &ImgflipAccount, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("username", account.username());
    form.append_pair("password", account.password().expose());
    for (name, value) in fields {
        form.append_pair(name, value);
    }
    form.finish().into_bytes()
}

/// The envelope's `data`.
fn data(reply: &[u8]) -> Result<Value, Problem> {
    let value: Value =
        serde_json::from_slice(reply).map_err(|_| Problem::Malformed("the reply is not JSON"))?;
    let Value::Object(mut object) = value else {
        return Err(Problem::Malformed("the reply is not a JSON object"));
    };
    match object.get("success") {
        Some(Value::Bool(true)) => object
            .remove("data")
            .ok_or(Problem::Malformed("the reply has no data")),
        Some(Value::Bool(false)) => {
            let message = object
                .get("error_message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase();
            let login = ["username", "password", "login"]
                .iter()
                .any(|word| message.contains(word));
            Err(Problem::Refused { login })
        }
        _ => Err(Problem::Malformed(
            "the reply does not say whether it succeeded",
        )),
    }
}

/// The templates of a catalog or search reply (`data.memes`), in Imgflip's order. Entries
/// without a usable ID or name are left out; at most [`MAX_TEMPLATES`] are read.
pub(crate) fn templates(reply: &[u8]) -> Result<Vec<Template>, Problem> {
    let data = data(reply)?;
    let Some(Value::Array(memes)) = data.get("memes") else {
        return Err(Problem::Malformed("the reply has no template list"));
    };
    Ok(memes
        .iter()
        .take(MAX_TEMPLATES)
        .filter_map(template)
        .collect())
}

fn template(entry: &Value) -> Option<Template> {
    let id = match entry.get("id")? {
        Value::String(id) => id.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    if !is_template_id(&id) {
        return None;
    }
    let name = crate::args::one_line(entry.get("name")?.as_str()?, MAX_NAME_READ_CHARS);
    if name.is_empty() {
        return None;
    }
    Some(Template {
        id,
        name,
        url: entry.get("url").and_then(Value::as_str).and_then(https_url),
        box_count: entry.get("box_count").and_then(Value::as_u64),
    })
}

/// The meme of a caption reply (`data.url`, `data.page_url`).
pub(crate) fn meme(reply: &[u8]) -> Result<Meme, Problem> {
    let data = data(reply)?;
    let url = data
        .get("url")
        .and_then(Value::as_str)
        .and_then(https_url)
        .ok_or(Problem::Malformed("the reply has no usable image URL"))?;
    Ok(Meme {
        url,
        page_url: data
            .get("page_url")
            .and_then(Value::as_str)
            .and_then(https_url),
    })
}

/// `text` as an absolute HTTPS URL without credentials, at most [`MAX_URL_CHARS`].
fn https_url(text: &str) -> Option<String> {
    if text.chars().count() > MAX_URL_CHARS {
        return None;
    }
    let url = url::Url::parse(text).ok()?;
    (url.scheme() == "https"
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.username().is_empty()
        && url.password().is_none())
    .then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use yetibot_redaction::Secret;

    fn account() -> ImgflipAccount {
        ImgflipAccount::new(
            "http://127.0.0.1:9/",
            "bot",
            Secret::new("pw&=x".to_owned()),
        )
    }

    #[test]
    fn forms_are_url_encoded_and_below_the_api_base() {
        let (url, form) = caption_request(&account(), "61579", "one & two", "");
        assert_eq!(url, "http://127.0.0.1:9/caption_image");
        assert_eq!(
            String::from_utf8(form).unwrap(),
            "username=bot&password=pw%26%3Dx&template_id=61579&text0=one+%26+two&text1="
        );
        let (url, _) = search_request(&account(), "cat");
        assert_eq!(url, "http://127.0.0.1:9/search_memes");
        assert_eq!(popular_url(&account()), "http://127.0.0.1:9/get_memes");
    }

    #[test]
    fn templates_keep_only_usable_entries() {
        let reply = br#"{"success":true,"data":{"memes":[
            {"id":"181913649","name":"Drake\nHotline   Bling","url":"https://i.imgflip.com/30b1gx.jpg","box_count":2},
            {"id":112126428,"name":"Distracted Boyfriend","url":"http://i.imgflip.com/1ur9b0.jpg"},
            {"id":"12a","name":"bad id"},
            {"id":"1","name":"   "},
            {"name":"no id"}
        ]}}"#;
        let templates = templates(reply).unwrap();
        assert_eq!(templates.len(), 2);
        assert_eq!(templates[0].name, "Drake Hotline Bling");
        assert_eq!(templates[0].box_count, Some(2));
        assert_eq!(templates[1].id, "112126428");
        assert_eq!(templates[1].url, None, "plain http is not kept");
    }

    #[test]
    fn envelopes_that_fail_say_how_without_their_words() {
        assert_eq!(
            meme(br#"{"success":false,"error_message":"Invalid username/password combination"}"#),
            Err(Problem::Refused { login: true })
        );
        assert_eq!(
            templates(br#"{"success":false,"error_message":"Premium required"}"#),
            Err(Problem::Refused { login: false })
        );
        for bad in [
            &b"nope"[..],
            b"[]",
            br#"{"data":{}}"#,
            br#"{"success":true}"#,
        ] {
            assert!(matches!(templates(bad), Err(Problem::Malformed(_))));
        }
        assert!(matches!(
            meme(br#"{"success":true,"data":{"url":"javascript:alert(1)"}}"#),
            Err(Problem::Malformed(_))
        ));
        assert_eq!(
            meme(br#"{"success":true,"data":{"url":"https://i.imgflip.com/1.jpg","page_url":"https://imgflip.com/i/1"}}"#),
            Ok(Meme {
                url: "https://i.imgflip.com/1.jpg".into(),
                page_url: Some("https://imgflip.com/i/1".into())
            })
        );
    }

    #[test]
    fn template_ids_are_short_digit_strings() {
        assert!(is_template_id("181913649"));
        for bad in ["", "12a", "-1", "1 2", "123456789012345678901"] {
            assert!(!is_template_id(bad), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn any_reply_is_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = templates(&bytes);
            let _ = meme(&bytes);
        }

    }
}
