//! The `release_info` native tool: the running versions and the release notes bundled with
//! this build, or with `view: "latest"` the notes a project publishes at a configured feed
//! URL (which describe releases, not necessarily this deployment). No credential or
//! inference is involved.

use std::sync::OnceLock;

use crate::args::{ToolArgs, is_iso_date};
use crate::services::AiServices;
use serde::Deserialize;
use serde_json::json;

/// The most notes one call returns, and the default.
pub const MAX_RELEASE_NOTES: u32 = 20;
/// The largest published feed read, in bytes.
pub const MAX_FEED_BYTES: usize = 256 * 1024;
/// The most releases a published feed may list.
pub const MAX_FEED_RELEASES: usize = 1_000;
/// The longest release title in a published feed, in characters.
pub const MAX_FEED_TITLE_CHARS: usize = 200;
/// The most notes one release of a published feed may carry.
pub const MAX_FEED_NOTES_PER_RELEASE: usize = 64;
/// The longest single note in a published feed, in characters.
pub const MAX_FEED_NOTE_CHARS: usize = 2_000;

/// The bundled release notes' text.
pub const RELEASE_NOTES_JSON: &str = include_str!("release-notes.json");

/// Why a `release_info` call failed; the message quotes no argument, URL or feed content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseToolError {
    /// The arguments break the tool's rules.
    #[error("invalid arguments: {0}")]
    InvalidArguments(&'static str),
    /// `view: "latest"` without a configured feed.
    #[error(
        "no published release feed is configured (:yetibot :release-info :feed-url); the bundled notes are available without view"
    )]
    NoFeed,
    /// The published feed could not be fetched.
    #[error("the published release notes could not be read: {0}")]
    FeedUnavailable(&'static str),
    /// The published feed is not a valid notes document within the bounds.
    #[error("the published release notes are not a valid feed: {0}")]
    FeedInvalid(&'static str),
}

/// One release's notes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReleaseNote {
    /// Its ISO date, `YYYY-MM-DD`.
    pub date: String,
    /// A short title.
    pub title: String,
    /// What changed.
    pub notes: Vec<String>,
}

#[derive(Deserialize)]
struct Notes {
    notes: Vec<ReleaseNote>,
}

/// The bundled notes, newest first (empty if the bundled file does not parse, which the
/// crate's tests rule out).
#[must_use]
pub fn release_notes() -> &'static [ReleaseNote] {
    static NOTES: OnceLock<Vec<ReleaseNote>> = OnceLock::new();
    NOTES.get_or_init(|| {
        let mut notes = serde_json::from_str::<Notes>(RELEASE_NOTES_JSON)
            .map(|n| n.notes)
            .unwrap_or_default();
        notes.sort_by(|a, b| b.date.cmp(&a.date));
        notes
    })
}

/// Reads a published feed's body: the bundled notes' format within the feed bounds, every
/// date a real ISO date. Returns the notes newest first.
///
/// # Errors
///
/// [`ReleaseToolError::FeedInvalid`] with a fixed reason.
pub fn parse_feed(body: &[u8]) -> Result<Vec<ReleaseNote>, ReleaseToolError> {
    let invalid = ReleaseToolError::FeedInvalid;
    if body.len() > MAX_FEED_BYTES {
        return Err(invalid("it is larger than 256 KiB"));
    }
    let text = std::str::from_utf8(body).map_err(|_| invalid("it is not UTF-8 text"))?;
    // The strict reader refuses duplicate keys, so a feed cannot say two things at once.
    let limits = yetibot_json_util::Limits {
        max_bytes: MAX_FEED_BYTES,
        max_depth: 8,
        max_entries: MAX_FEED_RELEASES + 1,
        max_nodes: MAX_FEED_BYTES / 2,
    };
    yetibot_json_util::Value::parse_with_limits(text, &limits)
        .map_err(|_| invalid("it is not one JSON document within the feed's bounds"))?;
    let mut notes = serde_json::from_str::<Notes>(text)
        .map_err(|_| invalid("it is not {\"notes\": [{\"date\", \"title\", \"notes\"}]}"))?
        .notes;
    if notes.len() > MAX_FEED_RELEASES {
        return Err(invalid("it lists more than 1,000 releases"));
    }
    for note in &notes {
        if !is_iso_date(&note.date) {
            return Err(invalid("a release's date is not an ISO date, YYYY-MM-DD"));
        }
        if note.title.trim().is_empty() || note.title.chars().count() > MAX_FEED_TITLE_CHARS {
            return Err(invalid(
                "a release's title is blank or longer than 200 characters",
            ));
        }
        if note.notes.len() > MAX_FEED_NOTES_PER_RELEASE
            || note
                .notes
                .iter()
                .any(|n| n.chars().count() > MAX_FEED_NOTE_CHARS)
        {
            return Err(invalid(
                "a release has more than 64 notes or a note longer than 2,000 characters",
            ));
        }
    }
    notes.sort_by(|a, b| b.date.cmp(&a.date));
    Ok(notes)
}

