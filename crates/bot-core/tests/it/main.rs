//! The command language at its boundary: the golden table of lines and answers, property
//! tests over whole pipelines, and the `zen` command against a fixture provider.

mod ai;
mod authority;
mod chat;
mod golden;
mod pushdown;
mod recording;
mod zen;
