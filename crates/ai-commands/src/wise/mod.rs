//! Read-only Wise: the `wise` command ([`command`]) and native tool ([`tool`]) read the
//! balances, the transactions and the period totals of the Wise balances the operator
//! configured, from the chats the operator allowed, and nothing else. The policy is Wise's
//! own and always applies, whatever toolset is selected: a request from a chat not on
//! `:chats`, or about a balance not on `:profiles`, is refused before the token is read or
//! anything is sent. Only `GET`s are ever made ([`wire`]); amounts stay exact decimals with
//! their currency.

pub(crate) mod command;
pub(crate) mod tool;
pub(crate) mod wire;

use std::path::PathBuf;

use bigdecimal::BigDecimal;
use serde::Deserialize;
use yetibot_command::Caller;
use yetibot_command::ConfigError as Error;
use yetibot_conversation::AdapterKind;
use yetibot_redaction::Secrets;

use crate::services::AiServices;
use wire::{Amount, Statement, WISE};

/// The public Wise API, the default of `:wise :api-url`.
pub const DEFAULT_WISE_API_URL: &str = "https://api.transferwise.com";

/// The most profiles, balances per profile and allowed chats.
pub(crate) const MAX_PROFILES: usize = 8;
pub(crate) const MAX_BALANCES: usize = 32;
pub(crate) const MAX_CHATS: usize = 64;
/// The longest date range, in days (both ends included).
pub(crate) const MAX_RANGE_DAYS: i64 = 366;

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
        let room = caller
            .platform
            .as_ref()
            .and_then(|platform| platform.room_id())
            .unwrap_or(&caller.room);
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
    if let Err(reason) = crate::config::check_api_url(api_url) {
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
                .filter(|c| wire::is_currency(c));
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

/// What to say when `:wise` is not configured.
pub(crate) const NOT_CONFIGURED: &str = "wise needs :yetibot :wise with a :key-file, the \
:profiles and balances it may read, and the :chats it may run in";

/// What to say in a chat that is not allowed.
pub(crate) const NOT_HERE: &str =
    "wise is not allowed in this chat (only in the chats listed under :yetibot :wise :chats)";

/// The account, when configured and `caller` is in an allowed chat.
pub(crate) fn account<'s>(
    services: &'s AiServices,
    caller: &Caller,
) -> Result<&'s WiseAccount, String> {
    let account = services
        .wise
        .as_ref()
        .ok_or_else(|| NOT_CONFIGURED.to_owned())?;
    if account.allows(caller) {
        Ok(account)
    } else {
        Err(NOT_HERE.to_owned())
    }
}

/// A checked date range: ISO dates, `from` not after `to`, at most [`MAX_RANGE_DAYS`].
pub(crate) fn range(from: &str, to: &str) -> Result<(String, String), String> {
    let (from, to) = (from.trim(), to.trim());
    if !crate::args::is_iso_date(from) || !crate::args::is_iso_date(to) {
        return Err("wise: dates are YYYY-MM-DD".to_owned());
    }
    let days = day_number(to) - day_number(from) + 1;
    if days < 1 {
        return Err("wise: the range ends before it starts".to_owned());
    }
    if days > MAX_RANGE_DAYS {
        return Err(format!("wise: a range is at most {MAX_RANGE_DAYS} days"));
    }
    Ok((from.to_owned(), to.to_owned()))
}

