//! The conductor against an in-memory chat adapter, with the built-in commands and the AI
//! commands against a fixture provider.

mod chat;
