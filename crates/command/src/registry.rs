//! The command registry: each command's name, categories, admin flag, the hints a chat
//! conductor reads before it runs, and sub-command routes (a pattern, its usage line and its
//! handler), and the call a handler receives.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use regex::Regex;
use yetibot_json_util::Value;

use yetibot_history::{AliasStore, HistoryStore};

use crate::caller::Caller;
use crate::error::Stopped;
use crate::recent::Recent;
use crate::value::{Outcome, Piped};

/// What a command's handler runs with.
#[derive(Debug)]
pub struct Call<'a> {
    /// The command word.
    pub name: &'a str,
    /// Everything after the first whitespace following the command word, spaces kept, with
    /// the piped text already substituted or appended.
    pub args: &'a str,
    /// The matched route's captures: index 0 is the whole match, then each group (`None`
    /// when a group did not take part).
    pub captures: Vec<Option<String>>,
    /// The previous stage's value as a collection, when it is one (borrowed when it was
    /// already an array).
    pub items: Option<std::borrow::Cow<'a, [Value]>>,
    /// The previous stage's value as it was.
    pub raw: &'a Value,
    /// The data available to this stage: the previous stage's data, else the data of the
    /// stage that contains this sub-expression, else the previous value.
    pub data: Option<&'a Value>,
    /// The records paired with `items`, row for row, when the data has them.
    pub records: Option<&'a [Value]>,
    /// The stages after this one in the same expression, as typed, that the command may do
    /// itself instead (returning [`Outcome::Consumed`]): only the leading stages without
    /// sub-expressions whose command the caller may run here. Empty for a stage run by
    /// another command.
    pub following: Vec<&'a str>,
    /// How many bytes at the end of `args` are the previous stage's text that the
    /// interpreter appended (a space and the text), `0` when nothing was appended (no piped
    /// text, a collection, or a `%s` placeholder that placed it).
    pub appended: usize,
    /// Runs other commands and reaches the interpreter's services.
    pub runner: Runner<'a>,
}

impl Call<'_> {
    /// The capture of group `n`, or `""`.
    #[must_use]
    pub fn group(&self, n: usize) -> &str {
        self.captures
            .get(n)
            .and_then(Option::as_deref)
            .unwrap_or_default()
    }

    /// The arguments as the caller typed them: `args` without the piped text the
    /// interpreter appended. Text placed with `%s` stays, as it is part of what was typed.
    #[must_use]
    pub fn typed_args(&self) -> &str {
        let end = self.args.len().saturating_sub(self.appended);
        // Fails closed: a boundary that is not a character boundary (never expected) gives
        // no typed arguments rather than letting piped text through as typed.
        self.args.get(..end).unwrap_or_default().trim_end()
    }
}

/// What a handler may ask of the interpreter that dispatched it; the interpreter implements
/// it for each stage it runs.
pub(crate) trait Reach: Send + Sync {
    fn caller(&self) -> &Caller;
    fn is_generated(&self) -> bool;
    fn is_direct(&self) -> bool;
    fn answers_caller(&self) -> bool;
    fn is_admin(&self) -> bool;
    fn registry(&self) -> &Registry;
    fn aliases(&self) -> &dyn AliasStore;
    fn recent(&self) -> &Recent;
    fn history(&self) -> Option<&dyn HistoryStore>;
    fn prefix(&self) -> &str;
    fn random_index(&self, bound: usize) -> usize;
    fn reserve_file(&self) -> Result<(), crate::files::FileError>;
    fn fill_file(&self, file: crate::files::ReplyFile) -> Option<String>;
    fn release_file(&self);
    fn run_stage(&self, line: String, input: Piped) -> BoxFuture<'_, Result<Piped, Stopped>>;
    fn run_expression<'s>(
        &'s self,
        line: String,
        data: Option<&'s Value>,
    ) -> BoxFuture<'s, Result<Piped, Stopped>>;
}

/// A place held in the line's reply for one file ([`Runner::reserve_file`](crate::Runner::reserve_file)):
/// fill it with [`FileSlot::attach`]; dropped unfilled, it is given back.
pub struct FileSlot<'a> {
    reach: &'a (dyn Reach + 'a),
    filled: bool,
}

impl std::fmt::Debug for FileSlot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSlot")
            .field("filled", &self.filled)
            .finish()
    }
}

impl<'a> FileSlot<'a> {
    pub(crate) fn new(reach: &'a (dyn Reach + 'a)) -> Self {
        Self {
            reach,
            filled: false,
        }
    }

    /// Puts `file` in the reply, and returns its public URL when the interpreter publishes
    /// files.
    #[must_use]
    pub fn attach(mut self, file: crate::files::ReplyFile) -> Option<String> {
        self.filled = true;
        self.reach.fill_file(file)
    }
}

impl Drop for FileSlot<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.reach.release_file();
        }
    }
}

