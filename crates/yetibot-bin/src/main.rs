//! The `yetibot` command: `yetibot` (or `yetibot serve`) runs the bot, `yetibot run '<expr>'`
//! runs one command line and prints what a chat would show, `yetibot check-config`
//! validates the configuration, `yetibot doctor` checks that the configured providers and
//! MCP servers answer. Exit codes: 0 success, 1 a failed command, check or any other
//! failure, 2 invalid configuration, 64 a command line that could not be understood.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{Parser, Subcommand};
use tracing::Instrument as _;
use yetibot_bin::config::{self, Config, FileChoice, Invalid, environment};
use yetibot_bin::logging::{self, Role};
use yetibot_bin::{discovery, doctor};
use yetibot_discovery_cache::{Bounds, DiscoveryCache, Refresher};

#[derive(Debug, Parser)]
#[command(
    name = "yetibot",
    version,
    about = "Yetibot's AI commands for Discord and Slack"
)]
struct Cli {
    /// How log lines on standard error are written: `human`, or `json` (one object per
    /// line) for log collectors.
    #[arg(long, global = true, value_enum, default_value_t = logging::Format::Human)]
    log_format: logging::Format,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the bot until Ctrl-C or SIGTERM (the default).
    Serve,
    /// Run one command line as the local operator (`:yetibot :local`) and print what a chat
    /// would show: exit 0, or 1 with the error when the command fails.
    Run {
        /// Print `{"value": ..., "data": ..., "error": ...}` instead of chat text.
        #[arg(long)]
        json: bool,
        /// Save the files the reply carries (generated images) into this existing
        /// directory, under their names; without it they are only listed on stderr.
        #[arg(long, value_name = "DIR")]
        files_dir: Option<std::path::PathBuf>,
        /// The command line, prefix optional; several words are joined with spaces.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        expression: Vec<String>,
    },
    /// Load and validate the configuration, print a summary with secrets redacted, and exit:
    /// 0 when valid, 2 with every problem when not.
    CheckConfig,
    /// Check every configured AI provider (model listing, context window, one small
    /// tool-probe request) and MCP server (session and tool listing): exit 0 when all pass,
    /// 1 when any fails, 2 when the configuration is invalid.
    Doctor {
        /// Send no tool probe, so that no request can cost money.
        #[arg(long)]
        no_probe: bool,
    },
    /// Print the link that opens the web console (its access token is kept in
    /// `:yetibot :web :token-file` across restarts).
    ConsoleUrl {
        /// Replace the token first: links printed before stop working once the bot restarts
        /// (a running bot keeps the token it started with).
        #[arg(long)]
        rotate: bool,
    },
}

/// The configuration's credentials, for panic reports; set once the configuration loads.
static PANIC_SECRETS: OnceLock<yetibot_redaction::Secrets> = OnceLock::new();

fn main() -> ExitCode {
    // Before anything can panic: a panic message may quote data that holds a credential.
    yetibot_redaction::install_panic_hook(&PANIC_SECRETS);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    let format = cli.log_format;
    match cli.command.unwrap_or(Command::Serve) {
        Command::CheckConfig => check_config(),
        Command::Serve => serve_until_stopped(format),
        Command::Run {
            json,
            files_dir,
            expression,
        } => run_once(&expression.join(" "), json, files_dir.as_deref(), format),
        Command::Doctor { no_probe } => run_doctor(no_probe, format),
        Command::ConsoleUrl { rotate } => console_url(rotate),
    }
}

/// `yetibot console-url`: the console's link with its kept token (made now when there is
/// none yet, so the bot's next start uses it too).
fn console_url(rotate: bool) -> ExitCode {
    let config = match load() {
        Ok(config) => config,
        Err(invalid) => return report_invalid(&invalid),
    };
    let Some(addr) = config.web else {
        let _ = writeln!(
            std::io::stderr(),
            "the web console is turned off (:yetibot :web :enabled false)"
        );
        return ExitCode::FAILURE;
    };
    let token = if rotate {
        yetibot_bin::console::rotate(&config.web_token_file)
    } else {
        yetibot_bin::console::token(&config.web_token_file)
    };
    match token {
        Ok(token) => {
            let _ = writeln!(
                std::io::stdout(),
                "{}",
                yetibot_bin::console::url(addr, &token)
            );
            if rotate {
                let _ = writeln!(
                    std::io::stderr(),
                    "a new token is kept; a running bot uses it once it restarts"
                );
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "{error}");
            ExitCode::FAILURE
        }
    }
}

