//! The AI commands' specs and what a conductor knows of them: `ai` (its listings, the
//! runtime default and prompts), `grok` with its hints, and `commands()`, which adds `cf` and
//! `zen` from their own modules.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use yetibot_command::{Call, CommandSpec, Handler, Hints, Outcome};

use crate::flags::Command;
use crate::pinned::GROK;
use crate::request::CATEGORY;
use crate::services::AiServices;
use crate::{cf, listing, prompt, zen};

/// What a chat conductor knows of `ai` before it runs: a status card from the start, and a
/// rerun that may call paid models again.
const AI_HINTS: Hints = Hints {
    live_progress: true,
    interim_replies: false,
    opens_thread: None,
    may_cost: true,
};

/// `grok` as `ai`, and also: its interim messages are shown as they come where the platform
/// can, and a prompt sent alone opens a reply thread unless told `--no-thread`.
const GROK_HINTS: Hints = Hints {
    live_progress: true,
    interim_replies: true,
    opens_thread: Some(grok_opens_thread),
    may_cost: true,
};

/// Whether a `grok` line with these arguments opens a reply thread: a prompt whose options
/// read cleanly and do not say `--no-thread` (a refused option answers in place).
fn grok_opens_thread(args: &str) -> bool {
    crate::flags::parse(args, Command::Grok)
        .is_ok_and(|options| !options.no_thread && !options.prompt.trim().is_empty())
}

/// The AI and media commands (`ai`, `grok`, `cf`, `zen`, `meme`, `gi`, `wise`, `clef`, `clairic`) over these services, to add to the interpreter's registry.
#[must_use]
pub fn commands(services: Arc<AiServices>) -> Vec<CommandSpec> {
    let cf = cf::spec(Arc::clone(&services));
    let zen = zen::spec(Arc::clone(&services));
    let decisions = crate::clef::command::specs(&services);
    let meme = crate::meme::command::spec(&services);
    let gi = crate::gi::command::spec(&services);
    let wise = crate::wise::command::spec(&services);
    let ai = Ai { services };
    let spec = CommandSpec::new("ai", &[CATEGORY])
        .hints(AI_HINTS)
        .route(
            Some("^providers$"),
            "ai providers # list the configured AI providers",
            ai.clone(),
        )
        .route(
            Some(r"^models(\s+\S+)?$"),
            "ai models [<provider>] # list every provider's models, or one provider's",
            ai.clone(),
        )
        .route(
            Some("^servers$"),
            "ai servers # list the configured MCP servers",
            ai.clone(),
        )
        .route(
            Some(r"^tools(\s.*)?$"),
            "ai tools [<server> | <server/tool> | <tool>] # list the tools a prompt may use, or one tool's help",
            ai.clone(),
        )
        .route(
            Some("^toolsets$"),
            "ai toolsets # list the named toolsets",
            ai.clone(),
        )
        .route(
            Some(r"^default(\s.*)?$"),
            "ai default [<provider> <model> | reset] # show, set or reset the runtime AI default (admins set it)",
            ai.clone(),
        )
        .route(
            Some(r"^proposal\s+[A-Za-z0-9_-]{1,64}(\s+[0-9]{1,3})?$"),
            "ai proposal <id> [<page>] # review a pending GitHub change proposal, page by page",
            ai.clone(),
        )
        .route(
            Some(r"^(approve|cancel)\s+[A-Za-z0-9_-]{1,64}$"),
            "ai approve <id> | ai cancel <id> # approve (after reviewing every page) or cancel a pending proposal",
            ai.clone(),
        )
        .route(
            None,
            "ai [--provider <name>] [--model <id>] [--toolset <name>] [--no-tools] [--max-tool-calls <n>] [--] <prompt> # ask a model",
            ai.clone(),
        );
    let grok = CommandSpec::new("grok", &[CATEGORY]).hints(GROK_HINTS).route(
        None,
        "grok [--model <id>] [--toolset <name>] [--no-tools] [--no-thread] [--max-tool-calls <n>] [--] <prompt> # ask Grok, with web and X search",
        Grok(ai),
    );
    let mut specs = vec![spec, grok, cf, zen, meme, gi, wise];
    specs.extend(decisions);
    specs
}