/// What a command handler can ask of the interpreter: who is asking and how, the
/// interpreter's services, and runs of other commands.
#[derive(Clone, Copy)]
pub struct Runner<'a>(&'a (dyn Reach + 'a));

impl fmt::Debug for Runner<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("generated", &self.0.is_generated())
            .finish_non_exhaustive()
    }
}

impl<'a> Runner<'a> {
    pub(crate) fn new(reach: &'a (dyn Reach + 'a)) -> Self {
        Self(reach)
    }

    /// Who is running the command.
    #[must_use]
    pub fn caller(&self) -> &'a Caller {
        self.0.caller()
    }

    /// Whether the command was produced by an alias, a sub-expression, `xargs` or an
    /// observer rather than typed by the caller. Generated commands carry no consent and no
    /// admin authority.
    #[must_use]
    pub fn is_generated(&self) -> bool {
        self.0.is_generated()
    }

    /// Whether the command was typed by the caller as the only stage of its line, every word
    /// of it their own (no sub-expression).
    #[must_use]
    pub fn is_direct(&self) -> bool {
        self.0.is_direct()
    }

    /// Whether what the command returns goes straight to the caller: it was typed, as the
    /// last stage of its line (so text shown while it is written is what the caller gets).
    #[must_use]
    pub fn answers_caller(&self) -> bool {
        self.0.answers_caller()
    }

    /// Whether the caller is a trusted admin and the command was typed, not generated.
    #[must_use]
    pub fn is_admin(&self) -> bool {
        self.0.is_admin()
    }

    /// The registry of commands.
    #[must_use]
    pub fn registry(&self) -> &'a Registry {
        self.0.registry()
    }

    /// The alias store.
    #[must_use]
    pub fn aliases(&self) -> &'a dyn AliasStore {
        self.0.aliases()
    }

    /// The per-channel memory of recent lines and commands.
    #[must_use]
    pub fn recent(&self) -> &'a Recent {
        self.0.recent()
    }

    /// The history store, when history is configured.
    #[must_use]
    pub fn history(&self) -> Option<&'a dyn HistoryStore> {
        self.0.history()
    }

    /// The command prefix.
    #[must_use]
    pub fn prefix(&self) -> &'a str {
        self.0.prefix()
    }

    /// A uniformly random index below `bound` (at least 1).
    #[must_use]
    pub fn random_index(&self, bound: usize) -> usize {
        self.0.random_index(bound)
    }

    /// Holds a place for one file in the line's reply (a generated image), before the
    /// command makes (and perhaps pays for) it: the reply carries the files of every stage,
    /// and a platform delivers them with the answer. Fill it with
    /// [`FileSlot::attach`](FileSlot::attach) (which, when the interpreter has
    /// a [`Publish`](crate::files::Publish)er, also publishes the file and returns its public
    /// URL); dropped unfilled, it is given back.
    ///
    /// # Errors
    ///
    /// [`FileError::TooMany`](crate::files::FileError::TooMany) when the reply already
    /// carries or has reserved [`MAX_REPLY_FILES`](crate::limits::MAX_REPLY_FILES).
    pub fn reserve_file(&self) -> Result<FileSlot<'a>, crate::files::FileError> {
        self.0.reserve_file()?;
        Ok(FileSlot::new(self.0))
    }

    /// Runs one command line (no pipes are split: `line` is a single stage) with `input` as
    /// its previous stage, as a generated command, and returns the new state.
    ///
    /// # Errors
    ///
    /// [`Stopped`] with the stage's error line.
    pub fn run_stage(&self, line: String, input: Piped) -> BoxFuture<'a, Result<Piped, Stopped>> {
        self.0.run_stage(line, input)
    }

    /// Parses and runs a whole expression as a generated command whose first stage sees
    /// `data`.
    ///
    /// # Errors
    ///
    /// [`Stopped`] with the error line of the stage that failed, or of the parse.
    pub fn run_expression(
        &self,
        line: String,
        data: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<Piped, Stopped>> {
        self.0.run_expression(line, data)
    }
}

/// A command handler.
pub trait Handler: Send + Sync {
    /// Runs the command.
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome>;
}

/// A handler that needs no waiting: a plain function of the call.
pub struct Plain<F>(pub F);

impl<F> Handler for Plain<F>
where
    F: Fn(&Call<'_>) -> Outcome + Send + Sync,
{
    fn run<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        let outcome = (self.0)(&call);
        Box::pin(std::future::ready(outcome))
    }
}

impl<F> fmt::Debug for Plain<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Plain")
    }
}

/// A group of commands a channel can switch off, by name. The command language defines its
/// own groups; a crate that registers commands may name groups of its own with
/// [`Category::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Category(&'static str);