/// The exit code of a command line that could not be understood (sysexits' `EX_USAGE`);
/// 2 is invalid configuration.
const EXIT_USAGE: u8 = 64;

/// `--help` and `--version` print and succeed; anything else clap could not read is a usage
/// error, printed with its hint.
fn usage_error(error: &clap::Error) -> ExitCode {
    let _ = error.print();
    if error.use_stderr() {
        ExitCode::from(EXIT_USAGE)
    } else {
        ExitCode::SUCCESS
    }
}

fn check_config() -> ExitCode {
    match load() {
        Ok(config) => {
            let _ = PANIC_SECRETS.set(config.secrets.clone());
            let mut stdout = std::io::stdout().lock();
            let _ = write!(stdout, "{}", config::summary(&config));
            let _ = writeln!(stdout, "configuration is valid");
            ExitCode::SUCCESS
        }
        Err(invalid) => report_invalid(&invalid),
    }
}

/// `yetibot doctor`: the checks of `yetibot_bin::doctor` on the loaded configuration.
fn run_doctor(no_probe: bool, format: logging::Format) -> ExitCode {
    let config = match load() {
        Ok(config) => config,
        Err(invalid) => return report_invalid(&invalid),
    };
    let _ = PANIC_SECRETS.set(config.secrets.clone());
    logging::init(format, &config, Role::Command);
    doctor::run(&config, doctor::Options { probe: !no_probe })
}

