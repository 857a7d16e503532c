//! `ai proposal <id> [<page>]`, `ai approve <id>` and `ai cancel <id>`: the requester's own
//! review, consent and withdrawal. Each must be typed alone by the person who asked, in the
//! same room and thread; approval also needs a new message (not an edit, reaction or rerun),
//! a pending proposal within its ten minutes, and every page read.

use yetibot_command::{Call, Outcome};

use super::execute::execute;
use crate::proposals::{AuditEvent, AuditStep, Proposal, Requester, State};
use crate::services::AiServices;

/// The words these commands take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// Read a page.
    Review(usize),
    Approve,
    Cancel,
}

impl Verb {
    fn word(self) -> &'static str {
        match self {
            Self::Review(_) => "proposal",
            Self::Approve => "approve",
            Self::Cancel => "cancel",
        }
    }
}

/// The reply to anyone but the requester, and to an ID that is not held: the same, so an
/// ID reveals nothing about other people's proposals.
fn not_held(id: &str) -> Outcome {
    Outcome::error(format!(
        "there is no pending proposal `{id}` of yours here (proposals are bound to the person, channel and thread that asked, expire after 10 minutes, and are lost when the bot restarts)"
    ))
}

fn audit(services: &AiServices, proposal: &Proposal, step: AuditStep, detail: impl Into<String>) {
    services.audit(&AuditEvent {
        proposal: proposal.id.clone(),
        step,
        repository: proposal.repository(),
        requester: proposal.requester.label(),
        detail: detail.into(),
    });
}

/// Runs one of the commands for the call's caller.
pub(crate) async fn run(services: &AiServices, call: &Call<'_>, verb: Verb, id: &str) -> Outcome {
    let word = verb.word();
    if !call.runner.is_direct() {
        return Outcome::error(format!(
            "`ai {word}` must be sent on its own, typed by you: a pipe, alias or generated \
             command cannot review, approve or cancel a proposal"
        ));
    }
    let caller = call.runner.caller();
    let requester = Requester::of(caller);
    let original = caller
        .platform
        .as_deref()
        .is_some_and(|platform| platform.is_original_message());
    let now = (services.clock)();
    // Decided under the store's lock, so two approvals cannot both start.
    let decided = services.proposals.with(id, now, |proposal| {
        if requester.as_ref() != Some(&proposal.requester) {
            audit(services, proposal, AuditStep::Refused, format!("{word}: another person or place"));
            return Err(not_held(id));
        }
        if proposal.automatic_branch.is_some() && !matches!(verb, Verb::Review(_)) {
            audit(services, proposal, AuditStep::Refused, format!("{word}: automatic"));
            return Err(Outcome::error(format!(
                "proposal {id} was staged by automatic routing, which pushes without chat approval; it cannot be approved or cancelled here"
            )));
        }
        match verb {
            Verb::Review(page) => {
                let total = proposal.pages.len();
                let Some(text) = page.checked_sub(1).and_then(|i| proposal.pages.get(i)).cloned()
                else {
                    return Err(Outcome::error(format!(
                        "proposal {id} has pages 1 to {total}"
                    )));
                };
                if let Some(seen) = proposal.seen.get_mut(page - 1) {
                    *seen = true;
                }
                let state = match &proposal.state {
                    State::Pending => String::new(),
                    other => format!("\n(status: {})", describe(other)),
                };
                audit(services, proposal, AuditStep::Reviewed, format!("page {page}/{total}"));
                Ok(Err(Outcome::text(format!("{text}{state}"))))
            }
            Verb::Cancel => {
                if proposal.state != State::Pending {
                    return Err(Outcome::error(format!(
                        "proposal {id} can no longer be cancelled: {}",
                        describe(&proposal.state)
                    )));
                }
                proposal.state = State::Cancelled;
                audit(services, proposal, AuditStep::Cancelled, "by the requester");
                Ok(Err(Outcome::text(format!(
                    "Cancelled proposal {id}; nothing was written to GitHub."
                ))))
            }
            Verb::Approve => {
                let refuse = |why: String| {
                    audit(services, proposal, AuditStep::Refused, why.clone());
                    Err(Outcome::error(why))
                };
                if !original {
                    return refuse(format!(
                        "approve proposal {id} with a new message typed by you: an edited message, a reaction or a rerun cannot approve"
                    ));
                }
                if proposal.state != State::Pending {
                    return refuse(format!(
                        "proposal {id} cannot be approved: {}",
                        describe(&proposal.state)
                    ));
                }
                if proposal.expired(now) {
                    return refuse(format!(
                        "proposal {id} expired 10 minutes after it was staged; ask for a new one"
                    ));
                }
                let unread: Vec<String> = proposal
                    .seen
                    .iter()
                    .enumerate()
                    .filter(|(_, seen)| !**seen)
                    .map(|(i, _)| (i + 1).to_string())
                    .collect();
                if !unread.is_empty() {
                    return refuse(format!(
                        "read every page of proposal {id} before approving it: page(s) {} not yet shown (`ai proposal {id} <page>`)",
                        unread.join(", ")
                    ));
                }
                // One shot: from here the proposal is spent, whatever happens.
                proposal.state = State::Running;
                audit(services, proposal, AuditStep::Approved, proposal.hash.clone());
                Ok(Ok(proposal.clone()))
            }
        }
    });
    let approved = match decided {
        None => return not_held(id),
        Some(Err(outcome)) | Some(Ok(Err(outcome))) => return outcome,
        Some(Ok(Ok(proposal))) => proposal,
    };
    let state = execute(services, &approved).await;
    let later = (services.clock)();
    services
        .proposals
        .with(id, later, |proposal| proposal.state = state.clone());
    match state {
        State::Opened(url) => Outcome::text(format!(
            "Opened draft pull request {url} for proposal {id} ({} on {}).",
            approved.hash,
            approved.repository()
        )),
        other => Outcome::error(format!("Proposal {id} {}", describe(&other))),
    }
}

/// A state in words.
fn describe(state: &State) -> String {
    match state {
        State::Pending => "is pending".to_owned(),
        State::Running => "is being executed".to_owned(),
        State::Opened(url) => format!("already opened {url}"),
        State::Failed(text) => format!("failed: {text}"),
        State::Unknown(text) => format!("has an unknown outcome: {text}"),
        State::Cancelled => "was cancelled".to_owned(),
    }
}
