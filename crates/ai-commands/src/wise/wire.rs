//! The Wise Platform API as `wise` reads it, and nothing else: a profile's balances
//! (`GET /v4/profiles/{profile}/balances?types=STANDARD`) and one balance's statement for a
//! date range (`GET /v1/profiles/{profile}/balance-statements/{balance}/statement.json`,
//! compact, UTC days). Only `GET`s: nothing here can move money. Replies are read with the
//! strict bounded JSON reader, so amounts keep their exact decimal text.

use std::str::FromStr;

use bigdecimal::BigDecimal;
use yetibot_json_util::{Limits, Value};

/// The name Wise requests carry in errors.
pub(crate) const WISE: &str = "Wise";
/// The largest reply read (a long statement).
pub(crate) const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// The longest transaction description read, in characters (it is redacted of credentials
/// before it is cut to what is shown).
pub(crate) const MAX_DESCRIPTION_READ_CHARS: usize = 2_000;

const LIMITS: Limits = Limits {
    max_bytes: MAX_REPLY_BYTES,
    max_depth: 16,
    max_entries: 20_000,
    max_nodes: 1_000_000,
};

/// An amount in one currency, exactly as Wise wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Amount {
    pub(crate) value: BigDecimal,
    pub(crate) currency: String,
}

impl Amount {
    /// `1234.50 EUR`.
    pub(crate) fn show(&self) -> String {
        format!("{} {}", self.value.to_plain_string(), self.currency)
    }
}

/// One balance of the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Balance {
    pub(crate) id: u64,
    pub(crate) amount: Amount,
}

/// One statement line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transaction {
    /// The date, `YYYY-MM-DD` (UTC).
    pub(crate) date: String,
    /// Signed: negative for money out.
    pub(crate) amount: Amount,
    /// Wise's description, on one line and cut.
    pub(crate) description: String,
}

/// A statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Statement {
    /// Newest first, as Wise lists them.
    pub(crate) transactions: Vec<Transaction>,
    pub(crate) start_balance: Option<Amount>,
    pub(crate) end_balance: Option<Amount>,
}

/// The balances URL.
pub(crate) fn balances_url(api_url: &str, profile: u64) -> String {
    format!("{api_url}/v4/profiles/{profile}/balances?types=STANDARD")
}

/// The statement URL for the UTC days `from` to `to`, both included (ISO dates, checked by
/// the caller).
pub(crate) fn statement_url(
    api_url: &str,
    profile: u64,
    balance: u64,
    currency: &str,
    from: &str,
    to: &str,
) -> String {
    format!(
        "{api_url}/v1/profiles/{profile}/balance-statements/{balance}/statement.json\
         ?currency={currency}&intervalStart={from}T00:00:00.000Z\
         &intervalEnd={to}T23:59:59.999Z&type=COMPACT"
    )
}

fn parse(reply: &[u8]) -> Result<Value, &'static str> {
    let text = std::str::from_utf8(reply).map_err(|_| "the reply is not UTF-8")?;
    Value::parse_with_limits(text, &LIMITS).map_err(|_| "the reply is not JSON within bounds")
}

fn amount(value: Option<&Value>) -> Option<Amount> {
    let object = value?.as_object()?;
    let number = match object.get("value")? {
        number @ (Value::Integer(_) | Value::Decimal(_)) => number.to_json(),
        _ => return None,
    };
    let currency = object.get("currency")?.as_str()?;
    if !crate::config::wise::is_currency(currency) {
        return None;
    }
    Some(Amount {
        value: BigDecimal::from_str(&number).ok()?,
        currency: currency.to_owned(),
    })
}

/// The balances of a balances reply; entries not in the documented shape are left out.
pub(crate) fn balances(reply: &[u8]) -> Result<Vec<Balance>, &'static str> {
    let value = parse(reply)?;
    let items = value
        .as_array()
        .ok_or("the reply is not a list of balances")?;
    Ok(items
        .iter()
        .filter_map(|item| {
            let object = item.as_object()?;
            let id = match object.get("id")? {
                Value::Integer(id) => u64::try_from(id.to_i64()?).ok()?,
                _ => return None,
            };
            Some(Balance {
                id,
                amount: amount(object.get("amount"))?,
            })
        })
        .collect())
}

