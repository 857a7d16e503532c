//! The evaluator: runs a parsed expression stage by stage, evaluating sub-expressions when
//! their stage is reached, piping each stage's value and data into the next, dispatching
//! each stage to a command, an alias or help, and stopping at the first error.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use yetibot_history::{Alias, AliasStore, History, HistoryRecord, HistoryStore};
use yetibot_json_util::{RandomSource, Value};

use crate::caller::Caller;
use crate::error::Stopped;
use crate::limits::{MAX_ALIAS_DEPTH, MAX_COMMAND_RUNS, MAX_EMBEDDED_COMMANDS, MAX_NESTED_RUNS};
use crate::recent::Recent;
use crate::registry::{Call, Category, Reach, Registry, Runner};
use crate::syntax::{self, Expr, Part, Stage};
use crate::value::{self, Outcome, Piped, ReplyMeta};

/// How much of a stage's text an error message quotes, in characters.
const QUOTED_STAGE_CHARS: usize = 200;

/// The answer to one expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// What the last stage showed (empty text after an error).
    pub value: Value,
    /// The last stage's data.
    pub data: Option<Value>,
    /// The error that stopped the pipeline, formatted for chat.
    pub error: Option<String>,
    /// When the last stage said how its value was produced (a model's answer): the
    /// reply's caption, cost and details.
    pub meta: Option<Arc<ReplyMeta>>,
    /// Warnings shown beside the value (see [`Piped::notes`]).
    pub notes: Vec<String>,
    /// The files the line's commands made (generated images), in the order they were
    /// made; a failed line keeps the files made before it failed.
    pub files: Vec<crate::files::ReplyFile>,
}

impl Reply {
    fn failed(error: String) -> Self {
        Self {
            value: Value::String(String::new()),
            data: None,
            error: Some(error),
            meta: None,
            notes: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Makes the reply safe to show, whichever command produced it (see `hygiene`).
    fn present(&mut self, secrets: &yetibot_redaction::Secrets) {
        crate::hygiene::present(
            &mut self.value,
            self.data.as_mut(),
            self.error.iter_mut().chain(self.notes.iter_mut()),
            secrets,
        );
    }

    /// The chat messages this reply posts: the error, or the rendered value followed by one
    /// message of its notes, each marked ⚠.
    #[must_use]
    pub fn messages(&self) -> Vec<String> {
        match &self.error {
            Some(error) => vec![error.clone()],
            None => {
                let mut messages = crate::render::messages(&self.value);
                if !self.notes.is_empty() {
                    let notes: Vec<String> =
                        self.notes.iter().map(|note| format!("⚠ {note}")).collect();
                    messages.push(notes.join("\n"));
                }
                messages
            }
        }
    }
}

/// Settings of the interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The command prefix, `!` by default.
    pub prefix: String,
    /// Whether backtick commands inside ordinary chat run (on by default).
    pub embedded_commands: bool,
    /// Platform user IDs of admins (`:yetibot :admin :users`).
    pub admins: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            prefix: "!".to_owned(),
            embedded_commands: true,
            admins: Vec::new(),
        }
    }
}

/// Runs expressions against a registry of commands.
pub struct Interpreter {
    registry: Registry,
    aliases: Arc<dyn AliasStore>,
    history: Option<History>,
    recent: Recent,
    admins: HashSet<String>,
    prefix: String,
    embedded: bool,
    random: Mutex<Box<dyn RandomSource + Send>>,
    disabled: Mutex<HashMap<String, BTreeSet<Category>>>,
    secrets: yetibot_redaction::Secrets,
    publisher: Option<Arc<dyn crate::files::Publish>>,
}

impl std::fmt::Debug for Interpreter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter")
            .field("prefix", &self.prefix)
            .field("commands", &self.registry.iter().count())
            .finish_non_exhaustive()
    }
}

/// Where an evaluation stands: who asked, whether the command was generated rather than
/// typed, which aliases are expanding, the data a sub-expression may see, how deeply runs
/// are nested, and the budget of runs the whole line shares.
#[derive(Debug, Clone)]
struct Scope<'a> {
    caller: &'a Caller,
    generated: bool,
    aliases: Vec<String>,
    contextual: Option<&'a Value>,
    /// The position of the stage being run and the number of stages around it.
    stage: (usize, usize),
    /// Whether the stage's words include a sub-expression's output: typed, but not all
    /// of it in the caller's own words.
    substituted: bool,
    depth: usize,
    budget: &'a Budget,
    /// The stages after this one in its expression, which the command may consume.
    following: &'a [Stage],
}

