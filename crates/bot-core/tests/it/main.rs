//! The command language at its boundary: the golden table of lines and answers, and
//! property tests over whole pipelines.

mod ai;
mod authority;
mod golden;
mod pushdown;
mod recording;
