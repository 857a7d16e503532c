//! `alias`: user-defined commands. `alias name = "expr"` defines one (named by its first
//! word only), `alias` lists them (an error when there are none), `alias remove name`
//! deletes one (an error when there is no such alias). Running an alias is the
//! interpreter's job.

use yetibot_json_util::Value;

use futures_util::future::BoxFuture;

use crate::registry::{Call, Category, CommandSpec, Handler};
use crate::syntax;
use crate::value::Outcome;
use yetibot_history::Alias;

pub(crate) fn commands() -> Vec<CommandSpec> {
    vec![
        CommandSpec::new("alias", &[Category::UTIL])
            .route(
                Some(r"^\s*$"),
                "alias # list the aliases",
                Aliases::List,
            )
            .route(
                Some(r"^\s*remove\s+(\S+)\s*$"),
                "alias remove <name> # remove alias <name>",
                Aliases::Remove,
            )
            .route(
                Some(r"^\s*([^\s=]+)((?:\s+[^\s=][^=]*?)?)\s*=\s*(.+)$"),
                "alias <name> = \"<expr>\" # define <name> as <expr>; $s is all arguments, $1..$n one each, otherwise they are appended",
                Aliases::Define,
            ),
    ]
}

enum Aliases {
    List,
    Remove,
    Define,
}

impl Handler for Aliases {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            match self {
                Self::List => list(&call).await,
                Self::Remove => remove(&call).await,
                Self::Define => define(&call).await,
            }
        })
    }
}

async fn list(call: &Call<'_>) -> Outcome {
    match call.runner.aliases().list().await {
        Ok(aliases) if aliases.is_empty() => Outcome::error("No aliases have been defined"),
        Ok(aliases) => Outcome::Value(Value::Array(
            aliases
                .into_iter()
                .map(|a| Value::String(format!("{}: {}", a.name, a.expression)))
                .collect(),
        )),
        Err(error) => Outcome::error(error.to_string()),
    }
}

async fn remove(call: &Call<'_>) -> Outcome {
    let name = call.group(1);
    match call.runner.aliases().remove(name).await {
        Ok(Some(_)) => Outcome::text(format!("Alias {name} removed")),
        Ok(None) => Outcome::error(format!("Could not find alias {name}.")),
        Err(error) => Outcome::error(error.to_string()),
    }
}

async fn define(call: &Call<'_>) -> Outcome {
    let name = call.group(1);
    // An alias is named by one word; the words after it are left out, and the answer says so.
    let dropped = call.group(2).trim();
    let body = unquote(call.group(3).trim_end());
    if call.runner.registry().get(name).is_some() {
        return Outcome::text(format!("Can not alias existing built-in command {name}"));
    }
    if name.contains(['|', '`', '$', '"', '\'']) {
        return Outcome::error(format!(
            "an alias name cannot contain | ` $ or quotes: {name}"
        ));
    }
    if let Err(error) = syntax::parse(body) {
        return Outcome::error(format!("the alias body cannot be read: {error}"));
    }
    let alias = Alias {
        name: name.to_owned(),
        expression: body.to_owned(),
        user_id: call.runner.caller().user_id.clone(),
    };
    let note = if dropped.is_empty() {
        String::new()
    } else {
        format!(" (an alias name is one word, so `{dropped}` was left out)")
    };
    match call.runner.aliases().put(alias).await {
        Ok(None) => Outcome::text(format!("{name} alias created{note}")),
        Ok(Some(old)) => Outcome::text(format!(
            "Replaced existing alias {name}. Was `{}`{note}",
            old.expression
        )),
        Err(error) => Outcome::error(error.to_string()),
    }
}

/// The body without one pair of surrounding quotes.
fn unquote(body: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = body
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner;
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::unquote;

    #[test]
    fn one_pair_of_quotes_comes_off() {
        assert_eq!(unquote(r#""echo hi""#), "echo hi");
        assert_eq!(unquote("'echo hi'"), "echo hi");
        assert_eq!(unquote(r#"""x"""#), r#""x""#);
        assert_eq!(unquote(r#""half"#), r#""half"#);
        assert_eq!(unquote("\""), "\"");
    }
}
