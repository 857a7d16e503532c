//! The collection commands: building collections (`list`, `range`, `words`, `letters`,
//! `split`), picking and reordering rows (`head`, `take`, `tail`, `rest`, `droplast`,
//! `random`, `shuffle`, `sort`, `sortnum`, `reverse`, `set`, `grep`), reducing them
//! (`count`, `sum`, `join`, `unwords`, `unletters`) and reshaping them (`flatten`, `keys`,
//! `vals`, `trim`, `raw`), as upstream Yetibot has them.
//!
//! Rows and records move in step. A command that selects, drops, reorders or filters rows
//! returns the records of the rows it kept, in the same order, as its data; when the piped
//! collection has no records paired with it, the rows are their own records (the data of a
//! plain collection is the collection itself). `head`, `tail` and `random` without a number
//! return one row and that row's record. Commands that compute a new value (`count`, `sum`,
//! `join`, ...) or build a new collection (`list`, `range`, `words`, ...) keep the previous
//! data, as upstream does.
//!
//! Orderings, `set`, `shuffle`, `random`, `flatten`, `sum`, `trim` and `range` run on
//! `yetibot-json-util`'s functions, so a command and the `util` tool never disagree.
//!
//! Where upstream has a plain bug this does better: `sortnum` sorts by exact value (upstream
//! compared values less than 1 apart as equal), `sum` adds exactly (upstream used doubles),
//! `set` keeps first occurrences in order (upstream's order was a hash set's), `letters`
//! splits into characters rather than UTF-16 units, and `grep` matches numbers by their text.
//!
//! Every command costs linear time in its input, or `O(n log n)` for the sorts; nothing is
//! built past [`MAX_ROWS`] rows. User patterns (`grep`, `split`) run on the `regex` crate,
//! whose searches take linear time.

use std::borrow::Cow;

use regex::{Regex, RegexBuilder};
use yetibot_json_util::collection::{
    IntegerRange, exact_sum, jvm_trim, leaves, numeric_order, random_index, shuffle_order,
    sort_order, unique_indices,
};
use yetibot_json_util::{RandomSource, Value};

use crate::registry::Runner;
use crate::registry::{Call, Category, CommandSpec, Plain};
use crate::value::{self, MAX_ROWS, MAX_VALUE_BYTES, Outcome};

/// The categories every collection command belongs to.
const CATEGORIES: &[Category] = &[Category::UTIL, Category::COLLECTION];

/// The JVM's `\s`: space, tab, line feed, vertical tab, form feed and carriage return.
/// Route patterns spell it out because the `regex` crate's `\s` is Unicode whitespace.
const SPACE: &str = r"[ \t\n\x0B\x0C\r]";

/// The largest compiled program a user pattern may have.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The most text `split` searches with a regular expression: as long as the longest line a
/// user can type. Each search is linear, but finding every match rescans the rest of the
/// text once per match for some patterns (`\w+X|\w`), so this bound and the bound on the
/// number of searches keep the worst case small. Literal separators have no such limit.
const MAX_SPLIT_PATTERN_TEXT: usize = 16 << 10;

/// Why a result is refused before it is built.
pub(crate) const TOO_MANY_ROWS: &str = "the result would have more than 10,000 rows; select less";

/// The most characters of an item an error message repeats.
const MAX_QUOTED_CHARS: usize = 100;