/// Days since 1970-01-01 of an ISO date already checked.
fn day_number(date: &str) -> i64 {
    let part =
        |r: std::ops::Range<usize>| date.get(r).and_then(|p| p.parse::<i64>().ok()).unwrap_or(0);
    let (y, m, d) = (part(0..4), part(5..7), part(8..10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A read with the account's token: the token, read now, and the credentials every reply
/// is redacted of.
struct Reader<'a> {
    services: &'a AiServices,
    account: &'a WiseAccount,
    token: yetibot_redaction::Secret,
    secrets: Secrets,
}

impl<'a> Reader<'a> {
    async fn new(services: &'a AiServices, account: &'a WiseAccount) -> Result<Self, String> {
        let token = yetibot_ai_providers::read_key_file(&account.key_file)
            .await
            .ok_or_else(|| {
                "wise: the token file cannot be used (an absolute path to a readable file, not \
                 writable by others, holding one token)"
                    .to_owned()
            })?;
        let secrets = services
            .client
            .secrets()
            .with_extra([&token])
            .map_err(|_| "wise: the credential set cannot be built".to_owned())?;
        Ok(Self {
            services,
            account,
            token,
            secrets,
        })
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, String> {
        let call = yetibot_ai_providers::ServiceCall::get(WISE, url, wire::MAX_REPLY_BYTES)
            .bearer(&self.token);
        self.services
            .client
            .call_service(call)
            .await
            .map_err(|error| {
                let hint = match error.category() {
                    yetibot_ai_providers::Category::HttpStatus
                        if error.to_string().contains("401") =>
                    {
                        " (Wise refused the token: check the file of :wise :key-file)"
                    }
                    yetibot_ai_providers::Category::AccessDenied => {
                        " (the token may lack access to this profile, or Wise may want strong \
                     customer authentication for statements)"
                    }
                    _ => "",
                };
                format!(
                    "wise: {}{hint}",
                    self.secrets.redact_text(&error.to_string())
                )
            })
    }

    /// Every configured balance's amount, in configuration order; a balance Wise did not
    /// list has `None`.
    async fn balances(
        &self,
        chosen: &[&'a BalanceRef],
    ) -> Result<Vec<(&'a BalanceRef, Option<Amount>)>, String> {
        let mut profiles: Vec<u64> = chosen.iter().map(|b| b.profile).collect();
        profiles.dedup();
        let mut found = Vec::new();
        for profile in profiles {
            let reply = self
                .get(&wire::balances_url(&self.account.api_url, profile))
                .await?;
            let listed = wire::balances(&reply).map_err(|reason| format!("wise: {reason}"))?;
            found.extend(listed.into_iter().map(|b| (profile, b)));
        }
        Ok(chosen
            .iter()
            .map(|balance| {
                let amount = found
                    .iter()
                    .find(|(profile, listed)| {
                        *profile == balance.profile && listed.id == balance.id
                    })
                    .map(|(_, listed)| listed.amount.clone())
                    .filter(|amount| amount.currency == balance.currency);
                (*balance, amount)
            })
            .collect())
    }

    async fn statement(
        &self,
        balance: &BalanceRef,
        from: &str,
        to: &str,
    ) -> Result<Statement, String> {
        let url = wire::statement_url(
            &self.account.api_url,
            balance.profile,
            balance.id,
            &balance.currency,
            from,
            to,
        );
        let reply = self.get(&url).await?;
        let mut statement = wire::statement(&reply).map_err(|reason| format!("wise: {reason}"))?;
        for line in &mut statement.transactions {
            line.description = self.secrets.redact_text(&line.description).into_owned();
        }
        Ok(statement)
    }
}

/// The period totals of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) money_in: BigDecimal,
    pub(crate) money_out: BigDecimal,
    pub(crate) count: usize,
}

impl Totals {
    pub(crate) fn of(statement: &Statement) -> Self {
        let zero = BigDecimal::from(0);
        let mut totals = Self {
            money_in: zero.clone(),
            money_out: zero.clone(),
            count: statement.transactions.len(),
        };
        for line in &statement.transactions {
            if line.amount.value >= zero {
                totals.money_in += &line.amount.value;
            } else {
                totals.money_out += &line.amount.value;
            }
        }
        totals
    }

    pub(crate) fn net(&self) -> BigDecimal {
        &self.money_in + &self.money_out
    }
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
        let account = wise_account(&config(vec![chat("slack", "main", "C123")]))
            .unwrap()
            .unwrap();
        assert!(account.allows(&caller(AdapterKind::Slack, "main", "C123", true)));
        assert!(!account.allows(&caller(AdapterKind::Slack, "main", "C123", false)));
        assert!(!account.allows(&caller(AdapterKind::Slack, "other", "C123", true)));
        assert!(!account.allows(&caller(AdapterKind::Discord, "main", "C123", true)));
        assert!(!account.allows(&caller(AdapterKind::Slack, "main", "C1234", true)));
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

    #[test]
    fn ranges_are_iso_ordered_and_bounded() {
        assert!(range("2026-11-01", "2026-11-30").is_ok());
        assert!(range("2026-01-01", "2026-01-01").is_ok());
        assert!(range("2025-01-01", "2025-12-31").is_ok(), "365 days");
        assert!(
            range("2024-01-01", "2024-12-31").is_ok(),
            "366 days in a leap year"
        );
        assert!(range("2024-01-01", "2025-01-01").is_err(), "367 days");
        assert!(range("2026-11-30", "2026-11-01").is_err());
        assert!(range("2026-13-01", "2026-11-01").is_err());
        assert!(range("yesterday", "2026-11-01").is_err());
        assert_eq!(day_number("1970-01-01"), 0);
        assert_eq!(day_number("2000-03-01") - day_number("2000-02-28"), 2);
    }

    #[test]
    fn totals_are_exact() {
        use std::str::FromStr;
        let line = |v: &str| wire::Transaction {
            date: "2026-11-01".into(),
            amount: Amount {
                value: BigDecimal::from_str(v).unwrap(),
                currency: "EUR".into(),
            },
            description: String::new(),
        };
        let statement = Statement {
            transactions: vec![
                line("0.1"),
                line("0.2"),
                line("-0.30"),
                line("1000000000000.01"),
            ],
            start_balance: None,
            end_balance: None,
        };
        let totals = Totals::of(&statement);
        assert_eq!(totals.money_in.to_plain_string(), "1000000000000.31");
        assert_eq!(totals.money_out.to_plain_string(), "-0.30");
        assert_eq!(totals.net().to_plain_string(), "1000000000000.01");
        assert_eq!(totals.count, 4);
    }
}

/// What a `wise` request reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Query {
    /// The current amounts.
    Balances { wanted: Option<String> },
    /// Statement lines, newest first, at most `limit` in all.
    Transactions {
        wanted: Option<String>,
        from: String,
        to: String,
        limit: usize,
    },
    /// Money in, money out, net and count for the range.
    Totals {
        wanted: Option<String>,
        from: String,
        to: String,
    },
}

/// What a read found: one row and one record per line, and whether lines were left out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Report {
    pub(crate) rows: Vec<String>,
    pub(crate) records: Vec<serde_json::Value>,
    pub(crate) truncated: bool,
}

/// Runs `query` for `caller` under Wise's policy: the chat must be allowed and the balance
/// configured, both checked before the token is read or anything is sent.
pub(crate) async fn read(
    services: &AiServices,
    caller: &Caller,
    query: &Query,
) -> Result<Report, String> {
    let account = account(services, caller)?;
    let wanted = match query {
        Query::Balances { wanted }
        | Query::Transactions { wanted, .. }
        | Query::Totals { wanted, .. } => wanted.as_deref(),
    };
    let chosen = account.select(wanted)?;
    if let Query::Transactions { from, to, .. } | Query::Totals { from, to, .. } = query {
        range(from, to)?;
    }
    let reader = Reader::new(services, account).await?;
    let mut report = Report {
        rows: Vec::new(),
        records: Vec::new(),
        truncated: false,
    };
    match query {
        Query::Balances { .. } => {
            for (balance, amount) in reader.balances(&chosen).await? {
                report.rows.push(match &amount {
                    Some(amount) => format!("{}: {}", balance.name, amount.show()),
                    None => format!("{}: not listed by Wise", balance.name),
                });
                report.records.push(serde_json::json!({
                    "balance": balance.name,
                    "id": balance.id,
                    "currency": balance.currency,
                    "amount": amount.map(|a| a.value.to_plain_string()),
                }));
            }
        }
        Query::Transactions {
            from, to, limit, ..
        } => {
            for balance in chosen {
                let statement = reader.statement(balance, from, to).await?;
                for line in statement.transactions {
                    if report.records.len() >= *limit {
                        report.truncated = true;
                        break;
                    }
                    report.rows.push(format!(
                        "{} · {} · {} · {}",
                        line.date,
                        line.amount.show(),
                        if line.description.is_empty() {
                            "(no description)"
                        } else {
                            &line.description
                        },
                        balance.name
                    ));
                    report.records.push(serde_json::json!({
                        "balance": balance.name,
                        "date": line.date,
                        "amount": line.amount.value.to_plain_string(),
                        "currency": line.amount.currency,
                        "description": line.description,
                    }));
                }
            }
        }
        Query::Totals { from, to, .. } => {
            for balance in chosen {
                let statement = reader.statement(balance, from, to).await?;
                let totals = Totals::of(&statement);
                let currency = &balance.currency;
                report.rows.push(format!(
                    "{}: in {} {currency} · out {} {currency} · net {} {currency} · {} transactions",
                    balance.name,
                    totals.money_in.to_plain_string(),
                    totals.money_out.to_plain_string(),
                    totals.net().to_plain_string(),
                    totals.count
                ));
                report.records.push(serde_json::json!({
                    "balance": balance.name,
                    "currency": currency,
                    "from": from,
                    "to": to,
                    "in": totals.money_in.to_plain_string(),
                    "out": totals.money_out.to_plain_string(),
                    "net": totals.net().to_plain_string(),
                    "count": totals.count,
                    "start_balance": statement.start_balance.map(|a| a.value.to_plain_string()),
                    "end_balance": statement.end_balance.map(|a| a.value.to_plain_string()),
                }));
            }
        }
    }
    Ok(report)
}
