//! The built-in commands of the language, and the registry that holds them all.

mod alias;
mod basic;
mod collections;
mod data;
mod help;
mod history;
mod react;
mod render;
mod xargs;

use crate::registry::Registry;

/// A registry with every built-in command of the language: `echo`, `that`, `help`,
/// `alias`, `data`, `xargs`, `repeat`, `render`, `history` and the collection commands.
#[must_use]
pub fn builtins() -> Registry {
    let mut registry = Registry::new();
    let groups = [
        basic::commands(),
        help::commands(),
        alias::commands(),
        data::commands(),
        xargs::commands(),
        render::commands(),
        collections::commands(),
        history::commands(),
        react::commands(),
    ];
    for spec in groups.into_iter().flatten() {
        registry.add(spec);
    }
    registry
}
