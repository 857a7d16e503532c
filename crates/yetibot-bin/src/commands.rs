//! Wires the command language: the interpreter with its built-in commands, aliases and
//! chat history in the configured store (PostgreSQL, or the SQLite file by default), and
//! randomness seeded by the process.

use std::hash::BuildHasher;

use yetibot_bot_core::{HistoryOptions, Interpreter, Notify, Writer, builtins};
use yetibot_json_util::SplitMix64;

use crate::config::Config;

/// The interpreter every entry point shares, and the history writer that must run for its
/// recordings to reach the store (`None` when history is disabled).
#[derive(Debug)]
pub struct Wiring {
    /// The interpreter: `yetibot run` today, the adapters later.
    pub interpreter: Interpreter,
    /// Drains the history queue into the store; run it and keep its handle until
    /// shutdown. Dropping the interpreter lets it finish.
    pub writer: Option<Writer>,
}

/// Opens the configured store (creating or migrating its tables) and builds the
/// interpreter over it. `notify` receives the history recorder's outage reports.
///
/// # Errors
///
/// The store's error when it cannot be opened; it names no credential.
pub async fn wire(config: &Config, notify: Notify) -> Result<Wiring, yetibot_history_store::Error> {
    let stores = yetibot_history_store::open(&config.store).await?;
    let interpreter = Interpreter::new(
        builtins(),
        stores.aliases,
        Box::new(SplitMix64::new(seed())),
        config.settings.clone(),
    );
    if !config.history_enabled {
        return Ok(Wiring {
            interpreter,
            writer: None,
        });
    }
    let (history, writer) =
        yetibot_bot_core::history(stores.history, HistoryOptions::default(), notify);
    Ok(Wiring {
        interpreter: interpreter.with_history(history),
        writer: Some(writer),
    })
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
