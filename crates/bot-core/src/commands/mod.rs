//! The built-in commands of the language, and the registry that holds them all.

mod basic;
mod collections;

use crate::registry::Registry;

/// A registry with every built-in command of the language: `echo`, `that`, `help`,
/// `alias`, `data`, `xargs`, `repeat`, `render` and the collection commands.
#[must_use]
pub fn builtins() -> Registry {
    let mut registry = Registry::new();
    for spec in basic::commands() {
        registry.add(spec);
    }
    for spec in collections::commands() {
        registry.add(spec);
    }
    registry
}