/// `yetibot run`: one expression, answered on standard output.
fn run_once(
    expression: &str,
    json: bool,
    files_dir: Option<&std::path::Path>,
    format: logging::Format,
) -> ExitCode {
    let config = match load() {
        Ok(config) => config,
        Err(invalid) => return report_invalid(&invalid),
    };
    let _ = PANIC_SECRETS.set(config.secrets.clone());
    logging::init(format, &config, Role::Command);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    // No background discovery in a one-shot run: with several providers, the catalogs are
    // read when `--model` alone needs them.
    let services = yetibot_bin::commands::ai_services(&config, None).and_then(|ai| {
        Ok(match yetibot_bin::commands::on_demand_discovery(&config)? {
            Some((cache, discover)) => ai.with_discovery_on_demand(cache, discover),
            None => ai,
        })
    });
    let ai = match services {
        Ok(ai) => ai,
        Err(error) => {
            let message = error.to_string();
            let _ = writeln!(
                std::io::stderr(),
                "{}",
                config.secrets.redact_text(&message)
            );
            return ExitCode::FAILURE;
        }
    };
    // `run` only reads history (it records nothing), so its writer is not needed.
    // Nothing serves published images in a one-shot run, so none are published.
    let wired = runtime.block_on(yetibot_bin::commands::wire(
        &config,
        ai,
        std::sync::Arc::new(|_| {}),
        None,
    ));
    let interpreter = match wired {
        Ok(wiring) => wiring.interpreter,
        Err(error) => {
            let message = format!("cannot open the history store: {error}");
            let _ = writeln!(
                std::io::stderr(),
                "{}",
                config.secrets.redact_text(&message)
            );
            return ExitCode::FAILURE;
        }
    };
    // The expression itself is never logged: it may be a prompt.
    tracing::debug!("running one command line as the local operator");
    let reply = runtime.block_on(
        interpreter
            .run(&config.local, expression)
            .instrument(yetibot_redaction::private::request_span()),
    );
    tracing::debug!(failed = reply.error.is_some(), "the command line finished");
    let mut stdout = std::io::stdout().lock();
    if json {
        let _ = writeln!(stdout, "{}", yetibot_bin::commands::reply_json(&reply));
    } else {
        for message in reply.messages() {
            let _ = writeln!(stdout, "{message}");
        }
    }
    let saved = yetibot_bin::commands::save_files(&reply.files, files_dir);
    let mut stderr = std::io::stderr().lock();
    for line in &saved.lines {
        let _ = writeln!(stderr, "{line}");
    }
    if reply.error.is_some() || !saved.ok {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn serve_until_stopped(format: logging::Format) -> ExitCode {
    let config = match load() {
        Ok(config) => config,
        Err(invalid) => return report_invalid(&invalid),
    };
    let _ = PANIC_SECRETS.set(config.secrets.clone());
    logging::init(format, &config, Role::Service);
    for line in config::summary(&config).lines() {
        tracing::info!("{line}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!("cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(config))
}

/// Runs until a shutdown signal: the web console and the configured chat adapters (Slack, Discord)
/// feeding the supervisor, which runs each message under the conductor; the
/// history writer; and background model discovery.
async fn serve(config: Config) -> ExitCode {
    // Install the handlers before announcing readiness, so a signal sent right after the
    // announcement is never handled by the default action instead.
    let mut shutdown = match Shutdown::install() {
        Ok(shutdown) => shutdown,
        Err(error) => {
            tracing::error!("cannot listen for shutdown signals: {error}");
            return ExitCode::FAILURE;
        }
    };
    let client =
        match yetibot_ai_providers::Client::new(yetibot_ai_providers::ClientOptions::default()) {
            Ok(client) => client.with_secrets(config.secrets.clone()),
            Err(error) => {
                tracing::error!("cannot build the HTTP client: {}", error.user_message());
                return ExitCode::FAILURE;
            }
        };
    let cache = DiscoveryCache::new(Bounds::default());
    let ai = match yetibot_bin::commands::ai_services(&config, Some(cache.clone())) {
        Ok(ai) => ai,
        Err(error) => {
            tracing::error!("{}", config.secrets.redact_text(&error.to_string()));
            return ExitCode::FAILURE;
        }
    };
    // Generated images are also served at the operator's public URL when one is set.
    let published = match &config.images {
        None => None,
        Some(options) => {
            let store = yetibot_chat_adapters::web::published::Published::new(options);
            match yetibot_chat_adapters::web::published::PublishedServer::bind(
                options.listen,
                store.clone(),
            ) {
                Ok(server) => Some((store, server)),
                Err(error) => {
                    tracing::error!(
                        "the image server cannot listen on {}: {} (change :yetibot :images :listen)",
                        options.listen,
                        error.kind()
                    );
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let (published_store, published_server) = match published {
        Some((store, server)) => (Some(store), Some(server)),
        None => (None, None),
    };
    let wiring = match yetibot_bin::commands::wire(
        &config,
        ai,
        std::sync::Arc::new(log_notice),
        published_store,
    )
    .await
    {
        Ok(wiring) => wiring,
        Err(error) => {
            let message = format!("cannot open the history store: {error}");
            tracing::error!("{}", config.secrets.redact_text(&message));
            return ExitCode::FAILURE;
        }
    };
    tracing::info!("history store ready: {}", config.store.describe());
    let writer = wiring.writer.map(|writer| tokio::spawn(writer.run()));
    let conductor = std::sync::Arc::new(yetibot_conductor::Conductor::new(
        std::sync::Arc::new(wiring.interpreter),
        yetibot_conductor::ConductorOptions::default(),
    ));
    let (intake, events) = yetibot_chat_adapters::intake(yetibot_bin::serve::INTAKE_CAPACITY);
    let console = match config.web {
        None => None,
        Some(addr) => {
            let token = match yetibot_bin::console::token(&config.web_token_file) {
                Ok(token) => token,
                Err(error) => {
                    tracing::error!("{error}");
                    return ExitCode::FAILURE;
                }
            };
            let history = wiring.history.clone();
            match console(&config, addr, intake.clone(), token, history).await {
                Ok(console) => Some(console),
                Err(yetibot_chat_adapters::web::ConsoleError::Bind { addr, source })
                    if source.kind() == std::io::ErrorKind::AddrInUse =>
                {
                    tracing::error!(
                        "the web console cannot listen on {addr}: another program (or another \
                         yetibot) already uses that port; choose another with `:yetibot :web \
                         :port` (YETIBOT_WEB_PORT), or turn the console off with `:yetibot :web \
                         :enabled false`"
                    );
                    return ExitCode::FAILURE;
                }
                Err(error) => {
                    tracing::error!("{error}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let adapters = match yetibot_bin::adapters::connect(&config, &intake).await {
        Ok(adapters) => adapters,
        Err(error) => {
            tracing::error!("{error}");
            return ExitCode::FAILURE;
        }
    };
    drop(intake);
    let discovering = if config.providers.is_empty() {
        false
    } else if let Err(error) = cache.configure(&discovery::listings(&config.providers)) {
        tracing::warn!("model discovery is off: {error}; use --provider to choose a provider");
        false
    } else {
        true
    };
    let refresher = Refresher::new(
        cache,
        discovery::ProviderLister::new(client, config.providers.clone()),
    );
    let background = async {
        if discovering {
            refresher.run(std::future::pending()).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tracing::info!(
        "yetibot is running; model discovery {}. Press Ctrl-C to stop.",
        if discovering {
            "refreshes every 30 s"
        } else {
            "is off"
        }
    );
    // The URL carries the console's access token: it goes to standard output once, for the
    // operator, and never into the logs.
    match &console {
        Some(console) => {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "Open the web console: {}", console.url());
            let _ = stdout.flush();
        }
        None => tracing::info!("the web console is off (:yetibot :web :enabled false)"),
    }
    // With the console off, the chat connections are the bot: when every one of them has
    // ended for good (a revoked token, a close code reconnecting cannot fix), the process
    // stops with a failure, so that a supervisor (systemd, Kubernetes) restarts or alerts.
    let only_chat = console.is_none() && adapters.count() > 0;
    let (console_stop, console_stopped) = tokio::sync::oneshot::channel::<()>();
    let (images_stop, images_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(server) = &published_server
        && let (Some(addr), Some(options)) = (server.local_addr(), &config.images)
    {
        tracing::info!(
            "serving published images on {addr} for {}",
            options.public_url
        );
    }
    let console_run = async move {
        let console = async move {
            if let Some(console) = console {
                console
                    .serve(async move {
                        let _ = console_stopped.await;
                    })
                    .await;
            }
        };
        let images = async move {
            if let Some(server) = published_server {
                server
                    .serve(async move {
                        let _ = images_stopped.await;
                    })
                    .await;
            }
        };
        tokio::join!(console, images);
    };
    let (adapters_stop, adapters_stopped) = tokio::sync::watch::channel(false);
    let (adapters_ended, all_ended) = tokio::sync::oneshot::channel::<()>();
    let adapters_run = async move {
        yetibot_bin::adapters::run(adapters, adapters_stopped).await;
        let _ = adapters_ended.send(());
    };
    let failed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let failed_stop = std::sync::Arc::clone(&failed);
    let stop = async move {
        let every_connection_ended = async {
            if only_chat && all_ended.await.is_ok() {
                return;
            }
            std::future::pending::<()>().await;
        };
        let signal = tokio::select! {
            signal = shutdown.recv() => signal,
            () = background => "the end of background work",
            () = every_connection_ended => {
                failed_stop.store(true, std::sync::atomic::Ordering::SeqCst);
                tracing::error!("every chat connection has ended and the console is off: stopping with a failure");
                "the end of every chat connection"
            }
        };
        tracing::info!("received {signal}, shutting down: no new messages are taken");
    };
    let supervised = async move {
        let report = yetibot_bin::serve::supervise(
            events,
            std::sync::Arc::clone(&conductor),
            config.admission,
            stop,
            yetibot_bin::serve::SHUTDOWN_GRACE,
        )
        .await;
        // Adapters stop only after the last answers went out.
        let _ = console_stop.send(());
        let _ = images_stop.send(());
        adapters_stop.send_replace(true);
        drop(conductor);
        report
    };
    let (report, (), ()) = tokio::join!(supervised, console_run, adapters_run);
    tracing::info!(
        started = report.started,
        queued = report.queued,
        refused = report.refused,
        panicked = report.panicked,
        turned_away = report.turned_away,
        "requests served this run"
    );
    if report.cancelled > 0 {
        tracing::warn!(
            "{} request(s) still running after {:?} were cancelled",
            report.cancelled,
            yetibot_bin::serve::SHUTDOWN_GRACE
        );
    }
    // The interpreter went with the conductor, so the history queue is closed; the writer
    // stores what is left.
    if let Some(writer) = writer
        && tokio::time::timeout(WRITER_GRACE, writer).await.is_err()
    {
        tracing::warn!("history records still queued after {WRITER_GRACE:?} were not stored");
    }
    tracing::info!("stopped");
    if failed.load(std::sync::atomic::Ordering::SeqCst) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Binds the web console for the local operator.
async fn console(
    config: &Config,
    addr: std::net::SocketAddr,
    intake: yetibot_chat_adapters::Intake,
    token: yetibot_chat_adapters::web::AccessToken,
    history: Option<std::sync::Arc<dyn yetibot_history::HistoryStore>>,
) -> Result<yetibot_chat_adapters::web::Console, yetibot_chat_adapters::web::ConsoleError> {
    use yetibot_chat_adapters::Author;
    use yetibot_chat_adapters::web::{Console, ConsoleBounds, ConsoleOptions, Transcript};
    let connection = "web";
    let transcript = history.map(|store| {
        std::sync::Arc::new(yetibot_bin::console::HistoryTranscript::new(
            store, connection,
        )) as std::sync::Arc<dyn Transcript>
    });
    let options = ConsoleOptions {
        addr,
        token,
        operator: Author {
            id: config.local.user_id.clone(),
            name: config.local.user_name.clone(),
            is_bot: false,
        },
        bot: Author {
            id: "yetibot".to_owned(),
            name: "yetibot".to_owned(),
            is_bot: true,
        },
        connection: connection.to_owned(),
        bounds: ConsoleBounds::default(),
        transcript,
    };
    Console::bind(options, intake).await
}

/// How long shutdown waits for queued history records to be stored.
const WRITER_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Logs the history recorder's outage reports: one line when an outage starts, one when
/// it ends.
fn log_notice(notice: yetibot_history::Notice) {
    match notice {
        yetibot_history::Notice::WriteFailed(error) => {
            tracing::warn!("chat history is not being stored: {error}");
        }
        yetibot_history::Notice::QueueFull => {
            tracing::warn!("chat history is arriving faster than it is stored; dropping records");
        }
        yetibot_history::Notice::Recovered { lost } => {
            tracing::info!("chat history is being stored again; {lost} record(s) were lost");
        }
    }
}

/// SIGINT (Ctrl-C) and SIGTERM.
#[cfg(unix)]
struct Shutdown {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Shutdown {
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        }
    }
}

/// Ctrl-C.
#[cfg(not(unix))]
struct Shutdown;

#[cfg(not(unix))]
impl Shutdown {
    fn install() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn recv(&mut self) -> &'static str {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

fn load() -> Result<Config, Invalid> {
    let choice = FileChoice::from_config_path(environment::config_path().as_deref());
    let text = config::read_file(&choice)?;
    let (vars, mut problems) = environment::from_process();
    let loaded = config::load(text.as_deref().map(|t| (choice.path.as_path(), t)), &vars);
    match loaded {
        Ok(config) if problems.is_empty() => Ok(config),
        Ok(_) => Err(Invalid { problems }),
        Err(mut invalid) => {
            problems.append(&mut invalid.problems);
            Err(Invalid { problems })
        }
    }
}

fn report_invalid(invalid: &Invalid) -> ExitCode {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{invalid}");
    ExitCode::from(2)
}