pub(crate) fn commands() -> Vec<CommandSpec> {
    let spec = |name: &str| CommandSpec::new(name, CATEGORIES);
    let grep_context = grep_context_route();
    let grep_inverted = grep_inverted_route();
    let split_pattern = format!(r"(?s)^([^ \t\n\x0B\x0C\r]+){SPACE}+(.+)$");
    let range_three = format!(r"([0-9]+){SPACE}+([0-9]+){SPACE}+([0-9]+)");
    let range_two = format!(r"([0-9]+){SPACE}+([0-9]+)");
    vec![
        spec("list").route(
            None,
            "list <items> # a collection of the comma-separated items, or of the words when there is no comma",
            Plain(list),
        ),
        spec("head")
            .route(
                Some("([0-9]+)"),
                "head <n> # the first <n> items of the piped collection",
                Plain(head_n),
            )
            .route(
                None,
                "head # the first item of the piped collection",
                Plain(head_one),
            ),
        spec("take").route(
            Some("([0-9]+)"),
            "take <n> # the first <n> items of the piped collection",
            Plain(head_n),
        ),
        spec("tail")
            .route(
                Some("([0-9]+)"),
                "tail <n> # the last <n> items of the piped collection",
                Plain(tail_n),
            )
            .route(
                None,
                "tail # the last item of the piped collection",
                Plain(tail_one),
            ),
        spec("rest").route(
            None,
            "rest # every item of the piped collection but the first",
            Plain(rest),
        ),
        spec("droplast").route(
            None,
            "droplast # every item of the piped collection but the last",
            Plain(droplast),
        ),
        spec("count").route(
            None,
            "count # how many items (or map entries) were piped",
            Plain(count),
        ),
        spec("sort").route(
            None,
            "sort # the items in text order, compared by UTF-16 code unit (10, 100, 9)",
            Plain(sort),
        ),
        spec("sortnum").route(
            None,
            "sortnum # the items in numeric order; every item must be a number",
            Plain(sortnum),
        ),
        spec("shuffle").route(
            None,
            "shuffle # the items in a random order",
            Plain(shuffle),
        ),
        spec("reverse").route(
            None,
            "reverse # the items in reverse order",
            Plain(reverse),
        ),
        spec("set").route(
            None,
            "set # the distinct items, each where it first occurs",
            Plain(set),
        ),
        spec("grep")
            .route(
                Some(&grep_context),
                "grep -C <n> <pattern> # the matching items with <n> items of context on each side",
                Plain(grep_context_cmd),
            )
            .route(
                Some(&grep_inverted),
                "grep -v <pattern> # the items that do not match <pattern>",
                Plain(grep_inverted_cmd),
            )
            .route(
                Some("(?s).+"),
                "grep <pattern> # the items that contain a match of the case-insensitive regular expression <pattern>",
                Plain(grep_cmd),
            ),
        spec("keys").route(
            None,
            "keys # the keys of a piped map or of `key: value` items",
            Plain(keys),
        ),
        spec("vals").route(
            None,
            "vals # the values of a piped map or of `key: value` items",
            Plain(vals),
        ),
        spec("join")
            .route(
                Some("(?s).+"),
                "join <separator> # the items joined by <separator>, spaces included",
                Plain(join),
            )
            .route(
                None,
                "join # the items joined with nothing between them",
                Plain(join),
            ),
        spec("split").route(
            Some(&split_pattern),
            "split <pattern> <text> # <text> cut at every match of the regular expression <pattern>",
            Plain(split),
        ),
        spec("words").route(
            None,
            "words <text> # <text> cut at every single space",
            Plain(words),
        ),
        spec("unwords").route(
            None,
            "unwords # the items joined by single spaces",
            Plain(unwords),
        ),
        spec("letters").route(
            None,
            "letters <text> # one item per character of <text>",
            Plain(letters),
        ),
        spec("unletters").route(
            None,
            "unletters # the items joined with nothing between them",
            Plain(unletters),
        ),
        spec("flatten").route(
            None,
            "flatten # nested collections flattened, then every item cut into its lines",
            Plain(flatten),
        ),
        spec("trim").route(
            None,
            "trim <text> # <text> without whitespace at either end",
            Plain(trim),
        ),
        spec("sum").route(
            None,
            "sum # the exact sum of the piped numbers",
            Plain(sum),
        ),
        spec("range")
            .route(
                Some(&range_three),
                "range <start> <end> <step> # every <step>th number from <start> up to, not including, <end>",
                Plain(range),
            )
            .route(
                Some(&range_two),
                "range <start> <end> # the numbers from <start> up to, not including, <end>",
                Plain(range),
            )
            .route(
                Some("([0-9]+)"),
                "range <end> # the numbers from 0 up to, not including, <end>",
                Plain(range),
            ),
        spec("random").route(
            None,
            "random # a random item of the piped collection, or a random number below 100000 when none is piped",
            Plain(random),
        ),
        spec("raw").route(
            None,
            "raw # the piped collection, or the arguments, as JSON",
            Plain(raw),
        ),
    ]
}

/// The piped collection, and the records paired with its rows when the data has them.
struct Rows<'c> {
    items: &'c [Value],
    records: Option<&'c [Value]>,
}

impl<'c> Rows<'c> {
    /// The rows of the piped collection, or the error upstream gives for text.
    fn of(call: &'c Call<'_>) -> Result<Self, Outcome> {
        Self::or_error(call, || {
            format!("Expected a collection but you gave me `{}`", call.args)
        })
    }

    fn or_error(call: &'c Call<'_>, message: impl FnOnce() -> String) -> Result<Self, Outcome> {
        let items = call
            .items
            .as_deref()
            .ok_or_else(|| Outcome::error(message()))?;
        // Records that do not pair one to one with the rows are not theirs.
        let records = call.records.filter(|records| records.len() == items.len());
        Ok(Self { items, records })
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    /// The record of row `index`: its own record, or the row itself.
    fn record(&self, index: usize) -> Option<&'c Value> {
        match self.records {
            Some(records) => records.get(index),
            None => self.items.get(index),
        }
    }

    /// The rows at `indices`, in that order, with their records as the data.
    fn pick(&self, indices: impl IntoIterator<Item = usize>) -> Outcome {
        let mut values = Vec::new();
        let mut records = Vec::new();
        for index in indices {
            if let (Some(item), Some(record)) = (self.items.get(index), self.record(index)) {
                values.push(item.clone());
                records.push(record.clone());
            }
        }
        Outcome::with_records(Value::Array(values), Some(records))
    }

    /// Row `index` on its own, with its record as the data; empty text and no data when
    /// there is no such row.
    fn one(&self, index: Option<usize>) -> Outcome {
        let found = index.and_then(|i| Some((self.items.get(i)?, self.record(i)?)));
        match found {
            Some((item, record)) => Outcome::Data {
                value: item.clone(),
                data: Some(record.clone()),
                path: None,
            },
            None => Outcome::Data {
                value: Value::String(String::new()),
                data: None,
                path: None,
            },
        }
    }
}

/// Runs `f` on the piped rows, or answers with upstream's error for text.
fn with_rows(call: &Call<'_>, f: impl FnOnce(&Rows<'_>) -> Outcome) -> Outcome {
    match Rows::of(call) {
        Ok(rows) => f(&rows),
        Err(error) => error,
    }
}

fn head_one(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| rows.one((rows.len() > 0).then_some(0)))
}

fn head_n(call: &Call<'_>) -> Outcome {
    let n = count_of(call.group(1));
    if n == 1 {
        return head_one(call);
    }
    with_rows(call, |rows| rows.pick(0..n.min(rows.len())))
}

fn tail_one(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| rows.one(rows.len().checked_sub(1)))
}

fn tail_n(call: &Call<'_>) -> Outcome {
    let n = count_of(call.group(1));
    if n == 1 {
        return tail_one(call);
    }
    with_rows(call, |rows| {
        rows.pick(rows.len().saturating_sub(n)..rows.len())
    })
}

fn rest(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| rows.pick(1..rows.len()))
}

