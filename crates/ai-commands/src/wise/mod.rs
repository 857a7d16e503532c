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

use bigdecimal::BigDecimal;
use yetibot_command::Caller;
use yetibot_redaction::Secrets;

use crate::config::wise::{BalanceRef, WiseAccount};

/// The longest date range, in days (both ends included).
pub(crate) const MAX_RANGE_DAYS: i64 = 366;
/// The longest transaction description shown, in characters.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 120;
/// The most balances one statement read covers (one request each).
pub(crate) const MAX_STATEMENTS: usize = 8;
use crate::services::AiServices;
use wire::{Amount, Statement, WISE};

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
        let token = yetibot_ai_providers::read_key_file(account.key_file())
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
        profiles.sort_unstable();
        profiles.dedup();
        let mut found = Vec::new();
        for profile in profiles {
            let reply = self
                .get(&wire::balances_url(self.account.api_url(), profile))
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
            self.account.api_url(),
            balance.profile,
            balance.id,
            &balance.currency,
            from,
            to,
        );
        let reply = self.get(&url).await?;
        let mut statement = wire::statement(&reply).map_err(|reason| format!("wise: {reason}"))?;
        for line in &mut statement.transactions {
            // A line in another currency would make the totals wrong.
            if line.amount.currency != balance.currency {
                return Err(format!(
                    "wise: the statement of {} has a line in another currency",
                    balance.name
                ));
            }
            // Redacted whole, then cut, so no cut can hide part of a credential.
            let redacted = self.secrets.redact_text(&line.description);
            line.description = crate::args::one_line(&redacted, MAX_DESCRIPTION_CHARS);
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
        if chosen.len() > MAX_STATEMENTS {
            return Err(format!(
                "wise: a statement read covers at most {MAX_STATEMENTS} balances; name one"
            ));
        }
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
            let mut lines = Vec::new();
            for balance in chosen {
                let statement = reader.statement(balance, from, to).await?;
                lines.extend(
                    statement
                        .transactions
                        .into_iter()
                        .map(|line| (balance, line)),
                );
            }
            // Newest first across balances (a stable sort keeps each statement's order).
            lines.sort_by(|(_, a), (_, b)| b.date.cmp(&a.date));
            report.truncated = lines.len() > *limit;
            for (balance, line) in lines.into_iter().take(*limit) {
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
