//! The shape of the configuration tree: which keys exist and what type each holds.
//!
//! Two things need it before the typed structs of each crate can take over. The environment
//! mapping must know that `KEY_FILE` is the one key `:key-file` while `HEADERS_X_API_KEY` is the
//! header `X-API-KEY`, and that `true` is a boolean only where one is expected. The type check
//! must report every mistyped or unknown key at once, with its path, which serde cannot do.
//! A test walks `config/config.example.edn` against this tree and deserializes every leaf
//! into the typed structs, so the two cannot drift apart unnoticed.

use serde_json::Value;

use super::Problem;

/// What a node of the configuration tree holds.
#[derive(Debug)]
pub(crate) enum Shape {
    /// A map with known keys. Unknown keys are an error in closed sections and a note (they
    /// are ignored) in open ones, which an existing deployment may fill with settings of
    /// features this build does not have.
    Section {
        fields: &'static [Field],
        open: bool,
    },
    /// A vector whose items all have one shape.
    List(&'static Shape),
    /// A map from free-form names to sections of one shape (`:adapters {:myteam {...}}`).
    /// In a variable the name is the shortest run of words after which the rest names a
    /// field of the section (`ADAPTERS_MY_TEAM_APP_TOKEN` → `:my-team` `:app-token`).
    Named(&'static Shape),
    /// A map from free-form names to strings (`:headers`, `:env`).
    FreeMap {
        /// Header names: environment underscores become dashes (`X_API_KEY` → `X-API-KEY`).
        header_names: bool,
    },
    /// A string.
    Str,
    /// `true` or `false`.
    Bool,
    /// An integer.
    Int,
    /// Any finite number.
    Number,
    /// A legacy key that is accepted and ignored.
    Legacy,
}

/// A known key of a section.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) key: &'static str,
    pub(crate) shape: &'static Shape,
    /// Whether `nil` is an error rather than "not set".
    pub(crate) nil_is_error: bool,
}

const fn field(key: &'static str, shape: &'static Shape) -> Field {
    Field {
        key,
        shape,
        nil_is_error: false,
    }
}

const fn non_nil(key: &'static str, shape: &'static Shape) -> Field {
    Field {
        key,
        shape,
        nil_is_error: true,
    }
}

static STR: Shape = Shape::Str;
static BOOL: Shape = Shape::Bool;
static INT: Shape = Shape::Int;
static NUMBER: Shape = Shape::Number;
static LEGACY: Shape = Shape::Legacy;
static STRS: Shape = Shape::List(&STR);

static PROVIDER: Shape = Shape::Section {
    open: false,
    fields: &[
        field("name", &STR),
        field("url", &STR),
        field("key", &STR),
        field("key-file", &STR),
        field("model", &STR),
        field("api", &STR),
        field("native-tools", &STRS),
        field("max-turns", &INT),
        field("tool-calling", &BOOL),
        field("tool-choice", &STR),
        field("gateway-id", &STR),
        field("thread-store", &BOOL),
        field("context-length", &INT),
        field("max-output-tokens", &INT),
        field("stream", &BOOL),
        field("output-token-field", &STR),
    ],
};

static SERVER: Shape = Shape::Section {
    open: false,
    fields: &[
        field("name", &STR),
        field("url", &STR),
        field("headers", &Shape::FreeMap { header_names: true }),
        field("command", &STR),
        field("args", &STRS),
        field(
            "env",
            &Shape::FreeMap {
                header_names: false,
            },
        ),
        non_nil("tools", &STRS),
        field("github-api-token", &STR),
    ],
};

static SERVER_REF: Shape = Shape::Section {
    open: false,
    fields: &[field("name", &STR), non_nil("tools", &STRS)],
};

static WISE_BALANCE: Shape = Shape::Section {
    open: false,
    fields: &[
        field("id", &INT),
        field("currency", &STR),
        field("name", &STR),
    ],
};

static WISE_PROFILE: Shape = Shape::Section {
    open: false,
    fields: &[
        field("id", &INT),
        field("balances", &Shape::List(&WISE_BALANCE)),
    ],
};

static WISE_CHAT: Shape = Shape::Section {
    open: false,
    fields: &[
        field("adapter", &STR),
        field("connection", &STR),
        field("room", &STR),
    ],
};

static WISE: Shape = Shape::Section {
    open: false,
    fields: &[
        field("key-file", &STR),
        field("api-url", &STR),
        field("profiles", &Shape::List(&WISE_PROFILE)),
        field("chats", &Shape::List(&WISE_CHAT)),
    ],
};

static PROVIDER_MODELS: Shape = Shape::Section {
    open: false,
    fields: &[field("name", &STR), field("models", &STRS)],
};

static TOOLSET: Shape = Shape::Section {
    open: false,
    fields: &[
        field("name", &STR),
        field("kind", &STR),
        field("servers", &Shape::List(&SERVER_REF)),
        field("native-tools", &STRS),
        field("users", &STRS),
        field("adapters", &STRS),
        field("providers", &Shape::List(&PROVIDER_MODELS)),
        field("repositories", &STRS),
        field("base-branches", &STRS),
        field("allowed-paths", &STRS),
        field("denied-paths", &STRS),
        field("branch-prefix", &STR),
        field("write-server", &STR),
        field("conversations", &LEGACY),
    ],
};

static MCP: Shape = Shape::Section {
    open: false,
    fields: &[
        field("default-toolset", &STR),
        field("max-tool-calls", &INT),
        field("timeout-ms", &INT),
        field("github-api-url", &STR),
        field("servers", &Shape::List(&SERVER)),
        field("toolsets", &Shape::List(&TOOLSET)),
    ],
};

static INTENT_ROUTER: Shape = Shape::Section {
    open: false,
    fields: &[
        field("enabled", &BOOL),
        field("account-id", &STR),
        field("key-file", &STR),
        field("gateway-id", &STR),
        field("api-url", &STR),
        field("github-toolset", &STR),
        field("min-probability", &NUMBER),
    ],
};

static AI: Shape = Shape::Section {
    open: false,
    fields: &[
        field("default-provider", &STR),
        field("providers", &Shape::List(&PROVIDER)),
        field("mcp", &MCP),
        field("intent-router", &INTENT_ROUTER),
    ],
};

/// One chat platform connection of `:yetibot :adapters`, as upstream Yetibot names its keys.
/// Closed, so that a mistyped key is caught; Discord's keys join these.
static ADAPTER: Shape = Shape::Section {
    open: false,
    fields: &[
        field("type", &STR),
        field("token", &STR),
        field("app-token", &STR),
        field("api-url", &STR),
        field("http-proxy", &STR),
        field("gateway-url", &STR),
        field(
            "shards",
            &Shape::Section {
                open: false,
                fields: &[
                    field("first", &INT),
                    field("last", &INT),
                    field("total", &INT),
                ],
            },
        ),
    ],
};

/// `:yetibot`: open, because deployments carry settings of other features.
pub(crate) static YETIBOT: Shape = Shape::Section {
    open: true,
    fields: &[
        field("ai", &AI),
        field("adapters", &Shape::Named(&ADAPTER)),
        field(
            "admin",
            &Shape::Section {
                open: true,
                fields: &[field("users", &STRS)],
            },
        ),
        field(
            "xai",
            &Shape::Section {
                open: true,
                fields: &[field("key", &STR), field("api-url", &STR)],
            },
        ),
        field(
            "imgflip",
            &Shape::Section {
                open: true,
                fields: &[
                    field("username", &STR),
                    field("password", &STR),
                    field("api-url", &STR),
                ],
            },
        ),
        field(
            "command",
            &Shape::Section {
                open: true,
                fields: &[field("prefix", &STR), field("embedded", &BOOL)],
            },
        ),
        field(
            "local",
            &Shape::Section {
                open: true,
                fields: &[field("user-id", &STR), field("user-name", &STR)],
            },
        ),
        field("db", &DB),
        field(
            "web",
            &Shape::Section {
                open: false,
                fields: &[
                    field("enabled", &BOOL),
                    field("host", &STR),
                    field("port", &INT),
                    field("token-file", &STR),
                ],
            },
        ),
        field("wise", &WISE),
        field(
            "images",
            &Shape::Section {
                open: false,
                fields: &[
                    field("public-url", &STR),
                    field("listen", &STR),
                    field("max-count", &INT),
                    field("max-bytes", &INT),
                ],
            },
        ),
        field(
            "concurrency",
            &Shape::Section {
                open: false,
                fields: &[
                    field("memory-budget-mib", &INT),
                    field("per-user", &INT),
                    field("per-channel", &INT),
                    field("queue", &INT),
                    field("queue-per-user", &INT),
                ],
            },
        ),
        field(
            "release-info",
            &Shape::Section {
                open: false,
                fields: &[field("feed-url", &STR)],
            },
        ),
        field(
            "history",
            &Shape::Section {
                open: true,
                fields: &[field("disabled", &BOOL)],
            },
        ),
        // Open, like the other sections outside `:ai`: a deployment may keep other log
        // settings here.
        field(
            "log",
            &Shape::Section {
                open: true,
                fields: &[field("level", &STR)],
            },
        ),
    ],
};

/// `:yetibot :db`: upstream Yetibot's `:url` and `:table :prefix`, and this build's SQLite
/// file for when there is no URL.
static DB: Shape = Shape::Section {
    open: false,
    fields: &[
        field("url", &STR),
        field(
            "table",
            &Shape::Section {
                open: false,
                fields: &[field("prefix", &STR)],
            },
        ),
        field(
            "sqlite",
            &Shape::Section {
                open: false,
                fields: &[field("path", &STR)],
            },
        ),
    ],
};

/// The whole file: one map whose `:yetibot` key holds everything this build reads.
pub(crate) static ROOT: Shape = Shape::Section {
    open: true,
    fields: &[field("yetibot", &YETIBOT)],
};

/// What the type check found besides hard problems.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) problems: Vec<Problem>,
    /// Keys that were ignored, with why.
    pub(crate) notes: Vec<String>,
}

