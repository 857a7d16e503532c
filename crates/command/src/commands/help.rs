//! `help`: the command list, one command's usage, and a close guess for a word it does not
//! know (an unknown command word runs `help` with the whole line; several words whose first
//! is nothing like a topic get help's own usage).

use yetibot_json_util::Value;

use futures_util::future::BoxFuture;

use crate::registry::{Call, Category, CommandSpec, Handler};
use crate::value::Outcome;

/// Commands listed per page of `help`.
pub(crate) const PAGE_SIZE: usize = 40;
/// The largest edit distance a guess may have.
const MAX_DISTANCE: usize = 3;
/// Words longer than this are never fuzzy-matched (no command is this long).
const MAX_GUESS_CHARS: usize = 64;

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![
        CommandSpec::new("help", &[Category::INFO])
            .route(Some(r"^\s*$"), "help # list the commands", Help::Page)
            .route(
                Some(r"^\s*(?:page\s+)?(\d+)\s*$"),
                "help page <n> # page <n> of the command list (`help <n>` too)",
                Help::Page,
            )
            .route(
                None,
                "help <command or category> # how to use <command>, or the commands of <category>",
                Help::Topic,
            ),
    ]
}

enum Help {
    Page,
    Topic,
}

impl Handler for Help {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            match self {
                Self::Page => page(&call).await,
                Self::Topic => topic(&call).await,
            }
        })
    }
}

async fn page(call: &Call<'_>) -> Outcome {
    let number: usize = call.group(1).parse().unwrap_or(1).max(1);
    let mut lines: Vec<String> = call
        .runner
        .registry()
        .iter()
        .map(|spec| {
            let summary = spec.help().into_iter().next().unwrap_or_default();
            match summary.split_once(" # ") {
                Some((_, what)) => format!("{}: {what}", spec.name),
                None => spec.name.clone(),
            }
        })
        .collect();
    if let Ok(aliases) = call.runner.aliases().list().await {
        lines.extend(
            aliases
                .into_iter()
                .map(|alias| format!("{}: alias for `{}`", alias.name, alias.expression)),
        );
    }
    let pages = lines.len().div_ceil(PAGE_SIZE).max(1);
    if number > pages {
        return Outcome::error(format!("there are only {pages} pages of help"));
    }
    let mut shown: Vec<Value> = vec![Value::String(if pages == 1 {
        "Use `help <command>` for details:".to_owned()
    } else {
        format!("Use `help <command>` for details (page {number} of {pages}):")
    })];
    shown.extend(
        lines
            .into_iter()
            .skip((number - 1) * PAGE_SIZE)
            .take(PAGE_SIZE)
            .map(Value::String),
    );
    if number < pages {
        let next = number + 1;
        shown.push(Value::String(format!(
            "Page {number} of {pages}: `help page {next}` shows the next."
        )));
    }
    Outcome::Value(Value::Array(shown))
}

async fn topic(call: &Call<'_>) -> Outcome {
    let word = call.args.split_whitespace().next().unwrap_or_default();
    if let Some(spec) = call.runner.registry().get(word) {
        return usage(spec);
    }
    match call.runner.aliases().get(word).await {
        Ok(Some(alias)) => {
            return Outcome::text(format!("{word} is an alias for `{}`", alias.expression));
        }
        Ok(None) => {}
        Err(error) => return Outcome::error(error.to_string()),
    }
    // A category is a topic too: the commands in it.
    let named = Category::LANGUAGE
        .into_iter()
        .chain(
            call.runner
                .registry()
                .iter()
                .flat_map(|spec| spec.categories.iter().copied()),
        )
        .find(|c| c.name() == word);
    if let Some(category) = named {
        let names: Vec<Value> = call
            .runner
            .registry()
            .iter()
            .filter(|spec| spec.categories.contains(&category))
            .map(|spec| Value::String(spec.name.clone()))
            .collect();
        return Outcome::Value(Value::Array(names));
    }
    let mut names: Vec<String> = call
        .runner
        .registry()
        .iter()
        .map(|spec| spec.name.clone())
        .collect();
    if let Ok(aliases) = call.runner.aliases().list().await {
        names.extend(aliases.into_iter().map(|alias| alias.name));
    }
    let mut close: Vec<(usize, String)> = names
        .into_iter()
        .filter_map(|name| Some((distance(word, &name)?, name)))
        .filter(|(d, _)| *d <= MAX_DISTANCE)
        .collect();
    // Only the closest guesses count: within three edits of a short word lies almost
    // every short command name.
    let best = close.iter().map(|(d, _)| *d).min().unwrap_or_default();
    close.retain(|(d, _)| *d == best);
    close.sort();
    match close.as_slice() {
        // Several words whose first is nothing like a topic (an unknown command line such
        // as `somerandom command` comes here whole): how to use help itself.
        [] if call.args.split_whitespace().nth(1).is_some() => {
            match call.runner.registry().get("help") {
                Some(help) => usage(help),
                None => Outcome::error(format!("No matches for \"{word}\"")),
            }
        }
        [] => Outcome::error(format!(
            "No matches for \"{word}\"; `help` lists the commands"
        )),
        [(_, only)] => match call.runner.registry().get(only) {
            Some(spec) => usage(spec),
            None => Outcome::text(format!("Did you mean {only}?")),
        },
        many => {
            let names: Vec<&str> = many.iter().map(|(_, name)| name.as_str()).collect();
            Outcome::text(format!(
                "No matches for \"{word}\". Did you mean: {}?",
                names.join(", ")
            ))
        }
    }
}

fn usage(spec: &CommandSpec) -> Outcome {
    Outcome::Value(Value::Array(
        spec.help().into_iter().map(Value::String).collect(),
    ))
}

/// The Levenshtein distance between `a` and `b` in characters, `None` for words too long
/// to be worth comparing.
fn distance(a: &str, b: &str) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len() > MAX_GUESS_CHARS || b.len() > MAX_GUESS_CHARS {
        return None;
    }
    Some(yetibot_conversation::edit_distance(&a, &b))
}

#[cfg(test)]
mod tests {
    use super::distance;

    #[test]
    fn edit_distance() {
        assert_eq!(distance("ech", "echo"), Some(1));
        assert_eq!(distance("", "abc"), Some(3));
        assert_eq!(distance("kitten", "sitting"), Some(3));
        assert_eq!(distance(&"x".repeat(65), "x"), None);
    }
}