/// The commands a line may still run.
#[derive(Debug)]
struct Budget {
    left: AtomicUsize,
    /// The structured data of a command's error (a tool loop's failure trace) with that
    /// error's message: it is the reply's data only if that error is what stopped the line.
    error_data: std::sync::Mutex<Option<(String, Value)>>,
    /// The files the line's commands made for its reply.
    files: crate::files::Files,
}

impl Budget {
    fn new() -> Self {
        Self {
            left: AtomicUsize::new(MAX_COMMAND_RUNS),
            error_data: std::sync::Mutex::new(None),
            files: crate::files::Files::default(),
        }
    }

    fn keep_error_data(&self, message: &str, data: Value) {
        *self
            .error_data
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((message.to_owned(), data));
    }

    /// The data kept with `error`, if the line stopped with exactly that error (a failure
    /// that a sub-expression or `xargs` absorbed leaves data no later error may take).
    fn take_error_data(&self, error: &str) -> Option<Value> {
        self.error_data
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .filter(|(message, _)| message == error)
            .map(|(_, data)| data)
    }

    /// Takes one run from the budget; `false` when none is left.
    fn spend(&self) -> bool {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// A future that is ready the second time it is polled, after asking to be polled again:
/// long runs of commands give other tasks a turn.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

impl<'a> Scope<'a> {
    /// A line the caller typed themselves.
    fn typed(caller: &'a Caller, budget: &'a Budget) -> Self {
        Self {
            caller,
            generated: false,
            aliases: Vec::new(),
            contextual: None,
            stage: (0, 1),
            substituted: false,
            depth: 0,
            budget,
            following: &[],
        }
    }

    /// A run nested in this one (a sub-expression, an alias body, an `xargs` or `repeat`
    /// run): generated, one level deeper, seeing `contextual` data.
    fn nested(&self, contextual: Option<&'a Value>) -> Result<Self, String> {
        if self.depth >= MAX_NESTED_RUNS {
            return Err(format!(
                "💥 commands run inside other commands more than {MAX_NESTED_RUNS} deep 💥"
            ));
        }
        Ok(Self {
            caller: self.caller,
            generated: true,
            aliases: self.aliases.clone(),
            contextual,
            stage: (0, 1),
            substituted: false,
            depth: self.depth + 1,
            budget: self.budget,
            following: &[],
        })
    }
}

impl From<Piped> for Reply {
    fn from(piped: Piped) -> Self {
        Self {
            value: piped.value,
            data: piped.data,
            error: None,
            meta: piped.meta,
            notes: piped.notes,
            files: Vec::new(),
        }
    }
}

/// One dispatched stage: the interpreter and where the evaluation stands, which is what a
/// handler's [`Runner`] reaches.
struct Dispatched<'a> {
    interpreter: &'a Interpreter,
    scope: &'a Scope<'a>,
}

impl Reach for Dispatched<'_> {
    fn caller(&self) -> &Caller {
        self.scope.caller
    }

    fn is_generated(&self) -> bool {
        self.scope.generated
    }

    fn is_direct(&self) -> bool {
        !self.scope.generated && !self.scope.substituted && self.scope.stage == (0, 1)
    }

    fn answers_caller(&self) -> bool {
        !self.scope.generated && self.scope.stage.0 + 1 == self.scope.stage.1
    }

    fn is_admin(&self) -> bool {
        self.interpreter.is_admin(self.scope)
    }

    fn registry(&self) -> &Registry {
        &self.interpreter.registry
    }

    fn aliases(&self) -> &dyn AliasStore {
        self.interpreter.aliases.as_ref()
    }

    fn recent(&self) -> &Recent {
        &self.interpreter.recent
    }

    fn history(&self) -> Option<&dyn HistoryStore> {
        self.interpreter.history.as_ref().map(History::store)
    }

    fn prefix(&self) -> &str {
        &self.interpreter.prefix
    }

    fn random_index(&self, bound: usize) -> usize {
        let mut random = self
            .interpreter
            .random
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        random.index_below(bound.max(1)) % bound.max(1)
    }

    fn reserve_file(&self) -> Result<(), crate::files::FileError> {
        self.scope.budget.files.reserve()
    }

