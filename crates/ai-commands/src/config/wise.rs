//! `:yetibot :wise`: the read-only Wise account and its own policy, validated. The token
//! file, the API base, the balances that may be read (each with its profile and currency)
//! and the chats `wise` may run in, matched by the room's platform ID.

use std::path::PathBuf;

use serde::Deserialize;
use yetibot_command::Caller;
use yetibot_command::ConfigError as Error;
use yetibot_conversation::AdapterKind;

/// The public Wise API, the default of `:wise :api-url`.
pub const DEFAULT_WISE_API_URL: &str = "https://api.transferwise.com";

/// The most profiles, balances per profile and allowed chats.
pub(crate) const MAX_PROFILES: usize = 8;
pub(crate) const MAX_BALANCES: usize = 32;
pub(crate) const MAX_CHATS: usize = 64;

/// `:yetibot :wise`, exactly as configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WiseConfig {
    /// Absolute path of the file holding a read-only Wise API token, read per request.
    pub key_file: Option<String>,
    /// The Wise API base (default `https://api.transferwise.com`).
    pub api_url: Option<String>,
    /// The profiles and, in each, the balances that may be read.
    pub profiles: Option<Vec<WiseProfileConfig>>,
    /// The chats `wise` may run in.
    pub chats: Option<Vec<WiseChatConfig>>,
}

/// One profile of `:wise :profiles`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WiseProfileConfig {
    /// Wise's profile ID.
    pub id: Option<u64>,
    /// The balances of the profile that may be read.
    pub balances: Option<Vec<WiseBalanceConfig>>,
}

/// One balance of a profile.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WiseBalanceConfig {
    /// Wise's balance ID.
    pub id: Option<u64>,
    /// Its currency, such as `EUR`.
    pub currency: Option<String>,
    /// A short name to ask for it by (`ops`); the currency and ID otherwise.
    pub name: Option<String>,
}

/// One chat of `:wise :chats`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WiseChatConfig {
    /// `slack`, `discord`, `web` or `cli`.
    pub adapter: Option<String>,
    /// The adapter connection's name (`:yetibot :adapters` key; `web`, `cli` locally).
    pub connection: Option<String>,
    /// The room's platform ID (a Slack or Discord channel ID; `general` in the console).
    pub room: Option<String>,
}

/// One readable balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BalanceRef {
    pub(crate) profile: u64,
    pub(crate) id: u64,
    pub(crate) currency: String,
    pub(crate) name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Chat {
    adapter: AdapterKind,
    connection: String,
    room: String,
}

/// A validated `:wise`: the token file, the API base, the readable balances and the
/// allowed chats.
#[derive(Clone, PartialEq, Eq)]
pub struct WiseAccount {
    api_url: String,
    key_file: PathBuf,
    balances: Vec<BalanceRef>,
    chats: Vec<Chat>,
}

impl std::fmt::Debug for WiseAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WiseAccount")
            .field("api_url", &self.api_url)
            .field("key_file", &"[redacted]")
            .field("balances", &self.balances.len())
            .field("chats", &self.chats.len())
            .finish()
    }
}

impl WiseAccount {
    /// The API base.
    #[must_use]
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The file the token is read from, per request.
    pub(crate) fn key_file(&self) -> &std::path::Path {
        &self.key_file
    }

    /// How many balances may be read and in how many chats.
    #[must_use]
    pub fn scope(&self) -> (usize, usize) {
        (self.balances.len(), self.chats.len())
    }

    /// Whether `caller` is in an allowed chat: a trusted request from that adapter,
    /// connection and room (the platform's own room ID where it has one, which a rename
    /// does not change).
    #[must_use]
    pub fn allows(&self, caller: &Caller) -> bool {
        if !caller.trusted {
            return false;
        }
        let room_id = caller
            .platform
            .as_ref()
            .and_then(|platform| platform.room_id());
        // On the chat platforms only the platform's room ID counts: Slack's room key is a
        // name, which a rename can give to another channel.
        let room = match (caller.adapter, room_id) {
            (_, Some(id)) => id,
            (AdapterKind::Slack | AdapterKind::Discord, None) => return false,
            (_, None) => &caller.room,
        };
        self.chats.iter().any(|chat| {
            chat.adapter == caller.adapter
                && chat.connection == caller.connection
                && chat.room == room
        })
    }

