//! Maps `YETIBOT_*` (and `YB_*`) environment variables onto the configuration tree, and the
//! one place in the workspace that reads the process environment.
//!
//! A name is read against the schema from `:yetibot` down: known keys match their
//! dash-separated words (`KEY_FILE` → `:key-file`, the longest match winning), numbers index
//! vectors (`PROVIDERS_0`), free-form maps take the rest of the name as one key
//! (`ENV_GITHUB_PERSONAL_ACCESS_TOKEN` → `GITHUB_PERSONAL_ACCESS_TOKEN`; header names turn
//! underscores into dashes, since a variable name cannot hold a dash), and a map of named
//! sections takes as the name the fewest words after which the rest names one of the
//! section's fields, joined with dashes (`ADAPTERS_MY_TEAM_APP_TOKEN` → `:my-team`
//! `:app-token`). Under keys this build
//! does not know, every word is one lower-case level, as upstream Yetibot did. Values become
//! booleans or numbers only where the schema expects them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Number, Value};

use super::Problem;
use super::schema::{self, Shape};

/// Prefixes whose variables configure the bot.
pub(crate) const PREFIXES: [&str; 2] = ["YETIBOT_", "YB_"];
/// Highest vector index a variable may set, so a typo cannot allocate a huge vector.
pub(crate) const MAX_INDEX: usize = 255;

/// The configuration variables of this process, and problems with ones that are not UTF-8.
#[expect(
    clippy::disallowed_methods,
    reason = "the binary's configuration loader is the one place that reads the environment"
)]
pub fn from_process() -> (Vec<(String, String)>, Vec<Problem>) {
    let mut vars = Vec::new();
    let mut problems = Vec::new();
    for (name, value) in std::env::vars_os() {
        let lossy = name.to_string_lossy();
        if !PREFIXES.iter().any(|p| lossy.starts_with(p)) {
            continue;
        }
        match (name.into_string(), value.into_string()) {
            (Ok(name), Ok(value)) => vars.push((name, value)),
            (Ok(name), Err(_)) => problems.push(Problem::new(
                format!("environment {name}"),
                "value is not valid UTF-8",
            )),
            (Err(name), _) => problems.push(Problem::new(
                format!("environment {}", name.to_string_lossy()),
                "name is not valid UTF-8",
            )),
        }
    }
    (vars, problems)
}

/// Builds the tree that the variables describe, rooted like the file (`{"yetibot": ...}`),
/// from the variables that are in order, and the problems of the others: every variable that
/// names no setting, indexes too far, names a whole section, or sets the same setting as
/// another variable with a different value. Messages name the variable, never its value.
pub(crate) fn overlay(vars: &[(String, String)]) -> (Value, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut sorted: Vec<&(String, String)> = vars.iter().collect();
    sorted.sort();
    // Path → (variable, value): finds two spellings (YETIBOT_ and YB_) of one setting.
    let mut settings: BTreeMap<String, (&str, &str, Vec<Segment>, Value)> = BTreeMap::new();
    let mut conflicted: BTreeSet<String> = BTreeSet::new();
    for (name, raw) in sorted {
        let Some(rest) = PREFIXES.iter().find_map(|p| name.strip_prefix(p)) else {
            continue;
        };
        let words: Vec<&str> = rest.split('_').collect();
        if words.iter().any(|w| w.is_empty()) {
            problems.push(Problem::new(
                format!("environment {name}"),
                "has an empty word (double or trailing underscore)",
            ));
            continue;
        }
        match resolve(&words, &schema::YETIBOT) {
            Ok((segments, leaf)) => {
                let key = render(&segments);
                let value = typed(leaf, raw);
                match settings.get(&key) {
                    Some((other, other_raw, ..)) if *other_raw != raw.as_str() => {
                        problems.push(Problem::new(
                            format!("environment {name}"),
                            format!("sets {key} differently from {other}; remove one of them"),
                        ));
                        // Neither value is used: the other checks see the file's setting
                        // rather than an arbitrary one of the two.
                        conflicted.insert(key);
                    }
                    Some(_) => {}
                    None => {
                        settings.insert(key, (name.as_str(), raw.as_str(), segments, value));
                    }
                }
            }
            Err(reason) => problems.push(Problem::new(format!("environment {name}"), reason)),
        }
    }
    let mut tree = Value::Object(Map::new());
    for (key, (name, _, segments, value)) in settings {
        if conflicted.contains(&key) {
            continue;
        }
        if insert(&mut tree, &segments, value).is_err() {
            problems.push(Problem::new(
                format!("environment {name}"),
                "conflicts with another variable that sets a value where this one needs a section",
            ));
        }
    }
    let mut root = Map::new();
    root.insert("yetibot".to_owned(), tree);
    (Value::Object(root), problems)
}