    fn fill_file(&self, file: crate::files::ReplyFile) -> Option<String> {
        let url = self
            .interpreter
            .publisher
            .as_ref()
            .and_then(|publisher| publisher.publish(&file));
        self.scope.budget.files.fill(file);
        url
    }

    fn release_file(&self) {
        self.scope.budget.files.release();
    }

    fn run_stage(&self, line: String, input: Piped) -> BoxFuture<'_, Result<Piped, Stopped>> {
        let interpreter = self.interpreter;
        let scope = self.scope.nested(self.scope.contextual);
        Box::pin(async move {
            let scope = scope.map_err(Stopped)?;
            yield_now().await;
            let (piped, _) = interpreter
                .stage_line(&line, &line, input, &scope)
                .await
                .map_err(Stopped)?;
            Ok(piped)
        })
    }

    fn run_expression<'s>(
        &'s self,
        line: String,
        data: Option<&'s Value>,
    ) -> BoxFuture<'s, Result<Piped, Stopped>> {
        let interpreter = self.interpreter;
        let scope = self.scope.nested(data);
        Box::pin(async move {
            let scope = scope.map_err(Stopped)?;
            let expr = syntax::parse(&line).map_err(|e| Stopped(parse_failure(&e)))?;
            interpreter.eval(&expr, &scope).await.map_err(Stopped)
        })
    }
}

impl Interpreter {
    /// An interpreter over `registry`, with aliases in `aliases` and randomness (for
    /// `random`, `shuffle`) from `random`.
    pub fn new(
        registry: Registry,
        aliases: Arc<dyn AliasStore>,
        random: Box<dyn RandomSource + Send>,
        settings: Settings,
    ) -> Self {
        Self {
            registry,
            aliases,
            history: None,
            recent: Recent::new(),
            admins: settings.admins.into_iter().collect(),
            prefix: settings.prefix,
            embedded: settings.embedded_commands,
            random: Mutex::new(random),
            disabled: Mutex::new(HashMap::new()),
            secrets: yetibot_redaction::Secrets::empty(),
            publisher: None,
        }
    }

