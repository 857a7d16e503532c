//! The guarded pull-request workflow of `github-pr` toolsets.
//!
//! A model never gets a GitHub mutation. It reads through the toolset's read tools and calls
//! the host's `stage_changes` ([`stage`]): the host checks the change without I/O (the
//! repository, base branch, paths, sizes and credentials), snapshots the base with
//! `get_commit` and `get_file_contents` at that exact commit, and records an immutable
//! proposal (`crate::proposals`). The person who asked reviews it page by page ([`review`])
//! with `ai proposal <id>`, and `ai approve <id>` runs the one-shot [`execute`]or through
//! the writer connection, which no model is ever offered; `ai cancel <id>` ends it
//! ([`command`]). Each step is reported to the operator's audit sink without file contents,
//! prompts or credentials. [`read`] is the one reader of GitHub's result shapes.

pub(crate) mod command;
mod execute;
pub(crate) mod read;
mod review;
pub(crate) mod route;
pub(crate) mod stage;
