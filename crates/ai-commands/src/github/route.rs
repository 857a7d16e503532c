//! Clef intent routing (opt-in `:intent-router`): a standalone `ai` message from an identity,
//! provider and model the routing `github-pr` toolset authorizes is classified by Clef from
//! its own text alone. Only a change request that meets both thresholds and names exactly one
//! of the toolset's repositories becomes code work: the generation model stages under that
//! toolset, and the host pushes the staged bytes and opens a draft pull request with no
//! review in chat. Every other outcome answers normally or asks for clarification, and
//! nothing is written. Process-local receipts keyed by the platform message make a
//! redelivered message reuse its first outcome.

use serde_json::Value;
use yetibot_command::Call;
use yetibot_tool_policy::{RequestContext, Selection, ToolsetKind};

use crate::clef::{self, Failure, Job, wire::Model};
use crate::flags::{Command, Options};
use crate::proposals::{AutomaticStaging, Routing, is_original, requester_of};
use crate::services::AiServices;
use yetibot_pull_requests::limits::DEFAULT_BRANCH_PREFIX;
use yetibot_pull_requests::{
    Begin, Receipt, State, automatic_branch, decision, intent_questions, named_repositories,
};

/// Automatic code work for one message.
#[derive(Debug, Clone)]
pub(crate) struct CodeWork {
    /// The message's receipt key.
    pub(crate) key: String,
    /// The routing `github-pr` toolset.
    pub(crate) toolset: String,
    /// What the request may stage, and the branch execution creates.
    pub(crate) staging: AutomaticStaging,
}

/// What routing decided for a request.
pub(crate) enum Routed {
    /// Not eligible, or a read-only decision: answer as usual.
    Normal {
        /// Something to tell the requester beside the answer.
        note: Option<String>,
    },
    /// Answer with this instead of asking a model (a clarification, a refusal, a duplicate).
    Reply(yetibot_command::Outcome),
    /// Code work under the routing toolset.
    Code(CodeWork),
}

/// The routing settings when `call` is eligible: a standalone `ai` prompt typed as a new
/// message by a platform user (no pipe, alias, generated command or observer), without
/// `--toolset` or `--no-tools` or piped data, from an identity, provider and model the
/// routing toolset authorizes.
pub(crate) fn eligible<'s>(
    services: &'s AiServices,
    call: &Call<'_>,
    options: &Options,
    command: Command,
    piped: bool,
    context: &RequestContext,
) -> Option<&'s Routing> {
    let routing = services.routing.as_ref()?;
    let caller = call.runner.caller();
    let fresh = is_original(caller);
    let plain = command == Command::Ai
        && options.toolset.is_none()
        && !options.no_tools
        && !piped
        && call.runner.is_direct()
        && fresh
        && caller.message_id.is_some()
        && requester_of(caller).is_some();
    if !plain {
        return None;
    }
    let selection = Selection::choose(&services.policy, Some(&routing.toolset)).ok()?;
    let toolset = selection.toolset()?;
    (toolset.kind == ToolsetKind::GithubPr && selection.authorize(context).is_ok())
        .then_some(routing)
}

/// A message's receipt key: where it was sent (the requester's adapter, connection, room
/// and thread) and its platform ID.
fn receipt_key(call: &Call<'_>) -> String {
    let caller = call.runner.caller();
    let place = requester_of(caller).map(|r| {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            r.adapter.as_str(),
            r.connection,
            r.room,
            r.thread.unwrap_or_default()
        )
    });
    format!(
        "{}\u{1f}{}",
        place.unwrap_or_default(),
        caller.message_id.as_deref().unwrap_or_default()
    )
}