    /// The same interpreter redacting `secrets` from every reply, whichever command produced
    /// it (`!echo` of a configured key included). Every reply also loses its bidirectional
    /// controls, with or without secrets.
    #[must_use]
    pub fn with_secrets(mut self, secrets: yetibot_redaction::Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// The same interpreter recording chat into `history` and reading from it: every message
    /// [`handle_message`](Self::handle_message) receives from a trusted caller, and every
    /// reply it gives, is queued for the history's writer, and the `history` command reads
    /// the caller's channel from its store.
    #[must_use]
    pub fn with_history(mut self, history: History) -> Self {
        self.history = Some(history);
        self
    }

    /// Publishes the files commands attach to their replies (generated images) through
    /// `publisher`, which tells each command the public URL.
    #[must_use]
    pub fn with_publisher(mut self, publisher: Arc<dyn crate::files::Publish>) -> Self {
        self.publisher = Some(publisher);
        self
    }

    /// The command prefix.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The registry.
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Switches `category` off (or back on) in `room`.
    pub fn set_category_disabled(&self, room: &str, category: Category, disabled: bool) {
        let mut map = self
            .disabled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = map.entry(room.to_owned()).or_default();
        if disabled {
            set.insert(category);
        } else {
            set.remove(&category);
        }
    }

    /// Handles one chat message: a prefixed line runs as a command (a bare prefix re-runs
    /// the caller's last command in the channel); any other line is remembered for `that`,
    /// and its backtick commands run when embedded commands are on. Returns one reply per
    /// command run (embedded commands' errors are left out).
    ///
    /// With [history](Self::with_history), a trusted caller's message and then each reply
    /// are queued for recording under one new correlation ID, keyed by the caller's message
    /// ID (`<id>` for the message, `<id>/<n>` for the n-th reply) so that a replayed event
    /// is never stored twice. Queueing never waits.
    pub async fn handle_message(&self, caller: &Caller, text: &str) -> Vec<Reply> {
        let recording = self.history.as_ref().filter(|_| caller.trusted);
        let correlation_id = recording.map(|history| {
            let id = self.correlation_id();
            history.record(HistoryRecord {
                scope: caller.history_scope(),
                user_id: caller.user_id.clone(),
                user_name: caller.user_name.clone(),
                body: text.to_owned(),
                command: String::new(),
                correlation_id: id.clone(),
                is_yetibot: false,
                is_private: false,
                is_error: false,
                is_command: text.starts_with(self.prefix.as_str()),
                message_key: caller.message_id.clone(),
            });
            id
        });
        let answered = self.answer(caller, text).await;
        if let (Some(history), Some(correlation_id)) = (recording, correlation_id) {
            for (n, (expression, reply)) in answered.iter().enumerate() {
                history.record(HistoryRecord {
                    scope: caller.history_scope(),
                    user_id: history.bot_user_id().to_owned(),
                    user_name: history.bot_user_name().to_owned(),
                    body: reply.messages().join("\n"),
                    command: expression.clone(),
                    correlation_id: correlation_id.clone(),
                    is_yetibot: true,
                    is_private: false,
                    is_error: reply.error.is_some(),
                    is_command: false,
                    message_key: caller
                        .message_id
                        .as_ref()
                        .map(|id| format!("{id}/{}", n + 1)),
                });
            }
        }
        answered.into_iter().map(|(_, reply)| reply).collect()
    }

    /// The replies to one chat message, each with the expression that produced it.
    async fn answer(&self, caller: &Caller, text: &str) -> Vec<(String, Reply)> {
        if let Some(expression) = text.strip_prefix(self.prefix.as_str()) {
            if expression.trim().is_empty() {
                return vec![
                    match self.recent.last_command_of(&caller.room, &caller.user_id) {
                        Some(previous) => {
                            let reply = self.run_expression(caller, &previous).await;
                            (previous, reply)
                        }
                        None => (
                            String::new(),
                            Reply::failed(
                                "You have not run a command in this channel yet".to_owned(),
                            ),
                        ),
                    },
                ];
            }
            let reply = self.run_expression(caller, expression).await;
            // Remembered after it ran, so that `that cmd` names the command before it.
            self.recent
                .command(&caller.room, &caller.user_id, expression);
            return vec![(expression.to_owned(), reply)];
        }
        self.recent.line(&caller.room, text);
        if !self.embedded {
            return Vec::new();
        }
        let mut replies = Vec::new();
        for expr in self
            .embedded_commands(text)
            .await
            .into_iter()
            .take(MAX_EMBEDDED_COMMANDS)
        {
            // Quoted in prose, a command is not one the caller asked to run with their
            // authority: embedded commands run as generated ones.
            let budget = Budget::new();
            let scope = Scope {
                generated: true,
                ..Scope::typed(caller, &budget)
            };
            if let Ok(piped) = self.eval(&expr, &scope).await {
                let mut reply = Reply::from(piped);
                reply.files = budget.files.take();
                reply.present(&self.secrets);
                replies.push((expr.to_line(), reply));
            }
        }
        replies
    }

    /// A new correlation ID: 122 random bits from the interpreter's random source, written
    /// as a version 4 UUID.
    fn correlation_id(&self) -> String {
        let mut random = self
            .random
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut bytes = [0u8; 16];
        for byte in &mut bytes {
            *byte = u8::try_from(random.index_below(256) % 256).unwrap_or_default();
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }

    /// Runs one expression as the caller typed it; the prefix is optional (it is removed
    /// once, when present).
    pub async fn run(&self, caller: &Caller, line: &str) -> Reply {
        let line = line.strip_prefix(self.prefix.as_str()).unwrap_or(line);
        self.run_expression(caller, line).await
    }

    /// Runs one expression, which has no prefix.
    async fn run_expression(&self, caller: &Caller, line: &str) -> Reply {
        let expr = match syntax::parse(line) {
            Ok(expr) => expr,
            Err(error) => {
                let mut reply = Reply::failed(parse_failure(&error));
                reply.present(&self.secrets);
                return reply;
            }
        };
        let budget = Budget::new();
        let scope = Scope::typed(caller, &budget);
        let mut reply = match self.eval(&expr, &scope).await {
            Ok(piped) => Reply::from(piped),
            Err(error) => Reply {
                data: budget.take_error_data(&error),
                ..Reply::failed(error)
            },
        };
        reply.files = budget.files.take();
        reply.present(&self.secrets);
        reply
    }

    /// The top-level backtick sub-expressions of an ordinary chat line whose first word is
    /// a known command or alias, in order. Only the part before the first ` | ` is searched.
    pub async fn embedded_commands(&self, text: &str) -> Vec<Expr> {
        let head = text.split(" | ").next().unwrap_or_default();
        let Ok(expr) = syntax::parse(head) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for stage in &expr.stages {
            for part in &stage.parts {
                let Part::Sub(sub) = part else {
                    continue;
                };
                if sub.style != syntax::SubStyle::Backtick {
                    continue;
                }
                let Some(word) = sub.expr.first_word() else {
                    continue;
                };
                let known = self.registry.get(word).is_some()
                    || matches!(self.aliases.get(word).await, Ok(Some(_)));
                if known {
                    found.push(sub.expr.clone());
                }
            }
        }
        found
    }

    fn is_admin(&self, scope: &Scope<'_>) -> bool {
        scope.caller.trusted && !scope.generated && self.admins.contains(&scope.caller.user_id)
    }

    /// Evaluates an expression, stage by stage.
    fn eval<'a>(
        &'a self,
        expr: &'a Expr,
        scope: &'a Scope<'a>,
    ) -> BoxFuture<'a, Result<Piped, String>> {
        self.eval_from(expr, scope, Piped::default())
    }

