//! The AI commands' side of the guarded pull-request workflow, whose checks, proposals,
//! review pages and executor are `yetibot-pull-requests`': the `stage_changes` tool as a
//! model is offered it and runs it ([`stage`]), `ai proposal`, `ai approve` and `ai cancel`
//! ([`command`]), and Clef intent routing ([`route`]: eligibility, the classification, the
//! one named repository, receipts, and completing automatic work).

pub(crate) mod command;
pub(crate) mod guard;
pub(crate) mod route;
pub(crate) mod stage;
