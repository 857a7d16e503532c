//! `ai proposal <id> [<page>]`, `ai approve <id>` and `ai cancel <id>`: the requester's own
//! review, consent and withdrawal. Each must be typed alone; who may do what is decided by
//! `yetibot_pull_requests::Proposals::consent`, and an approval runs the one-shot executor.

use yetibot_command::{Call, Outcome};
use yetibot_pull_requests::{Consent, State, Verb, describe};

use crate::proposals::{is_original, requester_of};
use crate::services::AiServices;

/// Runs one of the commands for the call's caller.
pub(crate) async fn run(services: &AiServices, call: &Call<'_>, verb: Verb, id: &str) -> Outcome {
    // A proposal's pages and its execution are private output: this request logs no more.
    yetibot_redaction::private::mark_private();
    if !call.runner.is_direct() {
        return Outcome::error(format!(
            "`ai {}` must be sent on its own, typed by you: a pipe, alias or generated \
             command cannot review, approve or cancel a proposal",
            verb.word()
        ));
    }
    let caller = call.runner.caller();
    let original = is_original(caller);
    let requester = requester_of(caller);
    let audit = |event: &yetibot_pull_requests::AuditEvent| services.audit(event);
    let consent = services.proposals.consent(
        id,
        verb,
        requester.as_ref(),
        original,
        (services.clock)(),
        &audit,
    );
    let approved = match consent {
        Consent::Page(text) | Consent::Cancelled(text) => return Outcome::text(text),
        Consent::Refused(why) => return Outcome::error(why),
        Consent::Approved(proposal) => proposal,
    };
    match super::guard::execute(services, &approved).await {
        State::Opened(url) => Outcome::text(format!(
            "Opened draft pull request {url} for proposal {id} ({} on {}).",
            approved.hash,
            approved.repository()
        )),
        other => Outcome::error(format!("Proposal {id} {}", describe(&other))),
    }
}