    /// [`Interpreter::eval`] with `start` as the state before the first stage.
    fn eval_from<'a>(
        &'a self,
        expr: &'a Expr,
        scope: &'a Scope<'a>,
        start: Piped,
    ) -> BoxFuture<'a, Result<Piped, String>> {
        Box::pin(async move {
            let mut piped = start;
            let count = expr.stages.len();
            let mut index = 0;
            while let Some(stage) = expr.stages.get(index) {
                // Sub-expressions run now, in order, and see this stage's incoming data.
                let mut typed = String::new();
                for part in &stage.parts {
                    match part {
                        Part::Text(text) => typed.push_str(text),
                        Part::Sub(sub) => {
                            let inner = scope.nested(piped.data.as_ref().or(scope.contextual))?;
                            match self.eval(&sub.expr, &inner).await {
                                Ok(result) => typed.push_str(&value::to_text(&result.value, " ")),
                                Err(error) => typed.push_str(&error),
                            }
                        }
                    }
                    if typed.len() > value::MAX_VALUE_BYTES {
                        return Err(failure_line(&typed, "the command grows past 1 MiB of text"));
                    }
                }
                let line =
                    piped_line(&typed, &piped.value).map_err(|why| failure_line(&typed, why))?;
                // A command word that was not typed (it came from a sub-expression or the
                // piped text) runs with no more authority than a generated command.
                let typed_word = stage.first_word();
                let line_word = line.split_whitespace().next();
                let stage_scope = Scope {
                    stage: (index, count),
                    substituted: stage.parts.iter().any(|part| matches!(part, Part::Sub(_))),
                    generated: scope.generated || typed_word.is_none() || typed_word != line_word,
                    following: expr.stages.get(index + 1..).unwrap_or_default(),
                    ..scope.clone()
                };
                let (next, consumed) = self.stage_line(&typed, &line, piped, &stage_scope).await?;
                piped = next;
                index += 1 + consumed;
            }
            Ok(piped)
        })
    }

    /// Runs one stage whose text (as typed, sub-expressions evaluated) is `typed` and whose
    /// command line (with the piped text applied) is `line`. Returns the new state and how
    /// many of the following stages the command consumed.
    async fn stage_line(
        &self,
        typed: &str,
        line: &str,
        mut input: Piped,
        scope: &Scope<'_>,
    ) -> Result<(Piped, usize), String> {
        let failure = |message: &str| failure_line(typed, message);
        // Notes stay with the pipeline whatever the stage makes of its value.
        let mut notes = std::mem::take(&mut input.notes);
        // How much of the line is piped text appended after the typed arguments (a space
        // and the text), so that a command can tell its own arguments from its input.
        let appended = if line.len() > typed.len() && !typed.contains("%s") {
            line.len() - typed.len()
        } else {
            0
        };
        let mut outcome = self.dispatch(line, &input, scope, appended).await;
        let mut consumed = 0;
        if let Outcome::Consumed { stages, .. } = &outcome {
            consumed = *stages;
        }
        let outcome = loop {
            outcome = match outcome {
                Outcome::Consumed { outcome: inner, .. } => *inner,
                Outcome::Noted {
                    outcome: inner,
                    notes: more,
                } => {
                    value::add_notes(&mut notes, more);
                    *inner
                }
                done => break done,
            };
        };
        let mut data_changed = true;
        let mut next = match outcome {
            Outcome::Error(message) => return Err(failure(&message)),
            Outcome::Failed(error) => return Err(error),
            Outcome::FailedWithData { message, data } => {
                let line = failure(&message);
                scope.budget.keep_error_data(&line, data);
                return Err(line);
            }
            Outcome::Value(value) => {
                data_changed = false;
                Piped {
                    value,
                    meta: None,
                    ..input
                }
            }
            Outcome::Unpaired(value) => {
                data_changed = false;
                Piped {
                    value,
                    records_at: None,
                    meta: None,
                    ..input
                }
            }
            Outcome::Answer { value, meta } => Piped {
                value,
                data: None,
                records_at: None,
                meta: Some(std::sync::Arc::from(meta)),
                notes: Vec::new(),
            },
            Outcome::Data { value, data, path } => {
                // Records are where the path points, or the data itself when it is an array.
                let records_at = match (&data, path) {
                    (Some(_), Some(path)) => Some(path),
                    (Some(Value::Array(_)), None) => Some(Vec::new()),
                    _ => None,
                };
                Piped {
                    value,
                    data,
                    records_at,
                    meta: None,
                    notes: Vec::new(),
                }
            }
            Outcome::Piped(piped) => piped,
            // Unwrapped above; kept as an error rather than a panic.
            Outcome::Consumed { .. } | Outcome::Noted { .. } => {
                return Err(failure("the command's result is malformed"));
            }
        };
        value::add_notes(&mut notes, std::mem::take(&mut next.notes));
        next.notes = notes;
        // Data a command only passed along was checked when it was made.
        let too_big = value::oversize(&next.value).or_else(|| {
            next.data
                .as_ref()
                .filter(|_| data_changed)
                .and_then(value::oversize)
        });
        if let Some(why) = too_big {
            return Err(failure(&format!("the result has {why}; select less")));
        }
        Ok((next, consumed))
    }

    /// Finds and runs the command a line names.
    async fn dispatch(
        &self,
        line: &str,
        input: &Piped,
        scope: &Scope<'_>,
        appended: usize,
    ) -> Outcome {
        let text = line.trim_start();
        let (word, args) = match text.find(char::is_whitespace) {
            Some(at) => {
                let space = text[at..].chars().next().map_or(1, char::len_utf8);
                (&text[..at], &text[at + space..])
            }
            None => (text, ""),
        };
        if word.is_empty() {
            return Outcome::error("there is no command to run");
        }
        if !scope.budget.spend() {
            return Outcome::error(format!(
                "this line runs more than {MAX_COMMAND_RUNS} commands; ask for less at once"
            ));
        }
        if let Some(spec) = self.registry.get(word) {
            if self.is_disabled(&scope.caller.room, &spec.categories) {
                return Outcome::error(format!("{word} commands are disabled in this channel"));
            }
            if spec.admin_only && !self.is_admin(scope) {
                return Outcome::error(format!(
                    "Only admins are allowed to execute {word} commands"
                ));
            }
            let Some((route, captures)) = spec.route_for(args) else {
                return Outcome::Value(Value::Array(
                    spec.help().into_iter().map(Value::String).collect(),
                ));
            };
            let items = value::as_items(&input.value);
            // Records are only ever handed over when they pair with the rows one for one.
            let records = input
                .records()
                .filter(|records| items.as_ref().is_some_and(|i| i.len() == records.len()));
            let data = input
                .data
                .as_ref()
                .or(scope.contextual)
                .or(match &input.value {
                    Value::String(text) if text.is_empty() => None,
                    other => Some(other),
                });
            let following = self.offered_stages(scope);
            let offered = following.len();
            let dispatched = Dispatched {
                interpreter: self,
                scope,
            };
            let call = Call {
                name: word,
                args,
                captures,
                items,
                raw: &input.value,
                data,
                records,
                following,
                appended,
                runner: Runner::new(&dispatched),
            };
            return match route.handler.run(call).await {
                Outcome::Consumed { stages, outcome } => Outcome::Consumed {
                    stages: stages.min(offered),
                    outcome,
                },
                other => other,
            };
        }
        match self.aliases.get(word).await {
            Ok(Some(alias)) => {
                return self.run_alias(&alias, args, appended, input, scope).await;
            }
            Ok(None) => {}
            Err(error) => return Outcome::error(error.to_string()),
        }
        if self.registry.get("help").is_some() && word != "help" {
            let help = format!("help {text}");
            return Box::pin(self.dispatch(&help, input, scope, 0)).await;
        }
        Outcome::error(format!("I don't know how to handle {word}"))
    }

    /// The following stages a command may consume: the leading ones without
    /// sub-expressions whose command word is a command the caller may run here.
    fn offered_stages<'s>(&self, scope: &Scope<'s>) -> Vec<&'s str> {
        let mut offered = Vec::new();
        for stage in scope.following {
            let [Part::Text(text)] = stage.parts.as_slice() else {
                break;
            };
            let word = text.split_whitespace().next().unwrap_or_default();
            let runnable = self.registry.get(word).is_some_and(|spec| {
                !self.is_disabled(&scope.caller.room, &spec.categories)
                    && (!spec.admin_only || self.is_admin(scope))
            });
            if !runnable {
                break;
            }
            offered.push(text.as_str());
        }
        offered
    }

    fn is_disabled(&self, room: &str, categories: &[Category]) -> bool {
        let map = self
            .disabled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(room)
            .is_some_and(|off| categories.iter().any(|c| off.contains(c)))
    }

    /// Expands an alias with `args` and runs its body as a new top-level expression that
    /// sees the caller's data.
    async fn run_alias(
        &self,
        alias: &Alias,
        args: &str,
        appended: usize,
        input: &Piped,
        scope: &Scope<'_>,
    ) -> Outcome {
        if scope.aliases.iter().any(|open| open == &alias.name) {
            return Outcome::error(format!("alias {} calls itself", alias.name));
        }
        if scope.aliases.len() >= MAX_ALIAS_DEPTH {
            return Outcome::error(format!("aliases expand more than {MAX_ALIAS_DEPTH} deep"));
        }
        // A one-stage body without placeholders takes the piped text the way a typed
        // command would: its typed arguments are appended to the body, and the piped text
        // reaches the stage as its previous value, so the command can tell the two apart
        // (an AI command sends piped text as data, not as part of its prompt). The line it
        // runs is the same either way.
        let simple = appended > 0
            && !alias.expression.contains('$')
            && syntax::parse(&alias.expression).is_ok_and(|e| e.stages.len() == 1);
        let typed_args = if simple {
            args.get(..args.len().saturating_sub(appended))
                .unwrap_or_default()
                .trim_end()
        } else {
            args
        };
        let Some(body) = expand_alias(&alias.expression, typed_args) else {
            return Outcome::error(format!(
                "alias {} expands past {} bytes",
                alias.name,
                crate::limits::MAX_LINE_BYTES
            ));
        };
        let expr = match syntax::parse(&body) {
            Ok(expr) => expr,
            Err(error) => return Outcome::error(format!("alias {}: {error}", alias.name)),
        };
        let mut inner = match scope.nested(input.data.as_ref().or(scope.contextual)) {
            Ok(inner) => inner,
            Err(error) => return Outcome::Failed(error),
        };
        inner.aliases.push(alias.name.clone());
        let start = if simple {
            Piped {
                value: input.value.clone(),
                data: input.data.clone(),
                records_at: input.records_at.clone(),
                meta: None,
                notes: Vec::new(),
            }
        } else {
            Piped::default()
        };
        match self.eval_from(&expr, &inner, start).await {
            Ok(piped) => Outcome::Piped(piped),
            // The body's own error line already says where it failed.
            Err(error) => Outcome::Failed(error),
        }
    }
}