/// The statement of a statement reply.
///
/// # Errors
///
/// A fixed reason when the reply, or any of its lines, is not in the documented shape: a
/// line left out would make totals wrong.
pub(crate) fn statement(reply: &[u8]) -> Result<Statement, &'static str> {
    let value = parse(reply)?;
    let object = value.as_object().ok_or("the reply is not a statement")?;
    let lines = object
        .get("transactions")
        .and_then(Value::as_array)
        .ok_or("the statement has no transactions list")?;
    let transactions = lines
        .iter()
        .map(|line| line_of(line).ok_or("a statement line is not in the documented shape"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Statement {
        transactions,
        start_balance: amount(object.get("startOfStatementBalance")),
        end_balance: amount(object.get("endOfStatementBalance")),
    })
}

/// One statement line: a date, a signed amount and an optional description.
fn line_of(line: &Value) -> Option<Transaction> {
    let line = line.as_object()?;
    let date = line.get("date")?.as_str()?.get(..10)?;
    if !crate::args::is_iso_date(date) {
        return None;
    }
    let description = line
        .get("details")
        .and_then(Value::as_object)
        .and_then(|details| details.get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(Transaction {
        date: date.to_owned(),
        amount: amount(line.get("amount"))?,
        description: crate::args::one_line(description, MAX_DESCRIPTION_READ_CHARS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn urls_name_the_profile_balance_and_whole_utc_days() {
        assert_eq!(
            balances_url("http://127.0.0.1:9", 42),
            "http://127.0.0.1:9/v4/profiles/42/balances?types=STANDARD"
        );
        assert_eq!(
            statement_url(
                "https://api.transferwise.com",
                42,
                7,
                "EUR",
                "2026-11-01",
                "2026-11-30"
            ),
            "https://api.transferwise.com/v1/profiles/42/balance-statements/7/statement.json?currency=EUR&intervalStart=2026-11-01T00:00:00.000Z&intervalEnd=2026-11-30T23:59:59.999Z&type=COMPACT"
        );
    }

    #[test]
    fn amounts_stay_exact() {
        let reply = br#"[{"id":7,"currency":"EUR","amount":{"value":1234567890123.1234567,"currency":"EUR"}},
                         {"id":8,"amount":{"value":"12","currency":"USD"}},
                         {"id":-1,"amount":{"value":1,"currency":"USD"}},
                         {"id":9,"amount":{"value":0.1,"currency":"usd"}}]"#;
        let found = balances(reply).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].amount.show(), "1234567890123.1234567 EUR");
        let reply = br#"{"transactions":[
            {"date":"2026-11-03T10:00:00.000Z","amount":{"value":-12.50,"currency":"EUR"},"details":{"description":"Card\npayment"}}],
            "endOfStatementBalance":{"value":100.10,"currency":"EUR"}}"#;
        let statement = statement(reply).unwrap();
        assert_eq!(statement.transactions.len(), 1);
        assert_eq!(statement.transactions[0].amount.show(), "-12.50 EUR");
        assert_eq!(statement.transactions[0].description, "Card payment");
        assert_eq!(statement.end_balance.unwrap().show(), "100.10 EUR");
        assert!(statement.start_balance.is_none());
        for bad in [
            &b"{}"[..],
            b"nope",
            br#"{"transactions":{}}"#,
            br#"{"transactions":[{"date":"bad","amount":{"value":1,"currency":"EUR"}}]}"#,
            br#"{"transactions":[{"date":"2026-11-03","amount":{"value":"1","currency":"EUR"}}]}"#,
        ] {
            assert!(super::statement(bad).is_err());
        }
    }

    proptest! {
        #[test]
        fn any_reply_is_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = balances(&bytes);
            let _ = statement(&bytes);
        }
    }
}
