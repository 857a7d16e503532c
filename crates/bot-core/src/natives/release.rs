//! The `release_info` native tool: the running versions and the release notes bundled with
//! this build. No credential, network or inference is involved.

use std::sync::OnceLock;

use crate::natives::args::ToolArgs;
use serde::Deserialize;
use serde_json::json;

/// The most notes one call returns, and the default.
pub const MAX_RELEASE_NOTES: u32 = 20;

/// The bundled release notes' text.
pub const RELEASE_NOTES_JSON: &str = include_str!("release-notes.json");

/// Why a `release_info` call failed; the message quotes no argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseToolError {
    /// The arguments break the tool's rules.
    #[error("invalid arguments: {0}")]
    InvalidArguments(&'static str),
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

/// Whether `text` is an ISO calendar date, `YYYY-MM-DD`, that exists.
fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

struct Request {
    since: Option<String>,
    limit: usize,
}

fn read(arguments: &str) -> Result<Request, ReleaseToolError> {
    let checked = || -> Result<Request, &'static str> {
        let args = ToolArgs::parse(arguments)?;
        args.only(
            &["since", "limit"],
            "release_info accepts only since and limit",
        )?;
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

/// The `release_info` tool: `{"running": {"app", "core"}, "notes": [...], "has_more"}`, the
/// running application's version (`app_version`, as the embedding program reports it) and
/// this crate's, and the bundled notes dated on or after `since` (inclusive), newest first,
/// at most `limit` (1–20, default 20).
///
/// # Errors
///
/// [`ReleaseToolError`] for invalid arguments.
pub fn release_info_tool(app_version: &str, arguments: &str) -> Result<String, ReleaseToolError> {
    let request = read(arguments)?;
    let matching: Vec<&ReleaseNote> = release_notes()
        .iter()
        .filter(|n| {
            request
                .since
                .as_deref()
                .is_none_or(|s| n.date.as_str() >= s)
        })
        .collect();
    let notes: Vec<serde_json::Value> = matching
        .iter()
        .take(request.limit)
        .map(|n| json!({"date": n.date, "title": n.title, "notes": n.notes}))
        .collect();
    Ok(json!({
        "running": {"app": app_version, "core": env!("CARGO_PKG_VERSION")},
        "notes": notes,
        "has_more": matching.len() > request.limit,
    })
    .to_string())
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
            r#"{"view":"latest"}"#,
            "[]",
        ] {
            assert!(!release_arguments_ok(bad), "{bad}");
            assert!(release_info_tool("1", bad).is_err(), "{bad}");
        }
        assert!(is_iso_date("2024-02-29"));
        assert!(!is_iso_date("2023-02-29"));
        assert!(release_arguments_ok(r#"{"since":"2026-11-01","limit":5}"#));
    }
}
