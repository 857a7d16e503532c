//! The command language at its boundary: the golden table of lines and answers, property
//! tests over whole pipelines, history push-down, recording and authority.

mod authority;
mod golden;
mod pushdown;
mod recording;