/// Which notes a call reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// The notes bundled with this build.
    Bundled,
    /// The configured published feed.
    Latest,
}

pub(crate) struct Request {
    pub(crate) view: View,
    since: Option<String>,
    limit: usize,
}

pub(crate) fn read(arguments: &str) -> Result<Request, ReleaseToolError> {
    let checked = || -> Result<Request, &'static str> {
        let args = ToolArgs::parse(arguments)?;
        args.only(
            &["view", "since", "limit"],
            "release_info accepts only view, since and limit",
        )?;
        let view = match args
            .text("view", 1..=16, "view must be \"latest\" or left out")?
            .as_deref()
        {
            None => View::Bundled,
            Some("latest") => View::Latest,
            Some(_) => return Err("view must be \"latest\" or left out"),
        };
        let since = args
            .text("since", 10..=10, "since must be an ISO date, YYYY-MM-DD")?
            .map(|date| {
                if is_iso_date(&date) {
                    Ok(date)
                } else {
                    Err("since must be an ISO date, YYYY-MM-DD")
                }
            })
            .transpose()?;
        let limit = args.integer(
            "limit",
            1..=MAX_RELEASE_NOTES,
            MAX_RELEASE_NOTES,
            "limit must be an integer from 1 to 20",
        )?;
        Ok(Request {
            view,
            since,
            limit: usize::try_from(limit).unwrap_or(20),
        })
    };
    checked().map_err(ReleaseToolError::InvalidArguments)
}

/// Whether `release_info` arguments pass every static rule.
pub(crate) fn release_arguments_ok(arguments: &str) -> bool {
    read(arguments).is_ok()
}

/// The notes dated on or after the request's `since`, newest first, at most its limit, and
/// whether more matched.
fn page(notes: &[ReleaseNote], request: &Request) -> (Vec<serde_json::Value>, bool) {
    let matching: Vec<&ReleaseNote> = notes
        .iter()
        .filter(|n| {
            request
                .since
                .as_deref()
                .is_none_or(|s| n.date.as_str() >= s)
        })
        .collect();
    let page = matching
        .iter()
        .take(request.limit)
        .map(|n| json!({"date": n.date, "title": n.title, "notes": n.notes}))
        .collect();
    (page, matching.len() > request.limit)
}

/// The `release_info` tool over the bundled notes: `{"running": {"app", "core"}, "notes":
/// [...], "has_more"}`, the running application's version (`app_version`, as the
/// embedding program reports it) and this crate's, and the bundled notes dated on or after
/// `since` (inclusive), newest first, at most `limit` (1–20, default 20).
///
/// # Errors
///
/// [`ReleaseToolError`] for invalid arguments, and for `view: "latest"`, which needs
/// [`release_latest_tool`].
pub fn release_info_tool(app_version: &str, arguments: &str) -> Result<String, ReleaseToolError> {
    let request = read(arguments)?;
    if request.view == View::Latest {
        return Err(ReleaseToolError::NoFeed);
    }
    let (notes, has_more) = page(release_notes(), &request);
    Ok(json!({
        "running": {"app": app_version, "core": env!("CARGO_PKG_VERSION")},
        "notes": notes,
        "has_more": has_more,
    })
    .to_string())
}

