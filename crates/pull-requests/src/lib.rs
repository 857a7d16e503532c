#![doc = include_str!("../README.md")]

mod consent;
mod execute;
mod intent;
pub mod limits;
mod proposal;
mod read;
mod receipts;
mod review;
mod stage;

pub use consent::{Consent, Verb, describe};
pub use execute::{DEFAULT_GITHUB_API_URL, Executor, execute};
pub use intent::{Decision, decision, intent_questions, named_repositories};
pub use proposal::{
    AUTOMATIC_FOOTER, Audit, AuditEvent, AuditStep, Full, MANUAL_FOOTER, Proposal, Proposals,
    ProposedFile, Requester, State, automatic_branch, random_hex,
};
pub use read::{Contents, DirEntry, ShapeError};
pub use receipts::{Begin, Receipt, Receipts};
pub use review::diff;
pub use stage::{
    NewProposal, ReadError, Reads, SnapshotError, StageError, Staging, check, reader, snapshot,
};
