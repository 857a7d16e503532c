//! `render <template>`: fills `{{path}}` placeholders from each record of the data (or from
//! the data itself when it is one record) and shows one line per record.
//!
//! A placeholder names a path of member names and array indexes joined by dots
//! (`{{owner.login}}`, `{{tags.0}}`); `{{.}}` is the record itself. A missing value renders
//! as nothing. Text outside placeholders is kept as it is.

use yetibot_json_util::Value;

use crate::registry::{Call, Category, CommandSpec, Plain};
use crate::value::{self, Outcome};

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![CommandSpec::new("render", &[Category::UTIL]).route(
        Some(r"(?s)^(.+)$"),
        "render <template> # fill {{path}} placeholders from each record of the data",
        Plain(render),
    )]
}

fn render(call: &Call<'_>) -> Outcome {
    let template = call.group(1);
    let records: Vec<&Value> = match (call.records, call.data) {
        (Some(records), _) => records.iter().collect(),
        (None, Some(Value::Array(items))) => items.iter().collect(),
        (None, Some(record)) => vec![record],
        (None, None) => return Outcome::error("there is no data to render"),
    };
    // The output is bounded as it is built: a long template over many records must not
    // build gigabytes before the pipeline's size check could see them.
    let mut budget = value::MAX_VALUE_BYTES;
    let mut lines: Vec<Value> = Vec::with_capacity(records.len());
    for record in &records {
        let Some(line) = fill(template, record, budget) else {
            return Outcome::error("the rendered text would pass 1 MiB; render fewer records");
        };
        budget -= line.len();
        lines.push(Value::String(line));
    }
    if matches!(call.data, Some(Value::Array(_))) || call.records.is_some() {
        Outcome::Value(Value::Array(lines))
    } else {
        Outcome::Value(
            lines
                .into_iter()
                .next()
                .unwrap_or(Value::String(String::new())),
        )
    }
}

/// The template with each placeholder replaced by the text of the value it names, or
/// `None` once the text would pass `budget` bytes.
fn fill(template: &str, record: &Value, budget: usize) -> Option<String> {
    let mut out = String::with_capacity(template.len().min(budget));
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open + 2..].find("}}") else {
            break;
        };
        out.push_str(&rest[..open]);
        let path = rest[open + 2..open + 2 + close].trim();
        if let Some(found) = lookup(record, path) {
            out.push_str(&value::to_text(found, ", "));
        }
        if out.len() > budget {
            return None;
        }
        rest = &rest[open + 2 + close + 2..];
    }
    out.push_str(rest);
    (out.len() <= budget).then_some(out)
}

fn lookup<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "." || path.is_empty() {
        return Some(record);
    }
    path.split('.').try_fold(record, |value, step| match value {
        Value::Object(object) => object.get(step),
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled() {
        let record =
            Value::parse(r#"{"name":"a","owner":{"login":"x"},"tags":["t1","t2"],"n":1.50}"#)
                .expect("json");
        let fill = |template: &str| fill(template, &record, 1 << 20).expect("fits");
        assert_eq!(fill("{{name}} by {{owner.login}}"), "a by x");
        assert_eq!(fill("{{tags.1}} {{tags}} {{n}}"), "t2 t1, t2 1.50");
        assert_eq!(fill("{{missing}}|{{ name }}|{{"), "|a|{{");
        assert_eq!(super::fill(&"{{name}}".repeat(100), &record, 50), None);
    }
}