    /// The balances `wanted` names (a balance's name, ID or currency; every balance when
    /// `None`).
    pub(crate) fn select(&self, wanted: Option<&str>) -> Result<Vec<&BalanceRef>, String> {
        let Some(wanted) = wanted.map(str::trim).filter(|w| !w.is_empty()) else {
            return Ok(self.balances.iter().collect());
        };
        let chosen: Vec<&BalanceRef> = self
            .balances
            .iter()
            .filter(|b| {
                b.name.eq_ignore_ascii_case(wanted)
                    || b.id.to_string() == wanted
                    || b.currency.eq_ignore_ascii_case(wanted)
            })
            .collect();
        if chosen.is_empty() {
            Err(format!(
                "wise: no configured balance is called that; the balances are {}",
                self.balances
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        } else {
            Ok(chosen)
        }
    }
}

/// The Wise account, when `:wise` has a `:key-file`.
///
/// # Errors
///
/// Every problem, with paths relative to `:wise`: a key file that is not absolute, an
/// unusable `:api-url`, no or too many profiles, balances or chats, a balance without an ID
/// or a three-letter currency, a repeated balance or name, a chat with an unknown adapter or
/// a blank connection or room. Reasons never quote a value.
pub fn wise_account(config: &WiseConfig) -> Result<Option<WiseAccount>, Vec<Error>> {
    let Some(key_file) = config.key_file.as_deref().map(str::trim) else {
        if config.profiles.is_some() || config.chats.is_some() {
            return Err(vec![Error::new(
                "key-file",
                "is required: the absolute path of a file holding a read-only Wise API token",
            )]);
        }
        return Ok(None);
    };
    let mut errors = Vec::new();
    if !std::path::Path::new(key_file).is_absolute() {
        errors.push(Error::new("key-file", "must be an absolute path"));
    }
    let api_url = config.api_url.as_deref().unwrap_or(DEFAULT_WISE_API_URL);
    if let Err(reason) = super::check_api_url(api_url) {
        errors.push(Error::new("api-url", reason));
    }
    let balances = read_balances(config.profiles.as_deref().unwrap_or_default(), &mut errors);
    let chats = read_chats(config.chats.as_deref().unwrap_or_default(), &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Some(WiseAccount {
        api_url: api_url.trim_end_matches('/').to_owned(),
        key_file: PathBuf::from(key_file),
        balances,
        chats,
    }))
}

fn read_balances(profiles: &[WiseProfileConfig], errors: &mut Vec<Error>) -> Vec<BalanceRef> {
    if profiles.is_empty() || profiles.len() > MAX_PROFILES {
        errors.push(Error::new("profiles", "must list 1 to 8 profiles"));
    }
    let mut out: Vec<BalanceRef> = Vec::new();
    for (p, profile) in profiles.iter().enumerate().take(MAX_PROFILES) {
        let at = |key: &str| format!("profiles[{p}].{key}");
        let Some(profile_id) = profile.id.filter(|id| *id > 0) else {
            errors.push(Error::new(
                at("id"),
                "must be Wise's profile ID, a positive number",
            ));
            continue;
        };
        let balances = profile.balances.as_deref().unwrap_or_default();
        if balances.is_empty() || balances.len() > MAX_BALANCES {
            errors.push(Error::new(at("balances"), "must list 1 to 32 balances"));
        }
        for (b, balance) in balances.iter().enumerate().take(MAX_BALANCES) {
            let at = |key: &str| format!("profiles[{p}].balances[{b}].{key}");
            let id = balance.id.filter(|id| *id > 0);
            let currency = balance
                .currency
                .as_deref()
                .map(str::trim)
                .filter(|c| is_currency(c));
            if id.is_none() {
                errors.push(Error::new(
                    at("id"),
                    "must be Wise's balance ID, a positive number",
                ));
            }
            if currency.is_none() {
                errors.push(Error::new(
                    at("currency"),
                    "must be a three-letter upper-case currency code such as EUR",
                ));
            }
            let name = balance.name.as_deref().map(str::trim);
            if name.is_some_and(|n| {
                n.is_empty()
                    || n.len() > 32
                    || !n
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
            }) {
                errors.push(Error::new(
                    at("name"),
                    "must be 1-32 ASCII letters, digits, '-' or '_'",
                ));
            }
            let (Some(id), Some(currency)) = (id, currency) else {
                continue;
            };
            let name = name.map_or_else(|| format!("{currency}-{id}"), str::to_owned);
            if out
                .iter()
                .any(|known| known.id == id || known.name.eq_ignore_ascii_case(&name))
            {
                errors.push(Error::new(at("id"), "repeats another balance's ID or name"));
                continue;
            }
            out.push(BalanceRef {
                profile: profile_id,
                id,
                currency: currency.to_owned(),
                name,
            });
        }
    }
    out
}

fn read_chats(chats: &[WiseChatConfig], errors: &mut Vec<Error>) -> Vec<Chat> {
    if chats.is_empty() || chats.len() > MAX_CHATS {
        errors.push(Error::new(
            "chats",
            "must list 1 to 64 chats ({:adapter :connection :room}) where wise may run",
        ));
    }
    let mut out = Vec::new();
    for (i, chat) in chats.iter().enumerate().take(MAX_CHATS) {
        let at = |key: &str| format!("chats[{i}].{key}");
        let adapter = match chat.adapter.as_deref().map(str::trim) {
            Some("slack") => Some(AdapterKind::Slack),
            Some("discord") => Some(AdapterKind::Discord),
            Some("web") => Some(AdapterKind::Web),
            Some("cli") => Some(AdapterKind::Cli),
            _ => {
                errors.push(Error::new(
                    at("adapter"),
                    "must be slack, discord, web or cli",
                ));
                None
            }
        };
        let text = |value: Option<&str>, key: &str, errors: &mut Vec<Error>| match value
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.len() <= 200)
        {
            Some(v) => Some(v.to_owned()),
            None => {
                errors.push(Error::new(at(key), "must be 1 to 200 characters"));
                None
            }
        };
        let connection = text(chat.connection.as_deref(), "connection", errors);
        let room = text(chat.room.as_deref(), "room", errors);
        if let (Some(adapter), Some(connection), Some(room)) = (adapter, connection, room) {
            out.push(Chat {
                adapter,
                connection,
                room,
            });
        }
    }
    out
}

/// Whether `text` is a three-letter upper-case currency code.
pub(crate) fn is_currency(text: &str) -> bool {
    text.len() == 3 && text.bytes().all(|b| b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(edn_chats: Vec<WiseChatConfig>) -> WiseConfig {
        WiseConfig {
            key_file: Some("/run/secrets/wise".into()),
            api_url: None,
            profiles: Some(vec![WiseProfileConfig {
                id: Some(42),
                balances: Some(vec![
                    WiseBalanceConfig {
                        id: Some(7),
                        currency: Some("EUR".into()),
                        name: Some("ops".into()),
                    },
                    WiseBalanceConfig {
                        id: Some(8),
                        currency: Some("USD".into()),
                        name: None,
                    },
                ]),
            }]),
            chats: Some(edn_chats),
        }
    }

    fn chat(adapter: &str, connection: &str, room: &str) -> WiseChatConfig {
        WiseChatConfig {
            adapter: Some(adapter.into()),
            connection: Some(connection.into()),
            room: Some(room.into()),
        }
    }

    fn caller(adapter: AdapterKind, connection: &str, room: &str, trusted: bool) -> Caller {
        Caller {
            adapter,
            connection: connection.into(),
            room: room.into(),
            user_id: "U1".into(),
            user_name: "alice".into(),
            trusted,
            message_id: None,
            platform: None,
        }
    }

    #[test]
    fn only_listed_trusted_chats_are_allowed() {
        let account = wise_account(&config(vec![chat("web", "web", "general")]))
            .unwrap()
            .unwrap();
        assert!(account.allows(&caller(AdapterKind::Web, "web", "general", true)));
        assert!(!account.allows(&caller(AdapterKind::Web, "web", "general", false)));
        assert!(!account.allows(&caller(AdapterKind::Web, "other", "general", true)));
        assert!(!account.allows(&caller(AdapterKind::Cli, "web", "general", true)));
        assert!(!account.allows(&caller(AdapterKind::Web, "web", "general2", true)));
    }

    /// A Slack request: rooms are keyed by name, the platform knows the channel's ID.
    struct Slack;

    impl yetibot_command::Platform for Slack {
        fn room_id(&self) -> Option<&str> {
            Some("C123")
        }

        fn react<'a>(
            &'a self,
            _: &'a str,
            _: Option<&'a str>,
        ) -> futures_util::future::BoxFuture<'a, Result<(), yetibot_command::PlatformError>>
        {
            Box::pin(async { Err(yetibot_command::PlatformError::Refused("no")) })
        }
    }

    #[test]
    fn a_room_is_matched_by_its_platform_id_never_by_a_name_that_can_be_reused() {
        let by_id = wise_account(&config(vec![chat("slack", "main", "C123")]))
            .unwrap()
            .unwrap();
        let by_name = wise_account(&config(vec![chat("slack", "main", "#general")]))
            .unwrap()
            .unwrap();
        let mut request = caller(AdapterKind::Slack, "main", "#general", true);
        request.platform = Some(std::sync::Arc::new(Slack));
        assert!(by_id.allows(&request));
        assert!(!by_name.allows(&request));
        // A chat request without the platform's room ID is never admitted.
        let bare = caller(AdapterKind::Slack, "main", "C123", true);
        assert!(!by_id.allows(&bare));
    }

    #[test]
    fn balances_are_chosen_by_name_id_or_currency() {
        let account = wise_account(&config(vec![chat("cli", "cli", "cli")]))
            .unwrap()
            .unwrap();
        let names = |wanted| {
            account
                .select(wanted)
                .map(|b| b.iter().map(|b| b.name.clone()).collect::<Vec<_>>())
        };
        assert_eq!(names(None), Ok(vec!["ops".into(), "USD-8".into()]));
        assert_eq!(names(Some("OPS")), Ok(vec!["ops".into()]));
        assert_eq!(names(Some("8")), Ok(vec!["USD-8".into()]));
        assert_eq!(names(Some("usd")), Ok(vec!["USD-8".into()]));
        assert!(names(Some("9")).is_err());
    }

    #[test]
    fn every_configuration_problem_is_reported() {
        let mut bad = config(vec![chat("irc", " ", "")]);
        bad.key_file = Some("relative/wise".into());
        bad.api_url = Some("http://wise.example".into());
        if let Some(profiles) = bad.profiles.as_mut() {
            profiles[0].balances = Some(vec![
                WiseBalanceConfig {
                    id: Some(7),
                    currency: Some("eur".into()),
                    name: Some("has space".into()),
                },
                WiseBalanceConfig {
                    id: Some(8),
                    currency: Some("USD".into()),
                    name: Some("x".into()),
                },
                WiseBalanceConfig {
                    id: Some(8),
                    currency: Some("USD".into()),
                    name: Some("y".into()),
                },
            ]);
        }
        let keys: Vec<String> = wise_account(&bad)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        for wanted in [
            "key-file",
            "api-url",
            "balances[0].currency",
            "balances[0].name",
            "balances[2].id",
            "chats[0].adapter",
            "chats[0].connection",
            "chats[0].room",
        ] {
            assert!(
                keys.iter().any(|k| k.contains(wanted)),
                "{wanted} in {keys:?}"
            );
        }
        let mut none = config(vec![]);
        none.profiles = None;
        assert!(
            wise_account(&none).is_err(),
            "profiles and chats are required"
        );
        assert_eq!(wise_account(&WiseConfig::default()), Ok(None));
    }
}
