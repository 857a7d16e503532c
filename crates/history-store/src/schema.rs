//! The tables, their versioned migrations and every statement the stores run, written once
//! for both databases: the two dialects differ only in a few spellings (placeholders, the
//! key column, timestamps, case-insensitive matching), which [`Dialect`] supplies.

use yetibot_history::limits::{MAX_HISTORY_BODY_CHARS, MAX_HISTORY_NAME_CHARS};
use yetibot_history::{
    HistoryFilter, HistoryOrder, HistoryQuery, HistoryRecord, HistoryScope, TextMatch,
};

use crate::config::TablePrefix;

/// The newest schema version this build writes. A database at a newer version is refused,
/// never rewritten.
pub const SCHEMA_VERSION: i64 = 2;

/// The SQL spelling of one database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Postgres,
    Sqlite,
}

/// A statement parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Param {
    Text(String),
    Int(i64),
    Bool(bool),
}

/// A statement and its parameters, in placeholder order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Statement {
    pub(crate) sql: String,
    pub(crate) params: Vec<Param>,
}

/// One migration step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Run as is (every statement is idempotent: `IF NOT EXISTS`).
    Sql(String),
    /// Add the column when the table lacks it.
    AddColumn {
        table: String,
        column: &'static str,
        definition: String,
    },
}

/// The full table and index names under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tables {
    pub(crate) history: String,
    pub(crate) alias: String,
    pub(crate) version: String,
    prefix: String,
}

impl Tables {
    pub(crate) fn new(prefix: &TablePrefix) -> Self {
        Self {
            history: prefix.table("history"),
            alias: prefix.table("alias"),
            version: prefix.table("schema_version"),
            prefix: prefix.as_str().to_owned(),
        }
    }
}

/// The history table's columns besides `id` and `created_at`, with their types, exactly as
/// upstream Yetibot creates them.
const HISTORY_COLUMNS: [(&str, &str); 11] = [
    ("chat_source_adapter", "TEXT"),
    ("chat_source_room", "TEXT"),
    ("user_id", "TEXT"),
    ("user_name", "TEXT"),
    ("command", "TEXT DEFAULT ''"),
    ("correlation_id", "TEXT"),
    ("body", "TEXT"),
    ("is_yetibot", "BOOLEAN DEFAULT false"),
    ("is_private", "BOOLEAN DEFAULT false"),
    ("is_error", "BOOLEAN DEFAULT false"),
    ("is_command", "BOOLEAN"),
];

/// The columns an insert writes, in order.
const INSERT_COLUMNS: &str = "chat_source_adapter, chat_source_room, user_id, user_name, body, command, correlation_id, is_yetibot, is_private, is_error, is_command, message_key";

impl Dialect {
    fn placeholder(self, n: usize) -> String {
        match self {
            Self::Postgres => format!("${n}"),
            Self::Sqlite => format!("?{n}"),
        }
    }

    fn key_column(self) -> &'static str {
        match self {
            Self::Postgres => "id SERIAL PRIMARY KEY",
            Self::Sqlite => "id INTEGER PRIMARY KEY AUTOINCREMENT",
        }
    }

    fn created_at_column(self) -> &'static str {
        match self {
            Self::Postgres => "created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
            Self::Sqlite => {
                "created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))"
            }
        }
    }

    /// `created_at` as `YYYY-MM-DDTHH:MM:SS.mmm`.
    fn timestamp(self, column: &str) -> String {
        match self {
            Self::Postgres => format!("to_char({column}, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS')"),
            Self::Sqlite => format!("strftime('%Y-%m-%dT%H:%M:%f', {column})"),
        }
    }
}

/// The versioned migrations, oldest first. Version 1 is upstream Yetibot's schema: it
/// creates the tables when missing and adds any column an older upstream table lacks.
/// Version 2 adds what this build needs: the message key that makes writes idempotent, and
/// the indexes of scoped reads and alias lookups. Migrations only ever add.
pub(crate) fn migrations(dialect: Dialect, tables: &Tables) -> Vec<(i64, Vec<Step>)> {
    let history = &tables.history;
    let alias = &tables.alias;
    let prefix = &tables.prefix;
    let columns: Vec<String> = HISTORY_COLUMNS
        .iter()
        .map(|(name, kind)| format!("{name} {kind}"))
        .collect();
    let mut first = vec![
        Step::Sql(format!(
            "CREATE TABLE IF NOT EXISTS {history} ({}, {}, {})",
            dialect.key_column(),
            columns.join(", "),
            dialect.created_at_column()
        )),
        Step::Sql(format!(
            "CREATE TABLE IF NOT EXISTS {alias} ({}, user_id TEXT NOT NULL, cmd_name TEXT NOT NULL, cmd TEXT NOT NULL, {})",
            dialect.key_column(),
            dialect.created_at_column()
        )),
    ];
    first.extend(HISTORY_COLUMNS.iter().map(|(name, kind)| Step::AddColumn {
        table: history.clone(),
        column: name,
        definition: (*kind).to_owned(),
    }));
    if dialect == Dialect::Postgres {
        // SQLite cannot add a column whose default is an expression; its tables are always
        // created by this build, with the column.
        first.push(Step::AddColumn {
            table: history.clone(),
            column: "created_at",
            definition: "TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP".to_owned(),
        });
    }
    let second = vec![
        Step::AddColumn {
            table: history.clone(),
            column: "message_key",
            definition: "TEXT".to_owned(),
        },
        Step::Sql(format!(
            "CREATE UNIQUE INDEX IF NOT EXISTS {prefix}history_message_key ON {history} (chat_source_adapter, chat_source_room, message_key)"
        )),
        Step::Sql(format!(
            "CREATE INDEX IF NOT EXISTS {prefix}history_scope ON {history} (chat_source_adapter, chat_source_room, created_at, id)"
        )),
        Step::Sql(format!(
            "CREATE INDEX IF NOT EXISTS {prefix}alias_cmd_name ON {alias} (cmd_name)"
        )),
    ];
    vec![(1, first), (2, second)]
}

