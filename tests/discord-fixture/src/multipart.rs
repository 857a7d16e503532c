//! Just enough `multipart/form-data` reading for the fake: the `payload_json` part and the
//! first file part of a message upload.

use serde_json::Value;

/// The JSON fields and the file of a multipart body with `boundary`.
pub(crate) fn parse(body: &[u8], boundary: &str) -> (Option<Value>, Option<(String, Vec<u8>)>) {
    let delimiter = format!("--{boundary}");
    let mut fields = None;
    let mut file = None;
    for part in split(body, delimiter.as_bytes()) {
        let Some(end) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..end]).into_owned();
        let mut content = &part[end + 4..];
        if content.ends_with(b"\r\n") {
            content = &content[..content.len() - 2];
        }
        if head.contains("name=\"payload_json\"") {
            fields = serde_json::from_slice(content).ok();
        } else if let Some(start) = head.find("filename=\"") {
            let name = head[start + 10..].split('"').next().unwrap_or_default();
            file.get_or_insert_with(|| (name.to_owned(), content.to_vec()));
        }
    }
    (fields, file)
}

fn split<'a>(body: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(at) = find(rest, delimiter) {
        parts.push(&rest[..at]);
        rest = &rest[at + delimiter.len()..];
    }
    parts.push(rest);
    parts
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
