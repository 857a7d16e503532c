//! How a final value reads in chat, the same on every platform: text as it is (empty text
//! says "No results"), a collection as its items on separate lines with nested collections
//! flattened (an empty one posts nothing; one whose items are all blank says "No
//! results"), a map as `key: value` lines, and a list of image URLs as one message per
//! image, at most 30.

use yetibot_json_util::Value;

use crate::limits::MAX_IMAGE_MESSAGES;
use crate::value;

/// The messages that show `value`.
#[must_use]
pub fn messages(value: &Value) -> Vec<String> {
    match value {
        Value::String(text) if text.is_empty() => vec!["No results".to_owned()],
        Value::Array(items) => {
            let flat = value::flattened(items);
            if flat.is_empty() {
                return Vec::new();
            }
            let urls: Option<Vec<&str>> = flat
                .iter()
                .map(|item| item.as_str().filter(|s| is_image_url(s)))
                .collect();
            match urls {
                Some(urls) => urls
                    .into_iter()
                    .take(MAX_IMAGE_MESSAGES)
                    .map(str::to_owned)
                    .collect(),
                None => {
                    // Items that are all empty still answer: chat cannot post blank text.
                    let text = value::to_text(value, "\n");
                    if text.trim().is_empty() {
                        vec!["No results".to_owned()]
                    } else {
                        vec![text]
                    }
                }
            }
        }
        Value::Object(object) if object.is_empty() => Vec::new(),
        other => vec![value::to_text(other, "\n")],
    }
}

/// Whether `text` is an http(s) URL whose path ends in an image extension.
fn is_image_url(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) || lower.contains(' ') {
        return false;
    }
    let path = lower.split(['?', '#']).next().unwrap_or_default();
    [".png", ".jpg", ".jpeg", ".gif", ".webp"]
        .iter()
        .any(|ext| path.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::parse(text).expect("json")
    }

    #[test]
    fn chat_forms() {
        assert_eq!(messages(&json(r#""""#)), ["No results"]);
        assert_eq!(messages(&json("[]")), Vec::<String>::new());
        assert_eq!(messages(&json(r#"["a",["b"]]"#)), ["a\nb"]);
        assert_eq!(messages(&json(r#"{"k":"v","n":2}"#)), ["k: v\nn: 2"]);
        assert_eq!(
            messages(&json(
                r#"["https://x.test/a.png","https://x.test/b.JPG?size=2"]"#
            )),
            ["https://x.test/a.png", "https://x.test/b.JPG?size=2"]
        );
        let many: Vec<String> = (0..40)
            .map(|i| format!("\"https://x.test/{i}.gif\""))
            .collect();
        assert_eq!(messages(&json(&format!("[{}]", many.join(",")))).len(), 30);
        assert_eq!(
            messages(&json(r#"["https://x.test/a.png","text"]"#)).len(),
            1
        );
    }
}