/// The version table, created before anything else.
pub(crate) fn version_table(tables: &Tables) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (version BIGINT PRIMARY KEY)",
        tables.version
    )
}

/// Builds a statement, numbering placeholders as parameters are added.
struct Builder {
    dialect: Dialect,
    params: Vec<Param>,
}

impl Builder {
    fn new(dialect: Dialect) -> Self {
        Self {
            dialect,
            params: Vec::new(),
        }
    }

    fn param(&mut self, param: Param) -> String {
        self.params.push(param);
        self.dialect.placeholder(self.params.len())
    }

    fn text(&mut self, text: &str) -> String {
        self.param(Param::Text(text.to_owned()))
    }

    fn int(&mut self, n: i64) -> String {
        let placeholder = self.param(Param::Int(n));
        format!("CAST({placeholder} AS BIGINT)")
    }

    /// The conditions selecting `filter`'s rows of `scope` in table alias `h`.
    fn conditions(&mut self, scope: &HistoryScope, filter: &HistoryFilter) -> String {
        let adapter = self.text(scope.adapter());
        let room = self.text(scope.room());
        let mut conditions = vec![format!(
            "h.chat_source_adapter = {adapter} AND h.chat_source_room = {room}"
        )];
        match &filter.text {
            None => {}
            Some(TextMatch::Contains(text)) => conditions.push(match self.dialect {
                Dialect::Postgres => {
                    let pattern = self.text(&format!("%{}%", escape_like(text)));
                    format!("h.body ILIKE {pattern} ESCAPE E'\\\\'")
                }
                Dialect::Sqlite => {
                    let needle = self.text(text);
                    format!("yetibot_contains(h.body, {needle})")
                }
            }),
            Some(TextMatch::Pattern(pattern)) => conditions.push(match self.dialect {
                Dialect::Postgres => format!("h.body ~* {}", self.text(pattern)),
                Dialect::Sqlite => format!("yetibot_matches({}, h.body)", self.text(pattern)),
            }),
        }
        if let Some(start) = &filter.skip_commands_starting_with {
            let length = self.param(Param::Int(
                i64::try_from(start.chars().count()).unwrap_or(i64::MAX),
            ));
            let start = self.text(start);
            conditions.push(format!(
                "NOT (COALESCE(h.is_command, FALSE) AND substr(COALESCE(h.body, ''), 1, CAST({length} AS INTEGER)) = {start})"
            ));
        }
        conditions.join(" AND ")
    }

    fn finish(self, sql: String) -> Statement {
        Statement {
            sql,
            params: self.params,
        }
    }
}

/// `%`, `_` and `\` as literal characters of a `LIKE` pattern whose escape is `\`.
pub(crate) fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The rows of `scope` that `query` selects, each text column cut one character past its
/// bound, so that the caller sees which were longer.
pub(crate) fn select_rows(
    dialect: Dialect,
    tables: &Tables,
    scope: &HistoryScope,
    query: &HistoryQuery,
) -> Statement {
    let history = &tables.history;
    let mut builder = Builder::new(dialect);
    let mut conditions = builder.conditions(scope, &query.filter);
    let mut from = format!("{history} h");
    if let Some(before) = query.before_id {
        // The cursor row must be in the same scope; when it is not, the join is empty.
        let id = builder.int(before);
        let adapter = builder.text(scope.adapter());
        let room = builder.text(scope.room());
        from.push_str(&format!(
            ", (SELECT created_at AS at, id AS row_id FROM {history} WHERE id = {id} AND chat_source_adapter = {adapter} AND chat_source_room = {room}) cur"
        ));
        conditions.push_str(
            " AND h.created_at <= cur.at AND (h.created_at < cur.at OR h.id < cur.row_id)",
        );
    }
    let direction = match query.order {
        HistoryOrder::OldestFirst => "ASC",
        HistoryOrder::NewestFirst => "DESC",
    };
    let limit = builder.int(i64::from(query.limit));
    let offset = builder.int(i64::try_from(query.offset).unwrap_or(i64::MAX));
    let name = MAX_HISTORY_NAME_CHARS + 1;
    let body = MAX_HISTORY_BODY_CHARS + 1;
    let sql = format!(
        "SELECT CAST(h.id AS BIGINT), {}, substr(COALESCE(h.user_id, ''), 1, {name}), substr(COALESCE(h.user_name, ''), 1, {name}), substr(COALESCE(h.body, ''), 1, {body}), COALESCE(h.is_yetibot, FALSE), COALESCE(h.is_command, FALSE), COALESCE(h.is_error, FALSE) FROM {from} WHERE {conditions} ORDER BY h.created_at {direction}, h.id {direction} LIMIT {limit} OFFSET {offset}",
        dialect.timestamp("h.created_at")
    );
    builder.finish(sql)
}

