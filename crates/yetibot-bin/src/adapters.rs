//! The chat platform adapters `serve` runs beside the web console: one adapter per
//! `:yetibot :adapters` entry (Slack over Socket Mode, Discord over its gateway), each
//! feeding the shared intake with its own outbox, and all stopped together once the
//! supervisor has drained.

use yetibot_chat_adapters::Intake;
use yetibot_chat_adapters::discord::{Discord, DiscordBounds, DiscordOptions, ShardRange};
use yetibot_chat_adapters::slack::{SlackAdapter, SlackOptions};

use crate::config::Config;

/// The connected adapters, ready to run.
#[derive(Debug, Default)]
pub struct Connected {
    slack: Vec<SlackAdapter>,
    discord: Vec<(String, yetibot_chat_adapters::discord::Running)>,
}

impl Connected {
    /// How many chat connections were started.
    #[must_use]
    pub fn count(&self) -> usize {
        self.slack.len() + self.discord.len()
    }
}

/// A chat connection that could not start: a message that names the connection and says
/// why, redacted of every configured credential.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConnectError(String);

/// Connects every configured connection (checking each token) before the bot announces
/// that it runs.
///
/// # Errors
///
/// [`ConnectError`] for the first connection that could not start.
pub async fn connect(config: &Config, intake: &Intake) -> Result<Connected, ConnectError> {
    // Socket Mode's and the gateway's TLS use the process-wide provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let redact = |text: String| ConnectError(config.secrets.redact_text(&text).into_owned());
    let mut connected = Connected::default();
    for settings in &config.adapters.slack {
        let adapter = SlackAdapter::connect(settings, SlackOptions::default(), intake.clone())
            .await
            .map_err(|error| redact(error.to_string()))?;
        tracing::info!(
            "Slack connection {} is ready (Socket Mode, {})",
            settings.connection,
            settings.api_url
        );
        connected.slack.push(adapter);
    }
    for settings in &config.adapters.discord {
        let options = DiscordOptions {
            token: settings.token.clone(),
            connection: settings.connection.clone(),
            http_proxy: settings.http_proxy.clone(),
            gateway_url: settings.gateway_url.clone(),
            shards: settings
                .shards
                .map(|(first, last, total)| ShardRange { first, last, total }),
            bounds: DiscordBounds::default(),
        };
        let running = Discord::start(options, intake.clone())
            .await
            .map_err(|error| {
                redact(format!(
                    "Discord connection {} could not start: {error}",
                    settings.connection
                ))
            })?;
        let shards: Vec<String> = running
            .shards()
            .iter()
            .map(|(shard, total)| format!("{shard}/{total}"))
            .collect();
        // Started, not yet accepted: the gateway's answer to IDENTIFY comes later, and a
        // refusal is logged when the connection stops.
        tracing::info!(
            "Discord connection {} started (shards {}); connecting to the gateway",
            settings.connection,
            shards.join(", ")
        );
        connected
            .discord
            .push((settings.connection.clone(), running));
    }
    Ok(connected)
}

/// Runs the adapters until `stop` turns true, then closes their connections. A Discord
/// connection that stops by itself (a refused token, a close code that reconnecting cannot
/// fix) is logged with its reason; the other adapters go on.
pub async fn run(connected: Connected, stop: tokio::sync::watch::Receiver<bool>) {
    let slack = connected.slack.into_iter().map(|adapter| {
        let mut stop = stop.clone();
        adapter.run(async move {
            let _ = stop.wait_for(|stop| *stop).await;
        })
    });
    let discord = connected.discord.into_iter().map(|(name, running)| {
        let mut stop = stop.clone();
        async move {
            let result = running
                .run(async move {
                    let _ = stop.wait_for(|stop| *stop).await;
                })
                .await;
            if let Err(error) = result {
                tracing::error!("Discord connection {name} stopped: {error}");
            }
        }
    });
    futures_util::future::join(
        futures_util::future::join_all(slack),
        futures_util::future::join_all(discord),
    )
    .await;
}