/// `release_info` with `view: "latest"` over a published feed's body (which the caller
/// fetched, bounded): `{"view": "latest", "running": {...}, "published": [...],
/// "has_more", "note"}`, the published notes paged like the bundled ones and kept apart from
/// the running versions, since a feed may describe releases this deployment does not run.
///
/// # Errors
///
/// [`ReleaseToolError`] for invalid arguments or an invalid feed.
pub fn release_latest_tool(
    app_version: &str,
    arguments: &str,
    feed_body: &[u8],
) -> Result<String, ReleaseToolError> {
    let request = read(arguments)?;
    let published = parse_feed(feed_body)?;
    let (notes, has_more) = page(&published, &request);
    Ok(json!({
        "view": "latest",
        "running": {"app": app_version, "core": env!("CARGO_PKG_VERSION")},
        "published": notes,
        "has_more": has_more,
        "note": "Published notes describe the project's releases; this bot runs the versions under running, which may be older.",
    })
    .to_string())
}

/// Runs one `release_info` call: the bundled notes, or with `view: "latest"` the configured
/// feed, fetched without credentials under the provider client's bounds.
pub(crate) async fn run(
    services: &AiServices,
    arguments: &str,
) -> Result<String, ReleaseToolError> {
    let request = read(arguments)?;
    if request.view == View::Bundled {
        return release_info_tool(services.app_version(), arguments);
    }
    let Some(feed) = &services.release_feed else {
        return Err(ReleaseToolError::NoFeed);
    };
    let body = services
        .client
        .fetch_document("the release feed", feed.url(), MAX_FEED_BYTES)
        .await
        .map_err(|error| {
            use yetibot_ai_providers::Category;
            let reason = match error.category() {
                Category::Timeout => "it timed out",
                Category::Unreachable => "its host is unreachable",
                Category::Redirect => "it answered with a redirect, which is not followed",
                Category::TooLarge => "it is larger than 256 KiB",
                Category::HttpStatus | Category::AccessDenied | Category::RateLimited => {
                    "it answered with an error status"
                }
                _ => "the request failed",
            };
            ReleaseToolError::FeedUnavailable(reason)
        })?;
    release_latest_tool(services.app_version(), arguments, &body)
}

/// What a model is told the `release_info` tool does.
pub(crate) const DESCRIPTION: &str = "Reads the running app and core versions and the release notes bundled with \
    them, newest first. Use it for questions about what is new in Yetibot. With \
    view \"latest\" it reads the project's published notes instead, which may \
    describe releases newer than the one running. since is an inclusive ISO date \
    (YYYY-MM-DD); limit is 1 to 20.";