/// The number of rows of `scope` that `filter` selects.
pub(crate) fn count_rows(
    dialect: Dialect,
    tables: &Tables,
    scope: &HistoryScope,
    filter: &HistoryFilter,
) -> Statement {
    let mut builder = Builder::new(dialect);
    let conditions = builder.conditions(scope, filter);
    let sql = format!(
        "SELECT COUNT(*) FROM {} h WHERE {conditions}",
        tables.history
    );
    builder.finish(sql)
}

/// One insert of `records`, skipping rows whose message key is already stored.
pub(crate) fn insert(dialect: Dialect, tables: &Tables, records: &[HistoryRecord]) -> Statement {
    let mut builder = Builder::new(dialect);
    let mut rows = Vec::with_capacity(records.len());
    for record in records {
        let values = [
            builder.text(record.scope.adapter()),
            builder.text(record.scope.room()),
            builder.text(&record.user_id),
            builder.text(&record.user_name),
            builder.text(&record.body),
            builder.text(&record.command),
            builder.text(&record.correlation_id),
            builder.param(Param::Bool(record.is_yetibot)),
            builder.param(Param::Bool(record.is_private)),
            builder.param(Param::Bool(record.is_error)),
            builder.param(Param::Bool(record.is_command)),
            match &record.message_key {
                Some(key) => builder.text(key),
                None => "NULL".to_owned(),
            },
        ];
        rows.push(format!("({})", values.join(", ")));
    }
    let sql = format!(
        "INSERT INTO {} ({INSERT_COLUMNS}) VALUES {} ON CONFLICT DO NOTHING",
        tables.history,
        rows.join(", ")
    );
    builder.finish(sql)
}

/// The alias statements: the first alias of a name (upstream keeps no unique name), all
/// aliases' first rows, and the changes.
pub(crate) struct AliasSql {
    pub(crate) get: String,
    pub(crate) list: String,
    pub(crate) update: String,
    pub(crate) insert: String,
    pub(crate) delete: String,
}

impl AliasSql {
    pub(crate) fn new(dialect: Dialect, tables: &Tables, max_rows: usize) -> Self {
        let alias = &tables.alias;
        let p = |n| dialect.placeholder(n);
        Self {
            get: format!(
                "SELECT cmd_name, cmd, user_id FROM {alias} WHERE cmd_name = {} ORDER BY id LIMIT 1",
                p(1)
            ),
            list: format!(
                "SELECT cmd_name, cmd, user_id FROM {alias} WHERE id IN (SELECT MIN(id) FROM {alias} GROUP BY cmd_name) ORDER BY cmd_name LIMIT {max_rows}"
            ),
            update: format!(
                "UPDATE {alias} SET cmd = {}, user_id = {} WHERE cmd_name = {}",
                p(2),
                p(3),
                p(1)
            ),
            insert: format!(
                "INSERT INTO {alias} (cmd_name, cmd, user_id) VALUES ({}, {}, {})",
                p(1),
                p(2),
                p(3)
            ),
            delete: format!("DELETE FROM {alias} WHERE cmd_name = {}", p(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_wildcards_and_the_escape_are_literal() {
        assert_eq!(escape_like(r"50%_off\now"), r"50\%\_off\\now");
        assert_eq!(escape_like("plain"), "plain");
    }

    #[test]
    fn placeholders_are_numbered_in_parameter_order() {
        let tables = Tables::new(&TablePrefix::default());
        let statement = count_rows(
            Dialect::Sqlite,
            &tables,
            &HistoryScope::new("slack", "#a"),
            &HistoryFilter {
                text: Some(TextMatch::Contains("x".into())),
                skip_commands_starting_with: Some("!history".into()),
            },
        );
        assert_eq!(
            statement.sql,
            "SELECT COUNT(*) FROM yetibot_history h WHERE h.chat_source_adapter = ?1 AND h.chat_source_room = ?2 AND yetibot_contains(h.body, ?3) AND NOT (COALESCE(h.is_command, FALSE) AND substr(COALESCE(h.body, ''), 1, CAST(?4 AS INTEGER)) = ?5)"
        );
        assert_eq!(statement.params.len(), 5);
    }
}