/// The `grok` handler: prompts pinned to the provider named `grok` (or the xAI key's).
struct Grok(Ai);

impl Handler for Grok {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let typed = call.typed_args();
            prompt::run(&self.0.services, &call, typed, Command::Grok, Some(&GROK)).await
        })
    }
}

/// The `ai` handler. Every route runs it: it reads the arguments the caller typed (without
/// piped text) itself, so that piped text never selects a sub-command.
#[derive(Clone)]
struct Ai {
    services: Arc<AiServices>,
}

impl Handler for Ai {
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let services = self.services.as_ref();
            let typed = call.typed_args();
            let (word, rest) = match typed.split_once(char::is_whitespace) {
                Some((word, rest)) => (word, rest.trim()),
                None => (typed, ""),
            };
            match (word, rest) {
                ("providers", "") => listing::providers(services),
                ("models", rest) if !rest.contains(char::is_whitespace) => {
                    listing::models(services, (!rest.is_empty()).then_some(rest)).await
                }
                ("servers", "") => listing::servers(services, &call),
                ("toolsets", "") => listing::toolsets(services, &call),
                ("tools", selector) => listing::tools(services, &call, selector).await,
                ("default", rest) => listing::default(services, &call, rest).await,
                ("proposal" | "approve" | "cancel", rest) if proposal_id(word, rest).is_some() => {
                    proposal(services, &call, word, rest).await
                }
                _ => prompt::run(services, &call, typed, Command::Ai, None).await,
            }
        })
    }
}

/// The proposal ID of `ai proposal <id> [<page>]`, `ai approve <id>` or `ai cancel <id>`:
/// one word of letters, digits, `-` and `_` (at most 64), and for `proposal` an optional page
/// number. Anything else after these words is a prompt.
fn proposal_id<'a>(word: &str, rest: &'a str) -> Option<&'a str> {
    let mut parts = rest.split_whitespace();
    let id = parts.next()?;
    let page = parts.next();
    let well_formed = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let page_ok = match (word, page) {
        (_, None) => true,
        ("proposal", Some(page)) => {
            (1..=3).contains(&page.len()) && page.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    };
    (well_formed && page_ok && parts.next().is_none()).then_some(id)
}

/// Reviewing, approving and cancelling a proposal never reach a model: they are the
/// requester's own consent, checked and carried out by the host.
async fn proposal(services: &AiServices, call: &Call<'_>, word: &str, rest: &str) -> Outcome {
    use crate::github::command::run;
    use yetibot_pull_requests::Verb;
    let id = proposal_id(word, rest).unwrap_or_default();
    let verb = match word {
        "approve" => Verb::Approve,
        "cancel" => Verb::Cancel,
        _ => Verb::Review(
            rest.split_whitespace()
                .nth(1)
                .and_then(|page| page.parse().ok())
                .unwrap_or(1),
        ),
    };
    run(services, call, verb, id).await
}

#[cfg(test)]
mod tests {
    use super::{grok_opens_thread, proposal_id};

    #[test]
    fn only_a_well_formed_proposal_id_is_a_proposal_command() {
        assert_eq!(proposal_id("proposal", "p-1"), Some("p-1"));
        assert_eq!(proposal_id("proposal", "p_1 2"), Some("p_1"));
        assert_eq!(proposal_id("approve", "abc"), Some("abc"));
        assert_eq!(proposal_id("approve", "abc 2"), None);
        assert_eq!(proposal_id("cancel", "this plan please"), None);
        assert_eq!(proposal_id("proposal", ""), None);
        assert_eq!(proposal_id("proposal", "a 1234"), None);
        assert_eq!(proposal_id("proposal", &"x".repeat(65)), None);
        assert_eq!(proposal_id("proposal", "a\u{202e}b"), None);
    }

    #[test]
    fn grok_opens_a_reply_thread_unless_told_not_to() {
        assert!(grok_opens_thread(" What is new?"));
        assert!(grok_opens_thread("--model g --no-tools What is new?"));
        assert!(!grok_opens_thread("--no-thread What is new?"));
        assert!(!grok_opens_thread("--model g --no-thread --no-tools hi"));
        assert!(!grok_opens_thread(""));
        assert!(
            !grok_opens_thread("--provider x hi"),
            "a refused option answers in place"
        );
    }
}