/// The parse error as a chat message.
fn parse_failure(error: &syntax::ParseError) -> String {
    format!("I could not read that command: {error}")
}

/// The command line of a stage: the piped text substituted for every `%s` or appended after
/// a space; unchanged when the previous value is a collection or empty text. Refused, before
/// anything is built, when the line would grow past the largest value.
fn piped_line(typed: &str, previous: &Value) -> Result<String, &'static str> {
    if value::as_items(previous).is_some() {
        return Ok(typed.to_owned());
    }
    let text = match previous {
        Value::String(text) => std::borrow::Cow::Borrowed(text.as_str()),
        other => std::borrow::Cow::Owned(value::to_text(other, " ")),
    };
    if text.is_empty() {
        return Ok(typed.to_owned());
    }
    let copies = typed.matches("%s").count().max(1);
    if typed
        .len()
        .saturating_add(copies.saturating_mul(text.len()))
        > value::MAX_VALUE_BYTES
    {
        return Err("the piped text would make the command longer than 1 MiB");
    }
    Ok(if typed.contains("%s") {
        typed.replace("%s", &text)
    } else {
        format!("{typed} {text}")
    })
}

/// The error line for a stage, quoting at most the first 200 characters of it.
fn failure_line(typed: &str, message: &str) -> String {
    let quoted: String = typed.chars().take(QUOTED_STAGE_CHARS).collect();
    let cut = if quoted.len() < typed.len() {
        "…"
    } else {
        ""
    };
    format!("💥 Error in `{quoted}{cut}`: {message} 💥")
}

