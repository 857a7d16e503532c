//! The chat platform adapters `serve` runs beside the web console: one Slack adapter per
//! `:yetibot :adapters` entry of type `slack`, each feeding the shared intake with its own
//! outbox, and all stopped together once the supervisor has drained.

use yetibot_chat_adapters::Intake;
use yetibot_chat_adapters::slack::{SlackAdapter, SlackOptions};

use crate::config::Config;

/// Connects every configured Slack connection (checking its bot token) before the bot
/// announces that it runs.
///
/// # Errors
///
/// The first connection that could not start, as a message that names the connection and
/// never a token.
pub async fn connect(config: &Config, intake: &Intake) -> Result<Vec<SlackAdapter>, String> {
    // Socket Mode's TLS (tokio-tungstenite) uses the process-wide provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut adapters = Vec::with_capacity(config.adapters.slack.len());
    for settings in &config.adapters.slack {
        let adapter = SlackAdapter::connect(settings, SlackOptions::default(), intake.clone())
            .await
            .map_err(|error| config.secrets.redact_text(&error.to_string()).into_owned())?;
        tracing::info!(
            "Slack connection {} is ready (Socket Mode, {})",
            settings.connection,
            settings.api_url
        );
        adapters.push(adapter);
    }
    Ok(adapters)
}

/// Runs the adapters until `stop` turns true, then closes their connections.
pub async fn run(adapters: Vec<SlackAdapter>, stop: tokio::sync::watch::Receiver<bool>) {
    let runs = adapters.into_iter().map(|adapter| {
        let mut stop = stop.clone();
        adapter.run(async move {
            let _ = stop.wait_for(|stop| *stop).await;
        })
    });
    futures_util::future::join_all(runs).await;
}
