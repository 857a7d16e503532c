//! Integration tests of yetibot-ai-providers against the provider fixture on 127.0.0.1.

mod capability;
mod chat;
mod cli;
mod credential;
mod hygiene;
mod models;
mod responses;
mod service;
mod support;
mod transport;
mod workers;