/// An alias body with its arguments in place: `$s` is all of them and `$1`..`$n` each one
/// (arguments split on single spaces; missing ones are empty); with neither placeholder the
/// arguments are appended. With no arguments at all only `$s` is removed. `None` when the
/// result would be longer than a line may be (so nothing that large is ever built).
fn expand_alias(body: &str, args: &str) -> Option<String> {
    let limit = crate::limits::MAX_LINE_BYTES;
    let has_positional = positional_numbers(body).next().is_some();
    if args.is_empty() {
        return Some(body.replace("$s", ""));
    }
    if !body.contains("$s") && !has_positional {
        return (body.len() + 1 + args.len() <= limit).then(|| format!("{body} {args}"));
    }
    let words: Vec<&str> = args.split(' ').collect();
    let mut out = String::with_capacity(body.len().min(limit));
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('s') {
            out.push_str(args);
            rest = tail;
        } else {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            match after[..digits].parse::<usize>() {
                Ok(n) if n >= 1 => {
                    out.push_str(words.get(n - 1).copied().unwrap_or_default());
                    rest = &after[digits..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        }
        if out.len() > limit {
            return None;
        }
    }
    out.push_str(rest);
    (out.len() <= limit).then_some(out)
}

/// The `$n` placeholders of a body.
fn positional_numbers(body: &str) -> impl Iterator<Item = usize> + '_ {
    body.match_indices('$').filter_map(move |(at, _)| {
        let after = &body[at + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        after[..digits].parse::<usize>().ok().filter(|n| *n >= 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_text_is_substituted_or_appended() {
        let text = |s: &str| Value::String(s.to_owned());
        let line = |typed: &str, previous: &Value| piped_line(typed, previous).expect("fits");
        assert_eq!(line("echo 2", &text("1")), "echo 2 1");
        assert_eq!(line("echo %sbar%s", &text("foo")), "echo foobarfoo");
        assert_eq!(line("echo 2", &text("")), "echo 2");
        assert_eq!(line("echo 2", &text("a\nb")), "echo 2");
        assert_eq!(line("echo %s", &Value::Array(vec![text("a")])), "echo %s");
        // A line that would grow past 1 MiB is refused before it is built.
        let big = text(&"y".repeat(1 << 16));
        assert!(piped_line(&"%s".repeat(20), &big).is_err());
    }

    #[test]
    fn alias_placeholders() {
        assert_eq!(
            expand_alias("echo $s!", "a b").as_deref(),
            Some("echo a b!")
        );
        assert_eq!(
            expand_alias("echo $2 $1 $3.", "a b").as_deref(),
            Some("echo b a .")
        );
        assert_eq!(
            expand_alias("echo hi", "a b").as_deref(),
            Some("echo hi a b")
        );
        assert_eq!(expand_alias("echo $s $1", "").as_deref(), Some("echo  $1"));
        assert_eq!(expand_alias("echo $1", "a b c").as_deref(), Some("echo a"));
        assert_eq!(
            expand_alias("echo %s $1", "x").as_deref(),
            Some("echo %s x")
        );
        assert_eq!(expand_alias("price $10", "a").as_deref(), Some("price "));
        assert_eq!(
            expand_alias("cost $ $x", "a").as_deref(),
            Some("cost $ $x a")
        );
        // A body that would expand past a line's length is refused, not built.
        assert_eq!(expand_alias(&"$s".repeat(8000), &"y".repeat(100)), None);
    }
}