fn droplast(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| rows.pick(0..rows.len().saturating_sub(1)))
}

fn reverse(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| rows.pick((0..rows.len()).rev()))
}

fn shuffle(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| {
        rows.pick(shuffle_order(rows.len(), &mut Draws(call.runner)))
    })
}

fn sort(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| {
        let texts: Vec<Cow<'_, str>> = rows.items.iter().map(text_of).collect();
        rows.pick(sort_order(&texts))
    })
}

fn sortnum(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| {
        let numbers = match numbers_of("sortnum", rows.items) {
            Ok(numbers) => numbers,
            Err(error) => return error,
        };
        match numeric_order(&numbers) {
            Ok(order) => rows.pick(order),
            Err(_) => Outcome::error("sortnum needs numbers"),
        }
    })
}

fn set(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| rows.pick(unique_indices(rows.items)))
}

fn random(call: &Call<'_>) -> Outcome {
    let mut draws = Draws(call.runner);
    match call.items.as_deref() {
        Some(items) if !items.is_empty() => {
            with_rows(call, |rows| rows.one(random_index(rows.len(), &mut draws)))
        }
        // Upstream answers a random number when nothing (or nothing at all) is piped.
        _ => Outcome::text(draws.index_below(100_000).to_string()),
    }
}

fn count(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| Outcome::Value(value::count(rows.len())))
}

fn sum(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| {
        let numbers = match numbers_of("sum", rows.items) {
            Ok(numbers) => numbers,
            Err(error) => return error,
        };
        match exact_sum(&numbers) {
            Ok(total) => Outcome::Value(total),
            Err(_) => Outcome::error(
                "the sum is too large to write exactly (more than 200 characters or 128 digits)",
            ),
        }
    })
}

fn join(call: &Call<'_>) -> Outcome {
    // The separator is the raw rest of the line, spaces included.
    let separator = call.group(0);
    with_rows(call, |rows| {
        joined(rows.items, separator).map_or_else(|e| e, Outcome::text)
    })
}

fn unwords(call: &Call<'_>) -> Outcome {
    match call.items.as_deref() {
        Some(items) => joined(items, " ").map_or_else(|e| e, Outcome::text),
        // Text passes through as it is.
        None => Outcome::text(call.args),
    }
}

fn unletters(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| {
        joined(rows.items, "").map_or_else(|e| e, Outcome::text)
    })
}

fn list(call: &Call<'_>) -> Outcome {
    let args = call.args;
    let parts = if args.contains(',') {
        java_split(args, args.match_indices(',').map(|(at, _)| (at, at + 1)))
    } else {
        java_split(
            args,
            args.char_indices()
                .filter(|&(_, c)| is_java_space(c))
                .map(|(at, c)| (at, at + c.len_utf8())),
        )
    };
    match parts {
        Ok(parts) => strings(parts.into_iter().map(jvm_trim)),
        Err(error) => error,
    }
}

fn words(call: &Call<'_>) -> Outcome {
    let args = call.args;
    match java_split(args, args.match_indices(' ').map(|(at, _)| (at, at + 1))) {
        Ok(parts) => strings(parts),
        Err(error) => error,
    }
}

fn letters(call: &Call<'_>) -> Outcome {
    if call.args.chars().nth(MAX_ROWS).is_some() {
        return Outcome::error(TOO_MANY_ROWS);
    }
    Outcome::Unpaired(Value::Array(
        call.args
            .chars()
            .map(|c| Value::String(c.to_string()))
            .collect(),
    ))
}

fn split(call: &Call<'_>) -> Outcome {
    let (pattern, text) = (call.group(1), call.group(2));
    let parts = if regex::escape(pattern) == pattern {
        // A literal separator needs no regular expression and has no text limit.
        java_split(
            text,
            text.match_indices(pattern)
                .map(|(at, found)| (at, at + found.len())),
        )
    } else {
        if text.len() > MAX_SPLIT_PATTERN_TEXT {
            return Outcome::error(
                "split with a regular expression takes at most 16 KiB of text; use a literal separator",
            );
        }
        let regex = match compile(pattern, false) {
            Ok(regex) => regex,
            Err(error) => return error,
        };
        // Each search is linear, but one may rescan the rest of the text, so the number of
        // searches is bounded too: more matches than rows means too many rows anyway, unless
        // they are all trailing empty parts, which is refused as well.
        let mut searches = 0usize;
        let matches = regex.find_iter(text).map_while(|m| {
            searches += 1;
            (searches <= MAX_ROWS + 1).then(|| (m.start(), m.end()))
        });
        let parts = java_split(text, matches);
        if searches > MAX_ROWS + 1 {
            return Outcome::error(TOO_MANY_ROWS);
        }
        parts
    };
    match parts {
        Ok(parts) => strings(parts),
        Err(error) => error,
    }
}

fn trim(call: &Call<'_>) -> Outcome {
    Outcome::text(jvm_trim(call.args))
}

fn range(call: &Call<'_>) -> Outcome {
    let mut bounds = Vec::with_capacity(3);
    for group in 1..=3 {
        let digits = call.group(group);
        if digits.is_empty() {
            continue;
        }
        match digits.parse::<i64>() {
            Ok(n) => bounds.push(n),
            Err(_) => return Outcome::error(format!("`{digits}` is too large for range")),
        }
    }
    let (start, end, step) = match bounds[..] {
        [end] => (0, end, 1),
        [start, end] => (start, end, 1),
        [start, end, step] => (start, end, step),
        _ => return Outcome::error("range takes one to three numbers"),
    };
    let Ok(members) = IntegerRange::new(start, end, step) else {
        return Outcome::error("range needs a step of at least 1");
    };
    // Checked before anything is built: `range 1000000000` must not make a billion rows.
    if members.remaining() > MAX_ROWS as u64 {
        return Outcome::error(TOO_MANY_ROWS);
    }
    Outcome::Unpaired(Value::Array(
        members.map(|n| Value::String(n.to_string())).collect(),
    ))
}