/// The `release_info` tool's argument schema.
pub(crate) fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "view": {"type": "string", "enum": ["latest"],
                     "description": "Read the published release notes rather than the bundled ones."},
            "since": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                      "description": "Only notes dated on or after this day."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RELEASE_NOTES},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_notes_parse_and_are_dated() {
        let notes: Notes =
            serde_json::from_str(RELEASE_NOTES_JSON).expect("the bundled notes parse");
        assert!(!notes.notes.is_empty());
        assert!(notes.notes.iter().all(|n| is_iso_date(&n.date)));
        assert_eq!(release_notes().len(), notes.notes.len());
        assert!(release_notes().windows(2).all(|w| w[0].date >= w[1].date));
    }

    #[test]
    fn since_is_inclusive_and_limit_bounds_the_page() {
        let newest = &release_notes()[0];
        let all: serde_json::Value =
            serde_json::from_str(&release_info_tool("1.2.3", "{}").expect("notes")).expect("json");
        assert_eq!(all["running"]["app"], "1.2.3");
        assert_eq!(all["running"]["core"], env!("CARGO_PKG_VERSION"));
        assert_eq!(all["notes"][0]["date"], newest.date.as_str());
        let since: serde_json::Value = serde_json::from_str(
            &release_info_tool("1", &format!(r#"{{"since":"{}"}}"#, newest.date)).expect("notes"),
        )
        .expect("json");
        assert!(since["notes"].as_array().is_some_and(|n| !n.is_empty()));
        assert!(
            since["notes"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|n| n["date"].as_str() >= Some(newest.date.as_str()))
        );
        let one: serde_json::Value =
            serde_json::from_str(&release_info_tool("1", r#"{"limit":1}"#).expect("notes"))
                .expect("json");
        assert_eq!(one["notes"].as_array().map(Vec::len), Some(1));
        assert_eq!(one["has_more"], release_notes().len() > 1);
    }

    #[test]
    fn bad_arguments_are_refused() {
        for bad in [
            r#"{"since":"2026-02-30"}"#,
            r#"{"since":"2026-13-01"}"#,
            r#"{"since":"26-01-01"}"#,
            r#"{"since":"2026-1-01"}"#,
            r#"{"limit":0}"#,
            r#"{"limit":21}"#,
            r#"{"view":"newest"}"#,
            r#"{"view":""}"#,
            r#"{"url":"http://x"}"#,
            "[]",
        ] {
            assert!(!release_arguments_ok(bad), "{bad}");
            assert!(release_info_tool("1", bad).is_err(), "{bad}");
        }
        assert!(is_iso_date("2024-02-29"));
        assert!(!is_iso_date("2023-02-29"));
        assert!(release_arguments_ok(r#"{"since":"2026-11-01","limit":5}"#));
        assert!(release_arguments_ok(r#"{"view":"latest","limit":5}"#));
        assert_eq!(
            release_info_tool("1", r#"{"view":"latest"}"#),
            Err(ReleaseToolError::NoFeed)
        );
    }

    #[test]
    fn a_published_feed_is_paged_apart_from_the_running_versions() {
        let feed = br#"{"notes":[{"date":"2027-01-02","title":"Two","notes":["b"]},
                                {"date":"2027-03-01","title":"Three","notes":[]},
                                {"date":"2026-12-31","title":"One","notes":["a"]}]}"#;
        let out: serde_json::Value = serde_json::from_str(
            &release_latest_tool(
                "9.9",
                r#"{"view":"latest","since":"2027-01-01","limit":1}"#,
                feed,
            )
            .expect("latest"),
        )
        .expect("json");
        assert_eq!(out["view"], "latest");
        assert_eq!(out["running"]["app"], "9.9");
        assert_eq!(out["published"][0]["title"], "Three");
        assert_eq!(out["published"].as_array().map(Vec::len), Some(1));
        assert_eq!(out["has_more"], true);
    }

    #[test]
    fn invalid_feeds_are_refused_without_quoting_them() {
        let long_title = format!(
            r#"{{"notes":[{{"date":"2027-01-01","title":"{}","notes":[]}}]}}"#,
            "t".repeat(201)
        );
        let many = format!(
            r#"{{"notes":[{}]}}"#,
            vec![r#"{"date":"2027-01-01","title":"t","notes":[]}"#; 1_001].join(",")
        );
        let huge = format!(r#"{{"notes":[],"pad":"{}"}}"#, "x".repeat(MAX_FEED_BYTES));
        for body in [
            b"secret-canary not json".to_vec(),
            br#"{"notes":[{"date":"2027-02-30","title":"t","notes":[]}]}"#.to_vec(),
            br#"{"notes":[{"date":"2027-01-01","title":" ","notes":[]}]}"#.to_vec(),
            br#"{"notes":[],"notes":[]}"#.to_vec(),
            br#"{"notes":{}}"#.to_vec(),
            vec![0xff, 0xfe],
            long_title.into_bytes(),
            many.into_bytes(),
            huge.into_bytes(),
        ] {
            let error =
                release_latest_tool("1", r#"{"view":"latest"}"#, &body).expect_err("invalid feed");
            assert!(matches!(error, ReleaseToolError::FeedInvalid(_)), "{error}");
            assert!(!error.to_string().contains("canary"));
        }
    }

    #[test]
    fn feed_urls_are_checked_without_being_quoted() {
        use crate::config::ReleaseFeed;
        assert!(ReleaseFeed::new("https://example.org/releases.json").is_ok());
        assert!(ReleaseFeed::new("http://127.0.0.1:8080/feed?x=1").is_ok());
        for bad in [
            "ftp://example.org/x",
            "https://user:pw@example.org/x",
            "https://example.org/x#frag",
            "/relative",
            "",
        ] {
            let reason = ReleaseFeed::new(bad).expect_err(bad);
            assert!(!reason.contains("example"), "{reason}");
        }
        assert_eq!(
            format!("{:?}", ReleaseFeed::new("https://a.b/c").expect("ok")),
            "ReleaseFeed"
        );
    }
}