/// Deep-merges `overlay` into `base`: maps merge key by key, vectors item by item (so
/// `PROVIDERS_0_MODEL` changes one field of the file's first provider), anything else is
/// replaced. Header maps match names without regard to case.
pub(crate) fn merge(base: &mut Value, overlay: Value, shape: Option<&Shape>) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                let child = match shape {
                    Some(Shape::Section { fields, .. }) => {
                        fields.iter().find(|f| f.key == key).map(|f| f.shape)
                    }
                    Some(Shape::Named(item)) => Some(*item),
                    Some(Shape::FreeMap { header_names: true }) => {
                        base.retain(|k, _| !k.eq_ignore_ascii_case(&key));
                        None
                    }
                    _ => None,
                };
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value, child),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(base), Value::Array(overlay)) => {
            let item = match shape {
                Some(Shape::List(item)) => Some(*item),
                _ => None,
            };
            for (i, value) in overlay.into_iter().enumerate() {
                if let Some(existing) = base.get_mut(i) {
                    if !value.is_null() {
                        merge(existing, value, item);
                    }
                } else {
                    base.push(value);
                }
            }
        }
        (base, overlay) => *base = overlay,
    }
}

/// One step of a path into the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

fn resolve(
    words: &[&str],
    shape: &'static Shape,
) -> Result<(Vec<Segment>, &'static Shape), &'static str> {
    let (mut segments, leaf) = walk(words, shape)?;
    segments.insert(0, Segment::Key("yetibot".to_owned()));
    Ok((segments, leaf))
}

/// The path `words` name below `shape`.
fn walk(
    words: &[&str],
    mut shape: &'static Shape,
) -> Result<(Vec<Segment>, &'static Shape), &'static str> {
    let mut segments = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &words[pos..];
        match shape {
            Shape::Section { fields, open } => {
                if rest.is_empty() {
                    return Err("names a whole section; set one of its fields instead");
                }
                let best = fields
                    .iter()
                    .filter_map(|f| {
                        let parts: Vec<&str> = f.key.split('-').collect();
                        let matches = parts.len() <= rest.len()
                            && parts
                                .iter()
                                .zip(rest)
                                .all(|(p, w)| p.eq_ignore_ascii_case(w));
                        matches.then_some((f, parts.len()))
                    })
                    .max_by_key(|(_, n)| *n);
                match best {
                    Some((f, n)) => {
                        segments.push(Segment::Key(f.key.to_owned()));
                        pos += n;
                        shape = f.shape;
                    }
                    None if *open => {
                        for word in rest {
                            segments.push(match word.parse::<usize>() {
                                Ok(i) if i <= MAX_INDEX => Segment::Index(i),
                                _ => Segment::Key(word.to_ascii_lowercase()),
                            });
                        }
                        return Ok((segments, &Shape::Str));
                    }
                    None => return Err("does not name a known setting"),
                }
            }
            Shape::List(item) => {
                let Some(word) = rest.first() else {
                    return Err("names a whole vector; add an index such as _0");
                };
                match word.parse::<usize>() {
                    Ok(i) if i <= MAX_INDEX => segments.push(Segment::Index(i)),
                    Ok(_) => return Err("uses a vector index above 255"),
                    Err(_) => return Err("needs a vector index (a number) here"),
                }
                pos += 1;
                shape = item;
            }
            Shape::Named(item) => {
                if rest.is_empty() {
                    return Err("names a whole map; add the entry's name and a setting");
                }
                // The shortest name after which the rest is a setting of the entry.
                for n in 1..rest.len() {
                    if let Ok((tail, leaf)) = walk(&rest[n..], item) {
                        let name = rest[..n].join("-").to_ascii_lowercase();
                        segments.push(Segment::Key(name));
                        segments.extend(tail);
                        return Ok((segments, leaf));
                    }
                }
                return Err("needs an entry's name followed by one of its settings");
            }
            Shape::FreeMap { header_names } => {
                if rest.is_empty() {
                    return Err("names a whole map; add the entry's name");
                }
                let key = rest.join(if *header_names { "-" } else { "_" });
                segments.push(Segment::Key(key));
                return Ok((segments, &Shape::Str));
            }
            leaf => {
                if !rest.is_empty() {
                    return Err("has extra words after a setting's name");
                }
                return Ok((segments, leaf));
            }
        }
    }
}

fn typed(shape: &Shape, raw: &str) -> Value {
    let fallback = || Value::String(raw.to_owned());
    match shape {
        Shape::Bool if raw.eq_ignore_ascii_case("true") => Value::Bool(true),
        Shape::Bool if raw.eq_ignore_ascii_case("false") => Value::Bool(false),
        Shape::Int => raw
            .trim()
            .parse::<i64>()
            .map_or_else(|_| fallback(), |n| Value::Number(n.into())),
        Shape::Number => raw
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or_else(fallback, Value::Number),
        _ => fallback(),
    }
}

fn render(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Key(key) => out = schema::join(&out, key),
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn insert(tree: &mut Value, segments: &[Segment], value: Value) -> Result<(), ()> {
    // The first segment is always "yetibot", which `overlay` adds around the tree.
    let mut node = tree;
    for segment in &segments[1..] {
        node = match segment {
            Segment::Key(key) => {
                if node.is_null() {
                    *node = Value::Object(Map::new());
                }
                let Value::Object(map) = node else {
                    return Err(());
                };
                map.entry(key.clone()).or_insert(Value::Null)
            }
            Segment::Index(i) => {
                if node.is_null() {
                    *node = Value::Array(Vec::new());
                }
                let Value::Array(items) = node else {
                    return Err(());
                };
                if items.len() <= *i {
                    items.resize(i + 1, Value::Null);
                }
                &mut items[*i]
            }
        };
    }
    if node.is_null() {
        *node = value;
        Ok(())
    } else {
        Err(())
    }
}

/// The value of `CONFIG_PATH`, which names the configuration file.
#[expect(
    clippy::disallowed_methods,
    reason = "the binary's configuration loader is the one place that reads the environment"
)]
pub fn config_path() -> Option<String> {
    std::env::var("CONFIG_PATH").ok()
}

/// The value of `RUST_LOG`, the operator's log filter for this run, which takes precedence
/// over `:yetibot :log :level` (see [`crate::logging`]).
#[expect(
    clippy::disallowed_methods,
    reason = "the binary's configuration loader is the one place that reads the environment"
)]
#[must_use]
pub fn rust_log() -> Option<String> {
    std::env::var("RUST_LOG").ok()
}

/// One of the standard variables local MCP servers inherit (`PATH`, `HOME` and the few
/// others `yetibot-mcp-host` asks for by name); nothing else of the environment reaches
/// them.
#[expect(
    clippy::disallowed_methods,
    reason = "the binary's configuration loader is the one place that reads the environment"
)]
#[must_use]
pub fn standard_variable(name: &str) -> Option<String> {
    if yetibot_mcp_host::STANDARD_ENV_NAMES.contains(&name) {
        std::env::var(name).ok()
    } else {
        None
    }
}