fn raw(call: &Call<'_>) -> Outcome {
    let json = match (call.raw, &call.items) {
        (Value::Array(_) | Value::Object(_), _) => call.raw.to_json(),
        // Text with several lines is the collection of its lines.
        (_, Some(items)) => Value::Array(items.to_vec()).to_json(),
        (_, None) => Value::String(call.args.to_owned()).to_json(),
    };
    Outcome::text(json)
}

fn keys(call: &Call<'_>) -> Outcome {
    key_or_value(call, true)
}

fn vals(call: &Call<'_>) -> Outcome {
    key_or_value(call, false)
}

/// The keys (or values) of a piped map, or of `key: value` items: when every item has a
/// colon with a character on each side, each item is cut at its colons and the first (or
/// second) part, trimmed, is kept. Other collections pass through unchanged. Either way the
/// rows stay one for one, so the previous data and its records are kept.
fn key_or_value(call: &Call<'_>, key: bool) -> Outcome {
    if let Value::Object(object) = call.raw {
        let parts = object.iter().map(|(k, v)| {
            if key {
                Value::String(k.to_owned())
            } else {
                v.clone()
            }
        });
        return Outcome::Value(Value::Array(parts.collect()));
    }
    with_rows(call, |rows| {
        let texts: Option<Vec<&str>> = rows
            .items
            .iter()
            .map(|item| item.as_str().filter(|text| is_key_value(text)))
            .collect();
        let Some(texts) = texts else {
            return Outcome::Value(Value::Array(rows.items.to_vec()));
        };
        let part = |text: &str| {
            let mut parts = java_parts(text, ':');
            let first = parts.next().unwrap_or_default();
            let chosen = if key {
                first
            } else {
                parts.next().unwrap_or_default()
            };
            Value::String(jvm_trim(chosen).to_owned())
        };
        Outcome::Value(Value::Array(texts.into_iter().map(part).collect()))
    })
}

fn grep_cmd(call: &Call<'_>) -> Outcome {
    grep(call, call.group(0), 0, false)
}

fn grep_context_cmd(call: &Call<'_>) -> Outcome {
    grep(call, call.group(2), count_of(call.group(1)), false)
}

fn grep_inverted_cmd(call: &Call<'_>) -> Outcome {
    grep(call, call.group(1), 0, true)
}

/// The items with an element matching `pattern` (case-insensitively, anywhere in it), or
/// with `invert` those without, each with `context` items either side; overlapping windows
/// are merged, so no item appears twice.
fn grep(call: &Call<'_>, pattern: &str, context: usize, invert: bool) -> Outcome {
    let rows = match Rows::or_error(call, || {
        format!("Expected a collection but you only gave me `{}`", call.args)
    }) {
        Ok(rows) => rows,
        Err(error) => return error,
    };
    let regex = match compile(pattern, true) {
        Ok(regex) => regex,
        Err(error) => return error,
    };
    let hits: Vec<bool> = rows
        .items
        .iter()
        .map(|item| matches(&regex, item) != invert)
        .collect();
    rows.pick(with_context(&hits, context))
}

/// Whether `item`, or for a nested collection any element of it at any depth, contains a
/// match. Scalars match by their text.
fn matches(regex: &Regex, item: &Value) -> bool {
    match item {
        Value::Array(inner) => leaves(inner)
            .into_iter()
            .any(|leaf| regex.is_match(&text_of(leaf))),
        other => regex.is_match(&text_of(other)),
    }
}

/// The indices within `context` of a hit, ascending, each once. Linear whatever `context`
/// is: each hit opens a window and closes it, and one pass counts the open windows.
fn with_context(hits: &[bool], context: usize) -> Vec<usize> {
    let len = hits.len();
    let mut opened = vec![0i64; len + 1];
    for (index, _) in hits.iter().enumerate().filter(|(_, hit)| **hit) {
        let first = index.saturating_sub(context);
        let past = index.saturating_add(context).saturating_add(1).min(len);
        if let Some(slot) = opened.get_mut(first) {
            *slot += 1;
        }
        if let Some(slot) = opened.get_mut(past) {
            *slot -= 1;
        }
    }
    let mut open = 0i64;
    let mut kept = Vec::new();
    for (index, change) in opened.iter().take(len).enumerate() {
        open += change;
        if open > 0 {
            kept.push(index);
        }
    }
    kept
}

/// Flattens nested collections at every depth, then cuts each text into its lines (as
/// Clojure's `split-lines`: at `\n` or `\r\n`, trailing empty lines dropped). Each new row's
/// record is the record of the item it came from; with no records, the rows are their own.
fn flatten(call: &Call<'_>) -> Outcome {
    with_rows(call, |rows| {
        let mut values: Vec<Value> = Vec::new();
        let mut sources: Vec<usize> = Vec::new();
        for (index, item) in rows.items.iter().enumerate() {
            for leaf in leaves(std::slice::from_ref(item)) {
                let Value::String(text) = leaf else {
                    values.push(leaf.clone());
                    sources.push(index);
                    continue;
                };
                let lines = match java_split(text, line_breaks(text)) {
                    Ok(lines) => lines,
                    Err(error) => return error,
                };
                for line in lines {
                    values.push(Value::String(line.to_owned()));
                    sources.push(index);
                }
                if values.len() > MAX_ROWS {
                    return Outcome::error(TOO_MANY_ROWS);
                }
            }
        }
        if values.len() > MAX_ROWS {
            return Outcome::error(TOO_MANY_ROWS);
        }
        let Some(records) = rows.records else {
            let data = values.clone();
            return Outcome::with_records(Value::Array(values), Some(data));
        };
        // A record copied to several rows is counted each time, and the copies are refused
        // before they are made when they would pass the size any data may have.
        let mut copied = 0usize;
        for pair in sources.windows(2) {
            if let [previous, next] = pair
                && previous == next
            {
                let size = records
                    .get(*next)
                    .map_or(0, |record| record.to_json().len());
                copied = copied.saturating_add(size);
                if copied > MAX_VALUE_BYTES {
                    return Outcome::error(
                        "the result's data would pass 1 MiB of text; select less",
                    );
                }
            }
        }
        let data = sources
            .iter()
            .filter_map(|&index| records.get(index).cloned())
            .collect();
        Outcome::with_records(Value::Array(values), Some(data))
    })
}

