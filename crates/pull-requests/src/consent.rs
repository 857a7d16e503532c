//! The requester's own review, consent and withdrawal, decided under the store's lock so
//! that two approvals can never both start: a page read by the person who asked, in the
//! same room and thread; an approval that also needs a new message (not an edit, reaction
//! or rerun), a pending manual proposal within its ten minutes, and every page read; a
//! cancellation of a pending one.

use tokio::time::Instant;

use crate::proposal::{AuditEvent, AuditStep, Proposal, Proposals, Requester, State};

/// What the requester asks of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// Read this page (from 1).
    Review(usize),
    /// Approve it: the execution starts.
    Approve,
    /// Cancel it.
    Cancel,
}

impl Verb {
    /// The command word (`proposal`, `approve`, `cancel`).
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Review(_) => "proposal",
            Self::Approve => "approve",
            Self::Cancel => "cancel",
        }
    }
}

/// The outcome of a [`Proposals::consent`].
#[derive(Debug, Clone)]
pub enum Consent {
    /// The page's text, with the proposal's state when it is no longer pending.
    Page(String),
    /// The proposal is cancelled; the text says so.
    Cancelled(String),
    /// The proposal is approved and now running: execute this copy, then
    /// [`Proposals::settle`] its state.
    Approved(Box<Proposal>),
    /// Refused, with the reason to show. An ID that is not held and one held for someone
    /// else get the same reason, so an ID reveals nothing about other people's proposals.
    Refused(String),
}

/// The refusal for anyone but the requester and for an ID that is not held.
fn not_held(id: &str) -> String {
    format!(
        "there is no pending proposal `{id}` of yours here (proposals are bound to the person, channel and thread that asked, expire after 10 minutes, and are lost when the bot restarts)"
    )
}

/// A state in words.
#[must_use]
pub fn describe(state: &State) -> String {
    match state {
        State::Pending => "is pending".to_owned(),
        State::Running => "is being executed".to_owned(),
        State::Opened(url) => format!("already opened {url}"),
        State::Failed(text) => format!("failed: {text}"),
        State::Unknown(text) => format!("has an unknown outcome: {text}"),
        State::Cancelled => "was cancelled".to_owned(),
    }
}

impl Proposals {
    /// Decides `verb` on proposal `id` for `requester` (`None`: no platform identity) at
    /// `now`; `original` says whether the request is a new message as its author sent it.
    /// Every decision about a held proposal is reported to `audit`.
    pub fn consent(
        &self,
        id: &str,
        verb: Verb,
        requester: Option<&Requester>,
        original: bool,
        now: Instant,
        audit: &dyn Fn(&AuditEvent),
    ) -> Consent {
        let word = verb.word();
        self.with(id, now, |proposal| {
            if requester != Some(&proposal.requester) {
                audit(&AuditEvent::of(proposal, AuditStep::Refused, format!("{word}: another person or place")));
                return Consent::Refused(not_held(id));
            }
            if !original {
                audit(&AuditEvent::of(proposal, AuditStep::Refused, format!("{word}: not a new message")));
                return Consent::Refused(format!(
                    "`ai {word}` must be a new message typed by you: an edited message, a reaction or a rerun cannot review, approve or cancel a proposal"
                ));
            }
            if proposal.automatic_branch.is_some() && !matches!(verb, Verb::Review(_)) {
                audit(&AuditEvent::of(proposal, AuditStep::Refused, format!("{word}: automatic")));
                return Consent::Refused(format!(
                    "proposal {id} was staged by automatic routing, which pushes without chat approval; it cannot be approved or cancelled here"
                ));
            }
            match verb {
                Verb::Review(page) => review(proposal, page, audit),
                Verb::Cancel => {
                    if proposal.state != State::Pending {
                        return Consent::Refused(format!(
                            "proposal {id} can no longer be cancelled: {}",
                            describe(&proposal.state)
                        ));
                    }
                    proposal.state = State::Cancelled;
                    audit(&AuditEvent::of(proposal, AuditStep::Cancelled, "by the requester"));
                    Consent::Cancelled(format!(
                        "Cancelled proposal {id}; nothing was written to GitHub."
                    ))
                }
                Verb::Approve => approve(proposal, now, audit),
            }
        })
        .unwrap_or_else(|| Consent::Refused(not_held(id)))
    }

    /// Records the final state of an execution.
    pub fn settle(&self, id: &str, state: State, now: Instant) {
        self.with(id, now, |proposal| proposal.state = state);
    }
}

fn review(proposal: &mut Proposal, page: usize, audit: &dyn Fn(&AuditEvent)) -> Consent {
    let total = proposal.pages.len();
    let Some(text) = page
        .checked_sub(1)
        .and_then(|i| proposal.pages.get(i))
        .cloned()
    else {
        return Consent::Refused(format!("proposal {} has pages 1 to {total}", proposal.id));
    };
    if let Some(seen) = proposal.seen.get_mut(page - 1) {
        *seen = true;
    }
    let state = match &proposal.state {
        State::Pending => String::new(),
        other => format!("\n(status: {})", describe(other)),
    };
    audit(&AuditEvent::of(
        proposal,
        AuditStep::Reviewed,
        format!("page {page}/{total}"),
    ));
    Consent::Page(format!("{text}{state}"))
}

fn approve(proposal: &mut Proposal, now: Instant, audit: &dyn Fn(&AuditEvent)) -> Consent {
    let id = proposal.id.clone();
    let refuse = |proposal: &Proposal, why: String| {
        audit(&AuditEvent::of(proposal, AuditStep::Refused, why.clone()));
        Consent::Refused(why)
    };
    if proposal.state != State::Pending {
        let why = format!(
            "proposal {id} cannot be approved: {}",
            describe(&proposal.state)
        );
        return refuse(proposal, why);
    }
    if proposal.expired(now) {
        return refuse(
            proposal,
            format!("proposal {id} expired 10 minutes after it was staged; ask for a new one"),
        );
    }
    let unread: Vec<String> = proposal
        .seen
        .iter()
        .enumerate()
        .filter(|(_, seen)| !**seen)
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    if !unread.is_empty() {
        let why = format!(
            "read every page of proposal {id} before approving it: page(s) {} not yet shown (`ai proposal {id} <page>`)",
            unread.join(", ")
        );
        return refuse(proposal, why);
    }
    // One shot: from here the proposal is spent, whatever happens.
    proposal.state = State::Running;
    audit(&AuditEvent::of(
        proposal,
        AuditStep::Approved,
        proposal.hash.clone(),
    ));
    Consent::Approved(Box::new(proposal.clone()))
}