/// Checks `value` against `shape`, collecting every problem, and removes `nil` values where
/// they mean "not set" so that the typed structs see them as absent.
///
/// What is wrong is taken out of the tree (a map's key removed, a vector's item replaced by
/// an empty value of its shape), so that the semantic checks can still run on the rest and
/// report their problems in the same pass. Returns whether `value` itself may stay.
pub(crate) fn check(value: &mut Value, shape: &Shape, path: &str, report: &mut Report) -> bool {
    match (shape, value) {
        (Shape::Section { fields, open }, Value::Object(map)) => {
            let mut remove = Vec::new();
            for (key, item) in map.iter_mut() {
                let child = join(path, key);
                match fields.iter().find(|f| f.key == key) {
                    Some(f) if item.is_null() && f.nil_is_error => {
                        report.problems.push(Problem::new(
                            child,
                            "must not be nil (omit the key instead)",
                        ));
                        remove.push(key.clone());
                    }
                    Some(_) if item.is_null() => remove.push(key.clone()),
                    Some(Field {
                        shape: Shape::Legacy,
                        ..
                    }) => {
                        report
                            .notes
                            .push(format!("{child}: legacy setting, ignored"));
                        remove.push(key.clone());
                    }
                    Some(f) => {
                        if !check(item, f.shape, &child, report) {
                            remove.push(key.clone());
                        }
                    }
                    // An open section ignores settings of features this build lacks, but
                    // a near miss of one of its own keys is a typo, not such a setting.
                    None if *open => {
                        match closest_key(key, fields) {
                            Some(known) => report.problems.push(Problem::new(
                                child,
                                format!("is not a known setting; did you mean :{known}?"),
                            )),
                            None => report
                                .notes
                                .push(format!("{child}: not used by this build, ignored")),
                        }
                        remove.push(key.clone());
                    }
                    None => {
                        let reason = match closest_key(key, fields) {
                            Some(known) => {
                                format!("is not a known setting; did you mean :{known}?")
                            }
                            None => "is not a known setting".to_owned(),
                        };
                        report.problems.push(Problem::new(child, reason));
                        remove.push(key.clone());
                    }
                }
            }
            for key in remove {
                map.remove(&key);
            }
            true
        }
        (Shape::List(item), Value::Array(items)) => {
            for (i, value) in items.iter_mut().enumerate() {
                let child = format!("{path}[{i}]");
                if value.is_null() {
                    report.problems.push(Problem::new(
                        child,
                        "is missing (nil, or the environment sets a later index)",
                    ));
                    *value = empty(item);
                } else if !check(value, item, &child, report) {
                    // Replaced rather than removed, so later items keep their positions in
                    // the semantic checks' messages.
                    *value = empty(item);
                }
            }
            true
        }
        (Shape::Named(item), Value::Object(map)) => {
            let mut remove = Vec::new();
            for (key, value) in map.iter_mut() {
                if value.is_null() || !check(value, item, &join(path, key), report) {
                    remove.push(key.clone());
                }
            }
            for key in remove {
                map.remove(&key);
            }
            true
        }
        (Shape::FreeMap { .. }, Value::Object(map)) => {
            map.retain(|key, value| {
                let keep = value.is_string();
                if !keep {
                    report
                        .problems
                        .push(Problem::new(join(path, key), "expected a string"));
                }
                keep
            });
            true
        }
        (Shape::Str, Value::String(_))
        | (Shape::Bool, Value::Bool(_))
        | (Shape::Number, Value::Number(_))
        | (Shape::Legacy, _) => true,
        (Shape::Int, Value::Number(n)) if n.is_i64() => true,
        (shape, _) => {
            report.problems.push(Problem::new(path, expected(shape)));
            false
        }
    }
}