/// The spans of the line breaks of `text`: `\n`, or `\r\n` as one.
fn line_breaks(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    memchr::memchr_iter(b'\n', text.as_bytes()).map(move |at| {
        let start = if at > 0 && text.as_bytes().get(at - 1) == Some(&b'\r') {
            at - 1
        } else {
            at
        };
        (start, at + 1)
    })
}

/// The parts of `text` between the separator spans `matches` (ascending, not overlapping),
/// as the JVM's `String.split` gives them: a zero-width match at the very start makes no
/// leading empty part, trailing empty parts are dropped, and no match at all gives the
/// whole text. Fails as soon as there would be more than [`MAX_ROWS`] parts; runs of empty
/// parts are only counted until a non-empty part shows they are kept.
fn java_split(
    text: &str,
    matches: impl Iterator<Item = (usize, usize)>,
) -> Result<Vec<&str>, Outcome> {
    let mut parts = Parts::default();
    let mut last = 0;
    for (start, end) in matches {
        if end == 0 {
            continue;
        }
        parts.push(text.get(last..start).unwrap_or_default())?;
        last = end;
    }
    if last == 0 {
        return Ok(vec![text]);
    }
    parts.push(text.get(last..).unwrap_or_default())?;
    Ok(parts.kept)
}

/// The parts of a split so far: those known to be kept, and how many empty ones follow them.
#[derive(Default)]
struct Parts<'t> {
    kept: Vec<&'t str>,
    empties: usize,
}

impl<'t> Parts<'t> {
    fn push(&mut self, part: &'t str) -> Result<(), Outcome> {
        if part.is_empty() {
            self.empties += 1;
            return Ok(());
        }
        if self.kept.len().saturating_add(self.empties) >= MAX_ROWS {
            return Err(Outcome::error(TOO_MANY_ROWS));
        }
        self.kept.extend(std::iter::repeat_n("", self.empties));
        self.empties = 0;
        self.kept.push(part);
        Ok(())
    }
}

/// The parts of `text` split at `separator` as the JVM splits (trailing empty parts
/// dropped), without a bound: used on one item, whose parts are never rows.
fn java_parts(text: &str, separator: char) -> impl Iterator<Item = &str> {
    text.trim_end_matches(separator).split(separator)
}

/// Whether `text` has a colon with a character on each side that is not a line break:
/// upstream's `.+:.+` test for `key: value` items.
fn is_key_value(text: &str) -> bool {
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':'
            && previous.is_some_and(|p| !is_line_end(p))
            && chars.peek().is_some_and(|&n| !is_line_end(n))
        {
            return true;
        }
        previous = Some(c);
    }
    false
}

/// The characters the JVM's `.` does not match.
fn is_line_end(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// The JVM's `\s`.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r')
}

/// A collection of the given texts, as strings.
fn strings<'t>(parts: impl IntoIterator<Item = &'t str>) -> Outcome {
    Outcome::Unpaired(Value::Array(
        parts
            .into_iter()
            .map(|part| Value::String(part.to_owned()))
            .collect(),
    ))
}

/// The items' texts joined by `separator`.
/// Refused when the result would pass the largest value, before more is built.
fn joined(items: &[Value], separator: &str) -> Result<String, Outcome> {
    let mut out = String::new();
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            out.push_str(separator);
        }
        out.push_str(&text_of(item));
        if out.len() > crate::value::MAX_VALUE_BYTES {
            return Err(Outcome::error(
                "the joined text would pass 1 MiB; join fewer items",
            ));
        }
    }
    Ok(out)
}

/// An item as text: a string as it is, anything else as it is shown (nested items joined by
/// spaces).
fn text_of(item: &Value) -> Cow<'_, str> {
    match item {
        Value::String(text) => Cow::Borrowed(text),
        other => Cow::Owned(value::to_text(other, " ")),
    }
}

/// The items as numbers: numbers as they are, texts read as JSON numbers (`12`, `-0.5`,
/// `1e3`); anything else is an error naming the item.
fn numbers_of(command: &str, items: &[Value]) -> Result<Vec<Value>, Outcome> {
    items
        .iter()
        .map(|item| {
            let number = match item {
                Value::Integer(_) | Value::Decimal(_) => Some(item.clone()),
                Value::String(text) => Value::parse(text)
                    .ok()
                    .filter(|v| matches!(v, Value::Integer(_) | Value::Decimal(_))),
                _ => None,
            };
            number.ok_or_else(|| {
                Outcome::error(format!(
                    "{command} needs numbers, but `{}` is not a number",
                    quoted(&text_of(item))
                ))
            })
        })
        .collect()
}

/// At most [`MAX_QUOTED_CHARS`] characters of `text`, for an error message.
fn quoted(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((at, _)) => Cow::Owned(format!("{}…", text.get(..at).unwrap_or_default())),
        None => Cow::Borrowed(text),
    }
}

