//! Reading the GitHub MCP server's results for the host's own use: a commit's SHA from
//! `get_commit`, a file's exact text or a directory's entries from `get_file_contents`, a
//! reference from `create_branch` and `push_files`, a pull request's URL from
//! `create_pull_request`, and a commit's parents from GitHub's REST commit read. Every
//! shape the host does not recognise fails closed: a result that is ambiguous, truncated or
//! of another kind is never taken for an empty file or a missing one.

use serde_json::Value;

use crate::limits::{MAX_DIRECTORY_ENTRIES, MAX_EXISTING_FILE_BYTES};

/// GitHub's text for a path that names no file or directory.
const MISSING_PATH: &str = "Failed to get file contents. The path does not point to a file or directory, or the file does not exist in the repository.";

/// What a `get_file_contents` result holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// A complete UTF-8 text file of at most [`MAX_EXISTING_FILE_BYTES`].
    Text(String),
    /// A directory's entries, fewer than [`MAX_DIRECTORY_ENTRIES`].
    Directory(Vec<DirEntry>),
    /// Nothing at that path.
    Missing,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Its name within the directory.
    pub name: String,
    /// `file`, `dir`, `symlink` or `submodule`.
    pub kind: String,
}

/// Why a result could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// The tool reported an error other than a missing path.
    #[error("GitHub reported an error")]
    ToolError,
    /// Not a shape the host knows.
    #[error("GitHub's reply had an unexpected shape")]
    Unexpected,
    /// A binary file, a symbolic link, a submodule or a file too large to show.
    #[error("the file is not a complete text file")]
    NotText,
    /// A text file over [`MAX_EXISTING_FILE_BYTES`].
    #[error("the existing file is larger than 20,000 bytes")]
    TooLarge,
    /// A directory of [`MAX_DIRECTORY_ENTRIES`] or more entries.
    #[error("the directory has 1,000 or more entries")]
    TooManyEntries,
}

/// The result's `isError` flag and its content blocks.
fn blocks(result: &Value) -> Result<(bool, &Vec<Value>), ShapeError> {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .ok_or(ShapeError::Unexpected)?;
    Ok((is_error, content))
}

/// The text of the result's one text block, when it has exactly one block of text.
fn only_text(content: &[Value]) -> Option<&str> {
    match content {
        [block] if block.get("type").and_then(Value::as_str) == Some("text") => {
            block.get("text").and_then(Value::as_str)
        }
        _ => None,
    }
}

/// Whether `sha` is a full lowercase commit SHA.
pub(crate) fn is_sha(sha: &str) -> bool {
    sha.len() == 40
        && sha
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The JSON document a successful result carries as its one text block.
fn json_text(result: &Value) -> Result<Value, ShapeError> {
    let (is_error, content) = blocks(result)?;
    if is_error {
        return Err(ShapeError::ToolError);
    }
    let text = only_text(content).ok_or(ShapeError::Unexpected)?;
    serde_json::from_str(text).map_err(|_| ShapeError::Unexpected)
}

/// The commit SHA of a successful `get_commit` result (a minimal commit: `sha` and other
/// fields, parents absent).
pub(crate) fn commit_sha(result: &Value) -> Result<String, ShapeError> {
    let commit = json_text(result)?;
    match commit.get("sha").and_then(Value::as_str) {
        Some(sha) if is_sha(sha) => Ok(sha.to_owned()),
        _ => Err(ShapeError::Unexpected),
    }
}

/// What a `get_file_contents` result holds.
pub(crate) fn contents(result: &Value) -> Result<Contents, ShapeError> {
    let (is_error, content) = blocks(result)?;
    if is_error {
        return match only_text(content) {
            Some(text) if text.trim() == MISSING_PATH => Ok(Contents::Missing),
            _ => Err(ShapeError::ToolError),
        };
    }
    match content.as_slice() {
        // A file: GitHub's note, then the file as an embedded resource.
        [note, resource]
            if note.get("type").and_then(Value::as_str) == Some("text")
                && resource.get("type").and_then(Value::as_str) == Some("resource") =>
        {
            let note = note.get("text").and_then(Value::as_str).unwrap_or_default();
            let inner = resource.get("resource").ok_or(ShapeError::Unexpected)?;
            if inner.get("blob").is_some() {
                return Err(ShapeError::NotText);
            }
            let text = match inner.get("text") {
                Some(Value::String(text)) => text.clone(),
                // GitHub leaves `text` out of an empty file's resource; only its own note
                // says so, and nothing else is taken for empty.
                None if note.starts_with("successfully downloaded empty file") => String::new(),
                _ => return Err(ShapeError::Unexpected),
            };
            if !note.starts_with("successfully downloaded text file")
                && !note.starts_with("successfully downloaded empty file")
            {
                return Err(ShapeError::NotText);
            }
            if text.len() > MAX_EXISTING_FILE_BYTES {
                return Err(ShapeError::TooLarge);
            }
            // A NUL is binary; U+FFFD is what the server's JSON encoding made of bytes that
            // were not UTF-8, so the text is not the file.
            if text.contains(['\0', '\u{fffd}']) {
                return Err(ShapeError::NotText);
            }
            Ok(Contents::Text(text))
        }
        [_] => {
            let text = only_text(content).ok_or(ShapeError::Unexpected)?;
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Array(entries)) => directory(&entries),
                // A symbolic link or a submodule is one JSON object.
                Ok(Value::Object(_)) => Err(ShapeError::NotText),
                // A suffix match ("Resolved potential matches ...") or a file too large to
                // show: never the file asked for.
                _ => Err(ShapeError::Unexpected),
            }
        }
        _ => Err(ShapeError::Unexpected),
    }
}