/// Routes an eligible request.
pub(crate) async fn route(
    services: &AiServices,
    call: &Call<'_>,
    routing: &Routing,
    prompt: &str,
) -> Routed {
    use yetibot_command::Outcome;
    let key = receipt_key(call);
    let now = (services.clock)();
    match services.receipts.get(&key, now) {
        None => {}
        Some(Receipt::Answer) => return Routed::Normal { note: None },
        Some(Receipt::Clarify(text)) => return Routed::Reply(Outcome::text(text)),
        Some(Receipt::Running) => {
            return Routed::Reply(Outcome::text(
                "This message is already being worked on; nothing else was started.",
            ));
        }
        Some(Receipt::Done(text)) => {
            return Routed::Reply(Outcome::text(format!(
                "This message was already handled, so nothing was started again: {text}"
            )));
        }
    }
    // A request quoting a credential is refused before Clef hears of it.
    if services.client.secrets().contains_secret(prompt) {
        return Routed::Reply(Outcome::error(
            "the request quotes a configured credential, so it was not classified or answered; revoke that credential if it was real",
        ));
    }
    let unclassified = |why: &str| Routed::Normal {
        note: Some(format!(
            "Clef could not classify this request ({why}), so it was answered without changing any repository."
        )),
    };
    let job = Job {
        model: Model::Clef,
        state: Value::String(prompt.to_owned()),
        schema: intent_questions(),
        images: Vec::new(),
    };
    let credentials = match clef::credentials(services, Model::Clef, [prompt]).await {
        Ok(credentials) => credentials,
        Err(Failure::NotSent(_) | Failure::Unknown(_)) => {
            return unclassified("its account or token could not be used");
        }
    };
    let Ok(done) = clef::run(services, &job, credentials).await else {
        return unclassified("it did not answer");
    };
    let Some(decision) = decision(&done.reply.answers) else {
        return unclassified("its answer was unusable");
    };
    if decision.chose_answer {
        services.receipts.decided(&key, Receipt::Answer, now);
        return Routed::Normal { note: None };
    }
    let clarify = |text: String| {
        services
            .receipts
            .decided(&key, Receipt::Clarify(text.clone()), now);
        Routed::Reply(Outcome::text(text))
    };
    let min = routing.min_probability;
    if !(decision.chose_change && decision.change >= min && decision.explicit >= min) {
        return clarify(format!(
            "This may be a change request, but not clearly enough to push a change automatically (change {}, explicit {}; both must reach {}). Nothing was changed. Say exactly what to change and where, or use `ai --toolset {} ...` to review a proposal before anything is pushed.",
            clef::wire::number(decision.change),
            clef::wire::number(decision.explicit),
            clef::wire::number(min),
            routing.toolset
        ));
    }
    let Some(github) = services
        .policy
        .get(&routing.toolset)
        .and_then(|toolset| toolset.github.as_ref())
    else {
        return Routed::Normal { note: None };
    };
    let named = named_repositories(prompt, &github.repositories);
    let repository = match named.as_slice() {
        [one] => (*one).to_owned(),
        [] => {
            return clarify(format!(
                "Which repository? Name it as owner/repo; automatic changes may go to: {}. Nothing was changed.",
                github.repositories.join(", ")
            ));
        }
        _ => {
            return clarify(
                "That names more than one repository; ask for one change in one owner/repo at a time. Nothing was changed."
                    .to_owned(),
            );
        }
    };
    match services.receipts.begin(&key, now) {
        Begin::Started => {}
        Begin::Seen(_) => {
            return Routed::Reply(Outcome::text(
                "This message is already being worked on; nothing else was started.",
            ));
        }
        Begin::Full => {
            return Routed::Reply(Outcome::error(
                "too many automatic changes are held right now; nothing was started (try again later or use a reviewed proposal)",
            ));
        }
    }
    let prefix = github
        .branch_prefix
        .clone()
        .unwrap_or_else(|| DEFAULT_BRANCH_PREFIX.to_owned());
    let branch = automatic_branch(&prefix, &key);
    Routed::Code(CodeWork {
        key,
        toolset: routing.toolset.clone(),
        staging: AutomaticStaging { repository, branch },
    })
}

/// Runs the automatic proposal `staged` (if the model staged one) and returns what the
/// requester is told (and a redelivery repeats).
pub(crate) async fn complete(
    services: &AiServices,
    staged: Option<String>,
    answered: bool,
) -> String {
    match (staged, answered) {
        (None, _) => "No change was staged, so nothing was pushed.".to_owned(),
        (Some(id), false) => {
            services.proposals.settle(
                &id,
                State::Failed("the request failed after staging; nothing was pushed".to_owned()),
                (services.clock)(),
            );
            "The request failed after the change was staged, so nothing was pushed.".to_owned()
        }
        (Some(id), true) => run_staged(services, &id).await,
    }
}

async fn run_staged(services: &AiServices, id: &str) -> String {
    let now = (services.clock)();
    let taken = services.proposals.with(id, now, |proposal| {
        (proposal.state == State::Pending && proposal.automatic_branch.is_some()).then(|| {
            proposal.state = State::Running;
            proposal.clone()
        })
    });
    let Some(Some(proposal)) = taken else {
        return "The staged change could not be found, so nothing was pushed.".to_owned();
    };
    match super::guard::execute(services, &proposal).await {
        State::Opened(url) => format!(
            "Opened draft pull request {url} ({}, automatic; review it on GitHub before merging).",
            proposal.hash
        ),
        State::Failed(text) | State::Unknown(text) => {
            format!("The automatic change to {} {text}", proposal.repository())
        }
        other => format!(
            "The automatic change {}.",
            yetibot_pull_requests::describe(&other)
        ),
    }
}