/// A count typed as digits; too many digits mean "all of them".
pub(crate) fn count_of(digits: &str) -> usize {
    digits.bytes().fold(0usize, |n, digit| {
        n.saturating_mul(10)
            .saturating_add(usize::from(digit.wrapping_sub(b'0')))
    })
}

/// `grep -C <n> <pattern>`, searched anywhere in the arguments.
fn grep_context_route() -> String {
    format!(r"-C{SPACE}+([0-9]+){SPACE}+(.+)")
}

/// `grep -v <pattern>`, searched anywhere in the arguments.
fn grep_inverted_route() -> String {
    format!(r"-v{SPACE}+(.+)")
}

/// The pattern of `grep <args>` when `grep` takes its plain route (neither `-C` nor `-v`
/// matches, and there is a pattern at all): the arguments themselves.
pub(crate) fn grep_plain_pattern(args: &str) -> Option<&str> {
    let context = Regex::new(&grep_context_route()).ok()?;
    let inverted = Regex::new(&grep_inverted_route()).ok()?;
    (!args.is_empty() && !context.is_match(args) && !inverted.is_match(args)).then_some(args)
}

/// A user's regular expression, bounded in size, or an error saying why it cannot be used.
pub(crate) fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, Outcome> {
    RegexBuilder::new(&ascii_classes(pattern))
        .case_insensitive(case_insensitive)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|error| {
            let reason = match &error {
                regex::Error::Syntax(text) => text
                    .lines()
                    .rev()
                    .find_map(|line| line.strip_prefix("error: "))
                    .unwrap_or("it cannot be read")
                    .to_owned(),
                regex::Error::CompiledTooBig(_) => "it is too large".to_owned(),
                _ => "it cannot be used".to_owned(),
            };
            Outcome::error(format!(
                "`{}` is not a valid regular expression: {reason}",
                quoted(pattern)
            ))
        })
}