fn directory(entries: &[Value]) -> Result<Contents, ShapeError> {
    if entries.len() >= MAX_DIRECTORY_ENTRIES {
        return Err(ShapeError::TooManyEntries);
    }
    entries
        .iter()
        .map(|entry| {
            let name = entry.get("name").and_then(Value::as_str);
            let kind = entry.get("type").and_then(Value::as_str);
            match (name, kind) {
                (Some(name), Some(kind)) => Ok(DirEntry {
                    name: name.to_owned(),
                    kind: kind.to_owned(),
                }),
                _ => Err(ShapeError::Unexpected),
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Contents::Directory)
}

/// The commit SHA a `create_branch` or `push_files` result's reference points at, when the
/// reference is `refs/heads/<branch>`.
pub(crate) fn reference_sha(result: &Value, branch: &str) -> Result<String, ShapeError> {
    let reference = json_text(result)?;
    let name = reference.get("ref").and_then(Value::as_str);
    let sha = reference.pointer("/object/sha").and_then(Value::as_str);
    match (name, sha) {
        (Some(name), Some(sha)) if name == format!("refs/heads/{branch}") && is_sha(sha) => {
            Ok(sha.to_owned())
        }
        _ => Err(ShapeError::Unexpected),
    }
}

/// The pull request's web URL from a `create_pull_request` result (`{id, url}`).
pub(crate) fn pull_request_url(result: &Value, repository: &str) -> Result<String, ShapeError> {
    let reply = json_text(result)?;
    let url = reply
        .get("url")
        .or_else(|| reply.get("html_url"))
        .and_then(Value::as_str)
        .ok_or(ShapeError::Unexpected)?;
    // Only a URL of this repository's pull requests is shown as the result.
    let expected = format!("https://github.com/{repository}/pull/");
    let number = url
        .get(..expected.len())
        .filter(|start| start.eq_ignore_ascii_case(&expected))
        .map(|_| &url[expected.len()..]);
    match number {
        Some(n) if !n.is_empty() && n.len() <= 12 && n.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(url.to_owned())
        }
        _ => Err(ShapeError::Unexpected),
    }
}

/// The SHA and parent SHAs of GitHub's REST commit object.
pub(crate) fn rest_commit(body: &[u8]) -> Result<(String, Vec<String>), ShapeError> {
    let commit: Value = serde_json::from_slice(body).map_err(|_| ShapeError::Unexpected)?;
    let sha = commit
        .get("sha")
        .and_then(Value::as_str)
        .filter(|sha| is_sha(sha))
        .ok_or(ShapeError::Unexpected)?;
    let parents = commit
        .get("parents")
        .and_then(Value::as_array)
        .ok_or(ShapeError::Unexpected)?
        .iter()
        .map(|parent| {
            parent
                .get("sha")
                .and_then(Value::as_str)
                .filter(|sha| is_sha(sha))
                .map(str::to_owned)
                .ok_or(ShapeError::Unexpected)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((sha.to_owned(), parents))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn text(value: &str) -> Value {
        json!({"content": [{"type": "text", "text": value}]})
    }

    #[test]
    fn commits_and_references_are_read_strictly() {
        assert_eq!(
            commit_sha(&text(&json!({"sha": SHA, "html_url": "x"}).to_string())),
            Ok(SHA.to_owned())
        );
        assert_eq!(
            commit_sha(&text(&json!({"sha": "abc"}).to_string())),
            Err(ShapeError::Unexpected)
        );
        let reference = json!({"ref": "refs/heads/b", "object": {"sha": SHA}}).to_string();
        assert_eq!(reference_sha(&text(&reference), "b"), Ok(SHA.to_owned()));
        assert_eq!(
            reference_sha(&text(&reference), "other"),
            Err(ShapeError::Unexpected)
        );
        let refused = json!({"content": [{"type": "text", "text": "no"}], "isError": true});
        assert_eq!(reference_sha(&refused, "b"), Err(ShapeError::ToolError));
    }

    #[test]
    fn file_contents_fail_closed() {
        let file = |note: &str, resource: Value| {
            json!({"content": [{"type": "text", "text": note},
                               {"type": "resource", "resource": resource}]})
        };
        assert_eq!(
            contents(&file(
                "successfully downloaded text file (SHA: 1)",
                json!({"uri": "u", "text": "a\r\nb"})
            )),
            Ok(Contents::Text("a\r\nb".to_owned()))
        );
        assert_eq!(
            contents(&file(
                "successfully downloaded empty file (SHA: 1)",
                json!({"uri": "u"})
            )),
            Ok(Contents::Text(String::new()))
        );
        // A text note without text is not taken for an empty file.
        assert_eq!(
            contents(&file(
                "successfully downloaded text file (SHA: 1)",
                json!({"uri": "u"})
            )),
            Err(ShapeError::Unexpected)
        );
        assert_eq!(
            contents(&file(
                "successfully downloaded binary file (SHA: 1)",
                json!({"uri": "u", "blob": "AA=="})
            )),
            Err(ShapeError::NotText)
        );
        assert_eq!(
            contents(&file(
                "successfully downloaded text file (SHA: 1)",
                json!({"uri": "u", "text": "x".repeat(20_001)})
            )),
            Err(ShapeError::TooLarge)
        );
        // Bytes that were not UTF-8 arrive as U+FFFD: not the file.
        assert_eq!(
            contents(&file(
                "successfully downloaded text file (SHA: 1)",
                json!({"uri": "u", "text": "caf\u{fffd}"})
            )),
            Err(ShapeError::NotText)
        );
        let missing = json!({"content": [{"type": "text", "text": MISSING_PATH}], "isError": true});
        assert_eq!(contents(&missing), Ok(Contents::Missing));
        let other_error =
            json!({"content": [{"type": "text", "text": "rate limited"}], "isError": true});
        assert_eq!(contents(&other_error), Err(ShapeError::ToolError));
        assert_eq!(
            contents(&text("Resolved potential matches in the repository tree")),
            Err(ShapeError::Unexpected)
        );
        assert_eq!(
            contents(&text(
                &json!({"type": "symlink", "target": "/etc"}).to_string()
            )),
            Err(ShapeError::NotText)
        );
        let listing = json!([{"type": "file", "name": "a.clj"}, {"type": "dir", "name": "b"}]);
        assert_eq!(
            contents(&text(&listing.to_string())),
            Ok(Contents::Directory(vec![
                DirEntry {
                    name: "a.clj".to_owned(),
                    kind: "file".to_owned()
                },
                DirEntry {
                    name: "b".to_owned(),
                    kind: "dir".to_owned()
                },
            ]))
        );
        let big: Vec<Value> = (0..1000)
            .map(|i| json!({"type": "file", "name": format!("f{i}")}))
            .collect();
        assert_eq!(
            contents(&text(&Value::Array(big).to_string())),
            Err(ShapeError::TooManyEntries)
        );
    }

    #[test]
    fn pull_request_urls_must_belong_to_the_repository() {
        let ok = text(&json!({"id": "1", "url": "https://github.com/o/r/pull/12"}).to_string());
        assert_eq!(
            pull_request_url(&ok, "o/r"),
            Ok("https://github.com/o/r/pull/12".to_owned())
        );
        for url in [
            "https://github.com/o/other/pull/12",
            "https://evil.example/o/r/pull/12",
            "https://github.com/o/r/pull/12/../../x",
            "https://github.com/o/r/pull/",
        ] {
            let reply = text(&json!({"id": "1", "url": url}).to_string());
            assert_eq!(
                pull_request_url(&reply, "o/r"),
                Err(ShapeError::Unexpected),
                "{url}"
            );
        }
    }

    #[test]
    fn rest_commits_name_their_parents() {
        let body = json!({"sha": SHA, "parents": [{"sha": SHA, "url": "u"}]}).to_string();
        assert_eq!(
            rest_commit(body.as_bytes()),
            Ok((SHA.to_owned(), vec![SHA.to_owned()]))
        );
        assert_eq!(
            rest_commit(br#"{"sha":"x","parents":[]}"#),
            Err(ShapeError::Unexpected)
        );
        assert_eq!(rest_commit(b"<html>"), Err(ShapeError::Unexpected));
    }

    proptest! {
        /// No reply, however malformed, panics a reader.
        #[test]
        fn readers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = rest_commit(&bytes);
            if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                let _ = contents(&value);
                let _ = commit_sha(&value);
                let _ = reference_sha(&value, "b");
                let _ = pull_request_url(&value, "o/r");
            }
            let text_value = text(&String::from_utf8_lossy(&bytes));
            let _ = contents(&text_value);
            let _ = commit_sha(&text_value);
        }
    }
}
