//! A fake Imgflip API (`GET /get_memes`, `POST /search_memes`, `POST /caption_image`) in
//! Imgflip's envelope, for one account. Mount it with [`Imgflip::mount`] under a prefix and
//! point `:imgflip :api-url` there.
//!
//! - The popular catalog is [`POPULAR`].
//! - Search (a premium API) answers from [`SEARCHABLE`] the templates whose names contain
//!   the query, ignoring case; with [`Imgflip::without_search`] it refuses as Imgflip does
//!   for accounts without the plan.
//! - Captioning checks the account and the template ID and answers with an image URL made
//!   from the template ID and a counter (`https://i.imgflip.com/<id>-<n>.jpg`).
//! - A wrong user name or password gets `success: false` with a message that names
//!   [`ERROR_CANARY`], which a caller must never show.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::{Fixture, Recorded, Reply};

/// The popular catalog, as `(id, name)`.
pub const POPULAR: &[(&str, &str)] = &[
    ("181913649", "Drake Hotline Bling"),
    ("112126428", "Distracted Boyfriend"),
    ("87743020", "Two Buttons"),
    ("129242436", "Change My Mind"),
    ("124822590", "Left Exit 12 Off Ramp"),
];

/// Templates only search finds.
pub const SEARCHABLE: &[(&str, &str)] = &[
    ("99990001", "Yeti Deploys On Friday"),
    ("99990002", "Yeti Reads The Logs"),
];

/// A marker in every refusal's message.
pub const ERROR_CANARY: &str = "imgflip-error-canary-5d1";

/// The fake's account and switches.
#[derive(Debug, Clone)]
pub struct Imgflip {
    username: String,
    password: String,
    search: bool,
    made: Arc<AtomicUsize>,
}

impl Imgflip {
    /// A fake for the account `username`/`password`.
    #[must_use]
    pub fn new(username: &str, password: &str) -> Self {
        Self {
            username: username.to_owned(),
            password: password.to_owned(),
            search: true,
            made: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Search refused, as for an account without Imgflip's API Premium plan.
    #[must_use]
    pub fn without_search(mut self) -> Self {
        self.search = false;
        self
    }

    /// Answers the three endpoints under `prefix` (such as `/imgflip`) on `fixture`.
    pub fn mount(&self, fixture: &Fixture, prefix: &str) {
        fixture.respond_with(&format!("{prefix}/get_memes"), |_| {
            Reply::json(catalog(POPULAR).to_string())
        });
        let fake = self.clone();
        fixture.respond_with(&format!("{prefix}/search_memes"), move |request| {
            fake.search(request)
        });
        let fake = self.clone();
        fixture.respond_with(&format!("{prefix}/caption_image"), move |request| {
            fake.caption(request)
        });
    }

    fn logged_in(&self, form: &[(String, String)]) -> bool {
        field(form, "username") == Some(self.username.as_str())
            && field(form, "password") == Some(self.password.as_str())
    }

    fn search(&self, request: &Recorded) -> Reply {
        let form = form(request);
        if !self.logged_in(&form) {
            return refusal("Invalid username/password combination");
        }
        if !self.search {
            return refusal("This API endpoint requires an API Premium subscription");
        }
        let query = field(&form, "query").unwrap_or_default().to_lowercase();
        let found: Vec<(&str, &str)> = POPULAR
            .iter()
            .chain(SEARCHABLE)
            .filter(|(_, name)| name.to_lowercase().contains(&query))
            .copied()
            .collect();
        Reply::json(catalog(&found).to_string())
    }

    fn caption(&self, request: &Recorded) -> Reply {
        let form = form(request);
        if !self.logged_in(&form) {
            return refusal("Invalid username/password combination");
        }
        let id = field(&form, "template_id").unwrap_or_default();
        if !POPULAR
            .iter()
            .chain(SEARCHABLE)
            .any(|(known, _)| *known == id)
        {
            return refusal("Template not found");
        }
        let n = self.made.fetch_add(1, Ordering::SeqCst) + 1;
        Reply::json(
            json!({
                "success": true,
                "data": {
                    "url": format!("https://i.imgflip.com/{id}-{n}.jpg"),
                    "page_url": format!("https://imgflip.com/i/{id}-{n}"),
                }
            })
            .to_string(),
        )
    }
}

/// The form fields of a request's body, decoded.
#[must_use]
pub fn form(request: &Recorded) -> Vec<(String, String)> {
    url::form_urlencoded::parse(&request.body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The first value of the field `name`.
#[must_use]
pub fn field<'f>(form: &'f [(String, String)], name: &str) -> Option<&'f str> {
    form.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

fn catalog(templates: &[(&str, &str)]) -> Value {
    let memes: Vec<Value> = templates
        .iter()
        .map(|(id, name)| {
            json!({
                "id": id,
                "name": name,
                "url": format!("https://i.imgflip.com/{id}.jpg"),
                "width": 1200,
                "height": 1200,
                "box_count": 2,
            })
        })
        .collect();
    json!({"success": true, "data": {"memes": memes}})
}

fn refusal(message: &str) -> Reply {
    Reply::json(
        json!({"success": false, "error_message": format!("{message} ({ERROR_CANARY})")})
            .to_string(),
    )
}