/// A user's pattern with the shorthand classes `\w \d \s \b` (and their negations) made
/// ASCII-only, as they are on the JVM whose patterns users write: the `regex` crate's are
/// Unicode-wide (and `\w{30}` then compiles too large). Inside `[...]` the positive classes
/// become their ASCII ranges; a negated one there stays as it is.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                match (in_class, next) {
                    (false, 'w' | 'W' | 'd' | 'D' | 's' | 'S' | 'b' | 'B') => {
                        out.push_str("(?-u:\\");
                        out.push(next);
                        out.push(')');
                    }
                    (true, 'w') => out.push_str("0-9A-Za-z_"),
                    (true, 'd') => out.push_str("0-9"),
                    (true, 's') => out.push_str(" \\t\\n\\x0B\\f\\r"),
                    _ => {
                        out.push('\\');
                        out.push(next);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` right after `[` or `[^` is a member, not the end.
                let mut lookahead = chars.clone();
                match lookahead.next() {
                    Some('^') => {
                        out.push('^');
                        chars.next();
                        if chars.clone().next() == Some(']') {
                            out.push(']');
                            chars.next();
                        }
                    }
                    Some(']') => {
                        out.push(']');
                        chars.next();
                    }
                    _ => {}
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The interpreter's randomness as a [`RandomSource`], for `yetibot-json-util`'s draws.
struct Draws<'a>(Runner<'a>);

impl RandomSource for Draws<'_> {
    fn index_below(&mut self, bound: usize) -> usize {
        self.0.random_index(bound)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use yetibot_json_util::{Object, SplitMix64};

    use super::*;
    use crate::caller::Caller;
    use crate::interpreter::{Interpreter, Reply, Settings};
    use crate::value::PathStep;
    use yetibot_history::MemoryAliases;

    /// An interpreter with the built-in commands and `fixture`, which shows `rows` and puts
    /// `records` under `items` in its data, paired with the rows.
    fn interpreter(rows: Vec<Value>, records: Vec<Value>) -> Interpreter {
        let mut registry = crate::commands::builtins();
        registry.add(CommandSpec::new("fixture", CATEGORIES).route(
            None,
            "fixture # rows with records",
            Plain(fixture(rows, records)),
        ));
        Interpreter::new(
            registry,
            Arc::new(MemoryAliases::new()),
            Box::new(SplitMix64::new(11)),
            Settings::default(),
        )
    }

    /// A handler that shows `rows` with `records` under `items` in its data.
    fn fixture(
        rows: Vec<Value>,
        records: Vec<Value>,
    ) -> impl Fn(&Call<'_>) -> Outcome + Send + Sync {
        move |_| {
            let mut data = Object::new();
            data.insert("items", Value::Array(records.clone()))
                .expect("a fresh object has no keys");
            Outcome::Data {
                value: Value::Array(rows.clone()),
                data: Some(Value::Object(data)),
                path: Some(vec![PathStep::Key("items".into())]),
            }
        }
    }

    fn run(interpreter: &Interpreter, line: &str) -> Reply {
        let caller = Caller {
            adapter: yetibot_conversation::AdapterKind::Cli,
            connection: "cli".into(),
            room: "#test".into(),
            user_id: "U1".into(),
            user_name: "tester".into(),
            trusted: true,
            message_id: None,
            platform: None,
        };
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime starts")
            .block_on(interpreter.run(&caller, line))
    }

    fn json(text: &str) -> Value {
        Value::parse(text).expect("valid JSON")
    }

    fn items(text: &str) -> Vec<Value> {
        match json(text) {
            Value::Array(items) => items,
            other => vec![other],
        }
    }

    /// Runs `line` over `rows` paired with `records` and compares the shown value's and the
    /// data's JSON, or the error.
    fn check(rows: &str, records: &str, line: &str, value: &str, data: &str) {
        let bot = interpreter(items(rows), items(records));
        let reply = run(&bot, line);
        if let Some(error) = reply.error {
            assert_eq!(error, value, "{line}");
            return;
        }
        assert_eq!(reply.value.to_json(), value, "{line}: value");
        let got = reply
            .data
            .map_or_else(|| "none".to_owned(), |d| d.to_json());
        assert_eq!(got, data, "{line}: data");
    }

    #[test]
    fn records_inside_structured_data_move_with_the_rows() {
        let rows = r#"["b","c","a"]"#;
        let records = r#"[{"id":2},{"id":3},{"id":1}]"#;
        check(
            rows,
            records,
            "fixture | sort",
            r#"["a","b","c"]"#,
            r#"[{"id":1},{"id":2},{"id":3}]"#,
        );
        check(rows, records, "fixture | head", r#""b""#, r#"{"id":2}"#);
        check(
            rows,
            records,
            "fixture | tail 2",
            r#"["c","a"]"#,
            r#"[{"id":3},{"id":1}]"#,
        );
        check(
            rows,
            records,
            "fixture | grep -v c",
            r#"["b","a"]"#,
            r#"[{"id":2},{"id":1}]"#,
        );
        // Commands that keep the rows one for one keep the data as it was.
        check(
            rows,
            records,
            "fixture | count",
            "3",
            r#"{"items":[{"id":2},{"id":3},{"id":1}]}"#,
        );
        check(
            rows,
            records,
            "fixture | keys",
            r#"["b","c","a"]"#,
            r#"{"items":[{"id":2},{"id":3},{"id":1}]}"#,
        );
    }

    #[test]
    fn records_that_do_not_pair_with_the_rows_are_not_used() {
        check(
            r#"["b","a"]"#,
            r#"[{"id":1}]"#,
            "fixture | sort",
            r#"["a","b"]"#,
            r#"["a","b"]"#,
        );
    }

    #[test]
    fn grep_matches_any_element_of_a_nested_item_and_numbers_by_text() {
        let rows = r#"[["x","needle"],["x","y"],12,"needle"]"#;
        let records = "[1,2,3,4]";
        check(
            rows,
            records,
            "fixture | grep NEEDLE",
            r#"[["x","needle"],"needle"]"#,
            "[1,4]",
        );
        check(rows, records, "fixture | grep ^1", "[12]", "[3]");
        check(
            rows,
            records,
            "fixture | grep -C 99999999999999999999 y",
            rows,
            records,
        );
    }

    #[test]
    fn flatten_splits_lines_and_repeats_the_source_record() {
        let rows = r#"[["a\nb"],"c\r\nd\n\n",["e",["f"]],7]"#;
        let records = "[1,2,3,4]";
        check(
            rows,
            records,
            "fixture | flatten",
            r#"["a","b","c","d","e","f",7]"#,
            "[1,1,2,2,3,3,4]",
        );
    }

    #[test]
    fn flatten_refuses_to_copy_records_past_the_data_bound() {
        let big = Value::String("x".repeat(MAX_VALUE_BYTES / 2));
        let bot = interpreter(items(r#"["a\nb\nc\nd"]"#), vec![big]);
        assert_eq!(
            run(&bot, "fixture | flatten").error.as_deref(),
            Some(
                "💥 Error in `flatten`: the result's data would pass 1 MiB of text; select less 💥"
            )
        );
    }

    #[test]
    fn keys_and_vals_of_a_map_use_its_entries() {
        let bot = showing(json(r#"{"url":"http://x","n":[1,2]}"#));
        assert_eq!(run(&bot, "show | keys").value.to_json(), r#"["url","n"]"#);
        assert_eq!(
            run(&bot, "show | vals").value.to_json(),
            r#"["http://x",[1,2]]"#
        );
        assert_eq!(run(&bot, "show | count").value.to_json(), "2");
        // `key: value` items are cut at every colon, as upstream cuts them.
        let reply = run(&bot, "list url: http://x, n: 2 | vals");
        assert_eq!(reply.value.to_json(), r#"["http","2"]"#);
    }

    #[test]
    fn building_commands_refuse_more_than_the_row_bound() {
        let bot = interpreter(Vec::new(), Vec::new());
        let refused = |line: String| {
            let error = run(&bot, &line).error.unwrap_or_default();
            let tail: String = error
                .chars()
                .rev()
                .take(120)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            assert!(error.ends_with(&format!("{TOO_MANY_ROWS} 💥")), "{tail}");
        };
        // Every part but the last is empty, and only trailing empty parts are dropped.
        let seps = |sep: &str| sep.repeat(MAX_ROWS) + "x";
        refused(format!("words {}", seps(" ")));
        refused(format!("list {}", seps(",")));
        refused(format!("split , {}", seps(",")));
        refused(format!("letters {}", "x".repeat(MAX_ROWS + 1)));
        let reply = run(&bot, &format!("letters {}", "x".repeat(MAX_ROWS)));
        assert_eq!(reply.value.as_array().map(<[Value]>::len), Some(MAX_ROWS));
    }

    #[test]
    fn split_with_a_pattern_bounds_its_text() {
        let bot = long_text(MAX_SPLIT_PATTERN_TEXT + 1);
        let error = run(&bot, "show | split a+").error.unwrap_or_default();
        assert!(error.contains("at most 16 KiB"), "{error:.80}");
        // A literal separator has no such limit.
        let reply = run(&bot, "show | split b");
        assert_eq!(reply.error, None);
        assert_eq!(reply.value.as_array().map(<[Value]>::len), Some(1));
    }

    /// An interpreter whose `show` command shows `value`.
    fn showing(value: Value) -> Interpreter {
        let mut registry = crate::commands::builtins();
        registry.add(CommandSpec::new("show", CATEGORIES).route(
            None,
            "show # a fixed value",
            Plain(move |_: &Call<'_>| Outcome::Value(value.clone())),
        ));
        Interpreter::new(
            registry,
            Arc::new(MemoryAliases::new()),
            Box::new(SplitMix64::new(1)),
            Settings::default(),
        )
    }

    /// An interpreter whose `show` command shows `size` letters `a`.
    fn long_text(size: usize) -> Interpreter {
        showing(Value::String("a".repeat(size)))
    }

    #[test]
    fn pathological_split_patterns_stop_at_the_row_bound() {
        // Each search for this pattern scans to the end of the text before settling on one
        // letter, so finding every match costs the text's length per match. The bounded
        // text and number of searches keep the whole below 0.3 s in release builds at the
        // text bound; the test uses a shorter text to stay quick in debug builds.
        let bot = long_text(MAX_ROWS + 100);
        let error = run(&bot, r"show | split \w+X|\w").error.unwrap_or_default();
        assert!(error.ends_with(&format!("{TOO_MANY_ROWS} 💥")), "{error}");
    }

    #[test]
    fn java_split_matches_the_jvm() {
        fn split(text: &str, sep: char) -> Vec<&str> {
            java_split(text, text.match_indices(sep).map(|(at, _)| (at, at + 1)))
                .unwrap_or_default()
        }
        assert_eq!(split("a,b,,c,,", ','), ["a", "b", "", "c"]);
        assert_eq!(split(",a", ','), ["", "a"]);
        assert_eq!(split("", ','), [""]);
        assert_eq!(split(",,", ','), Vec::<&str>::new());
        // Trailing empty parts past the row bound are dropped, not refused.
        let trailing = format!("x{}", ",".repeat(MAX_ROWS * 2));
        assert_eq!(split(&trailing, ','), ["x"]);
        assert_eq!(split("abc", ','), ["abc"]);
        // A zero-width match at the start makes no leading empty part.
        let empty = compile("", false).unwrap_or_else(|_| panic!("the empty pattern compiles"));
        let parts = java_split("abc", empty.find_iter("abc").map(|m| (m.start(), m.end())));
        assert_eq!(parts.unwrap_or_default(), ["a", "b", "c"]);
    }

    #[test]
    fn context_windows_are_merged() {
        let hits = [false, true, false, false, false, true];
        assert_eq!(with_context(&hits, 0), [1, 5]);
        assert_eq!(with_context(&hits, 1), [0, 1, 2, 4, 5]);
        assert_eq!(with_context(&hits, usize::MAX), [0, 1, 2, 3, 4, 5]);
        assert_eq!(with_context(&[], 3), Vec::<usize>::new());
    }

    #[test]
    fn key_value_items_need_a_character_on_each_side_of_a_colon() {
        assert!(is_key_value("a: b"));
        assert!(is_key_value("a::"));
        assert!(!is_key_value("a:"));
        assert!(!is_key_value(":a"));
        assert!(!is_key_value("a\n:b"));
        assert_eq!(java_parts("a::", ':').collect::<Vec<_>>(), ["a"]);
        assert_eq!(
            java_parts("a:b:c", ':').collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn counts_saturate() {
        assert_eq!(count_of("007"), 7);
        assert_eq!(count_of("99999999999999999999999"), usize::MAX);
    }

    /// The commands that pick, drop, reorder or filter rows, and whether each gives one row.
    const PICKERS: &[(&str, bool)] = &[
        ("sort", false),
        ("shuffle", false),
        ("grep a", false),
        ("grep -v b", false),
        ("grep -C 1 c", false),
        ("head 2", false),
        ("tail 2", false),
        ("take 3", false),
        ("reverse", false),
        ("set", false),
        ("rest", false),
        ("droplast", false),
        ("flatten", false),
        ("sort | reverse | head 3", false),
        ("head", true),
        ("tail", true),
        ("random", true),
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn rows_and_records_stay_paired(rows in prop::collection::vec("[abc]{0,3}", 0..12)) {
            let records: Vec<Value> = rows
                .iter()
                .enumerate()
                .map(|(i, row)| json(&format!(r#"{{"row":"{row}","i":{i}}}"#)))
                .collect();
            let values: Vec<Value> = rows.iter().cloned().map(Value::String).collect();
            let bot = interpreter(values, records);
            let row_of = |record: &Value| record.as_object().and_then(|o| o.get("row")).cloned();
            for &(command, single) in PICKERS {
                let reply = run(&bot, &format!("fixture | {command}"));
                prop_assert!(reply.error.is_none(), "{command}: {:?}", reply.error);
                if single {
                    // Of nothing, `head` and `tail` give empty text and `random` a number.
                    if !rows.is_empty() {
                        let record = reply.data.as_ref().and_then(row_of);
                        prop_assert_eq!(record, Some(reply.value.clone()), "{}", command);
                    }
                    continue;
                }
                let shown = reply.value.as_array().map(<[Value]>::to_vec).unwrap_or_default();
                let data = reply.data.as_ref().and_then(Value::as_array).map(<[Value]>::to_vec).unwrap_or_default();
                prop_assert_eq!(shown.len(), data.len(), "{}", command);
                for (row, record) in shown.iter().zip(&data) {
                    prop_assert_eq!(row_of(record), Some(row.clone()), "{}", command);
                }
                if command == "set" {
                    // The record kept is the first occurrence's.
                    for record in &data {
                        let i = record.as_object().and_then(|o| o.get("i")).map(Value::to_json);
                        let first = row_of(record)
                            .and_then(|row| rows.iter().position(|r| Some(r.as_str()) == row.as_str()))
                            .map(|p| p.to_string());
                        prop_assert_eq!(i, first);
                    }
                }
            }
        }
    }
}
