//! Wires the command language: the interpreter with its built-in commands, in-memory
//! aliases (until a history store is configured) and randomness seeded by the process.

use std::hash::BuildHasher;
use std::sync::Arc;

use yetibot_bot_core::{Interpreter, MemoryAliases, builtins};
use yetibot_json_util::SplitMix64;

use crate::config::Config;

/// The interpreter every entry point shares: `yetibot run` today, the adapters later.
#[must_use]
pub fn interpreter(config: &Config) -> Interpreter {
    Interpreter::new(
        builtins(),
        Arc::new(MemoryAliases::new()),
        Box::new(SplitMix64::new(seed())),
        config.settings.clone(),
    )
}

/// A seed for `random` and `shuffle`: the standard library's per-process random hash keys,
/// which it draws from the operating system.
fn seed() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}

/// A reply as one JSON object for scripts: `{"value": ..., "data": ..., "error": ...}`,
/// where `value` and `data` are the JSON of the shown value and the data (numbers exactly as
/// the commands produced them; `null` when absent) and `error` the chat text of the error.
#[must_use]
pub fn reply_json(reply: &yetibot_bot_core::Reply) -> String {
    let value = if reply.error.is_some() {
        "null".to_owned()
    } else {
        reply.value.to_json()
    };
    let data = reply
        .data
        .as_ref()
        .map_or_else(|| "null".to_owned(), yetibot_json_util::Value::to_json);
    let error = reply.error.as_deref().map_or_else(
        || "null".to_owned(),
        |e| serde_json::Value::String(e.to_owned()).to_string(),
    );
    format!(r#"{{"value":{value},"data":{data},"error":{error}}}"#)
}