impl Category {
    /// Text and pipeline utilities.
    pub const UTIL: Self = Self("util");
    /// Commands over collections.
    pub const COLLECTION: Self = Self("collection");
    /// Information about the bot and its users.
    pub const INFO: Self = Self("info");
    /// Commands that change the bot's configuration.
    pub const ADMIN: Self = Self("admin");
    /// The language's own groups, topics of `help` even when no command is in them.
    pub const LANGUAGE: [Self; 4] = [Self::UTIL, Self::COLLECTION, Self::INFO, Self::ADMIN];

    /// A group named `name` (a lower-case word, shown by `help <name>`).
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    /// The category's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.0
    }
}

/// One sub-command: when its pattern is found in the arguments, its handler runs.
#[derive(Clone)]
pub struct Route {
    /// The pattern searched for anywhere in the arguments; `None` matches anything.
    pub pattern: Option<Regex>,
    /// The usage line shown in help: `head <n> <list> # return the first <n> items`.
    pub usage: String,
    /// What runs.
    pub handler: Arc<dyn Handler>,
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("pattern", &self.pattern.as_ref().map(Regex::as_str))
            .field("usage", &self.usage)
            .finish_non_exhaustive()
    }
}

/// What a chat conductor needs to know about a command before it runs it: how its
/// request is shown while it works and where its answer goes. The conductor reads these
/// from the registry and never from the command's name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hints {
    /// Its request shows its progress from the start: a status card is posted at once
    /// rather than at its first reported step.
    pub live_progress: bool,
    /// Its interim messages (text a model sends with tool calls) are shown as they come,
    /// where the platform shows live replies.
    pub interim_replies: bool,
    /// Given its arguments as typed, whether its first answer goes in a new reply thread;
    /// asked only when it is the only stage of its line and the line was not sent in a
    /// thread. `None`: it answers in place.
    pub opens_thread: Option<fn(&str) -> bool>,
    /// Running it may cost money (a paid model or service call), which the confirmation of
    /// a rerun says.
    pub may_cost: bool,
}

/// A command and its routes, tried in order.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// The command word, matched exactly and case-sensitively.
    pub name: String,
    /// The categories it belongs to.
    pub categories: Vec<Category>,
    /// Whether only admins may run it.
    pub admin_only: bool,
    /// What a chat conductor reads before running it.
    pub hints: Hints,
    /// The sub-commands.
    pub routes: Vec<Route>,
}

impl CommandSpec {
    /// A command with no routes yet.
    #[must_use]
    pub fn new(name: &str, categories: &[Category]) -> Self {
        Self {
            name: name.to_owned(),
            categories: categories.to_vec(),
            admin_only: false,
            hints: Hints::default(),
            routes: Vec::new(),
        }
    }

    /// Sets the hints a chat conductor reads before running the command.
    #[must_use]
    pub fn hints(mut self, hints: Hints) -> Self {
        self.hints = hints;
        self
    }

    /// Adds a route whose `pattern` is searched for in the arguments (`None`: anything).
    ///
    /// # Panics
    ///
    /// When `pattern` is not a valid regular expression: routes are the program's own
    /// constants, so this is a programming error found by the first test that registers it.
    #[must_use]
    pub fn route(
        mut self,
        pattern: Option<&str>,
        usage: &str,
        handler: impl Handler + 'static,
    ) -> Self {
        let pattern =
            pattern.map(|p| Regex::new(p).expect("a route pattern is a valid regular expression"));
        self.routes.push(Route {
            pattern,
            usage: usage.to_owned(),
            handler: Arc::new(handler),
        });
        self
    }

    /// Marks the command as admin-only.
    #[must_use]
    pub fn admin_only(mut self) -> Self {
        self.admin_only = true;
        self
    }

    /// The help text: one usage line per route.
    #[must_use]
    pub fn help(&self) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for route in &self.routes {
            if !lines.contains(&route.usage) {
                lines.push(route.usage.clone());
            }
        }
        lines
    }

    /// The first route that matches `args`, with its captures.
    #[must_use]
    pub fn route_for(&self, args: &str) -> Option<(&Route, Vec<Option<String>>)> {
        self.routes.iter().find_map(|route| match &route.pattern {
            None => Some((route, vec![Some(args.to_owned())])),
            Some(pattern) => pattern.captures(args).map(|captures| {
                let groups = captures
                    .iter()
                    .map(|m| m.map(|m| m.as_str().to_owned()))
                    .collect();
                (route, groups)
            }),
        })
    }
}

/// Every command the interpreter knows, by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    commands: BTreeMap<String, CommandSpec>,
}

impl Registry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a command, replacing one of the same name.
    pub fn add(&mut self, spec: CommandSpec) {
        self.commands.insert(spec.name.clone(), spec);
    }

    /// The command named exactly `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&CommandSpec> {
        self.commands.get(name)
    }

    /// Every command, by name.
    pub fn iter(&self) -> impl Iterator<Item = &CommandSpec> {
        self.commands.values()
    }
}
