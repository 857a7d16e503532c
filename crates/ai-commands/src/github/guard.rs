//! Guards that record how work ended even when its future is dropped (the conductor's
//! deadline, a cancelled request): an execution left running is settled as an unknown
//! outcome and audited, and a message's code-work receipt is finished, so that neither stays
//! "running" until the process restarts.

use yetibot_pull_requests::{AuditEvent, AuditStep, Proposal, State};

use crate::services::AiServices;

/// Executes `proposal` (already marked running) and records its final state, which it
/// returns. If the future is dropped first, the proposal is settled as an unknown outcome
/// and audited instead.
pub(crate) async fn execute(services: &AiServices, proposal: &Proposal) -> State {
    let guard = Executing {
        services,
        proposal,
        done: false,
    };
    let state = yetibot_pull_requests::execute(&services.executor(), proposal).await;
    guard.settle(state.clone());
    state
}

/// An approved proposal being executed.
struct Executing<'s> {
    services: &'s AiServices,
    proposal: &'s Proposal,
    done: bool,
}

impl Executing<'_> {
    /// Records the execution's final state.
    fn settle(mut self, state: State) {
        self.done = true;
        self.services
            .proposals
            .settle(&self.proposal.id, state, (self.services.clock)());
    }
}

impl Drop for Executing<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let place = match &self.proposal.automatic_branch {
            Some(branch) => format!("branch {branch}"),
            None => "its branches named with the toolset's prefix".to_owned(),
        };
        let text = format!(
            "was stopped while it ran (the request was cancelled or ran out of time); nothing after that point ran and nothing is retried. Inspect {} for {place}.",
            self.proposal.repository()
        );
        self.services.proposals.settle(
            &self.proposal.id,
            State::Unknown(text),
            (self.services.clock)(),
        );
        self.services.audit(&AuditEvent::of(
            self.proposal,
            AuditStep::Unknown,
            "interrupted while executing",
        ));
    }
}

/// A message's code-work receipt, from the routing decision to the reply.
pub(crate) struct Receipt<'s> {
    services: &'s AiServices,
    key: String,
    done: bool,
}

impl<'s> Receipt<'s> {
    /// Guards the receipt of message `key` (begun as running).
    pub(crate) fn new(services: &'s AiServices, key: String) -> Self {
        Self {
            services,
            key,
            done: false,
        }
    }

    /// Finishes the receipt with the reply a redelivery repeats.
    pub(crate) fn finish(mut self, reply: &str) {
        self.done = true;
        self.services
            .receipts
            .finish(&self.key, reply.to_owned(), (self.services.clock)());
    }
}

impl Drop for Receipt<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.services.receipts.finish(
                &self.key,
                "the automatic change for it stopped before it finished (the request failed, was cancelled or ran out of time); check the repository before asking again".to_owned(),
                (self.services.clock)(),
            );
        }
    }
}