/// A value of `shape` that says nothing: what a wrong item of a vector is replaced by.
fn empty(shape: &Shape) -> Value {
    match shape {
        Shape::Section { .. } | Shape::Named(_) | Shape::FreeMap { .. } => {
            Value::Object(serde_json::Map::new())
        }
        Shape::List(_) => Value::Array(Vec::new()),
        Shape::Str => Value::String(String::new()),
        Shape::Bool => Value::Bool(false),
        Shape::Int | Shape::Number => Value::from(0),
        Shape::Legacy => Value::Null,
    }
}

/// The section's key closest to a misspelt `key`, when one is close enough to be meant.
fn closest_key(key: &str, fields: &[Field]) -> Option<&'static str> {
    let wanted: Vec<char> = key.chars().collect();
    if wanted.len() > 64 {
        return None;
    }
    fields
        .iter()
        .filter(|f| !matches!(f.shape, Shape::Legacy))
        .map(|f| {
            let known: Vec<char> = f.key.chars().collect();
            (yetibot_conversation::edit_distance(&wanted, &known), f.key)
        })
        .filter(|(distance, known)| *distance <= (known.chars().count() / 3).clamp(1, 3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

/// Appends a map key to a dotted path.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn expected(shape: &Shape) -> &'static str {
    match shape {
        Shape::Section { .. } => "expected a map",
        Shape::List(_) => "expected a vector",
        Shape::Named(_) => "expected a map of names to settings",
        Shape::FreeMap { .. } => "expected a map of names to strings",
        Shape::Str => "expected a string",
        Shape::Bool => "expected true or false",
        Shape::Int => "expected an integer",
        Shape::Number => "expected a number",
        Shape::Legacy => "unexpected value",
    }
}
