//! A fake Wise Platform API for one token and one profile: the balances (`GET
//! /v4/profiles/{profile}/balances`) and balance statements (`GET
//! /v1/profiles/{profile}/balance-statements/{balance}/statement.json`), with amounts
//! written as exact decimals. Mount it with [`Wise::mount`] under a prefix and point `:wise
//! :api-url` there.
//!
//! - Profile [`PROFILE`] has balances 7 (EUR 1234.50), 8 (USD 99.999) and 9 (GBP 5000.00,
//!   which tests leave out of the configuration).
//! - Balance 7's statement holds [`EUR_LINES`]; a statement lists the lines whose dates fall
//!   in `intervalStart`..`intervalEnd`, newest first, with the balances around them.
//! - A wrong token gets `401`; [`Wise::forbidding`] answers `403` and
//!   [`Wise::rate_limited`] `429`. Every error body names [`ERROR_CANARY`], which a caller
//!   must never show. The fake refuses any method but `GET`.

use crate::{Fixture, Recorded, Reply};

/// The profile.
pub const PROFILE: u64 = 42;

/// A marker in every error body.
pub const ERROR_CANARY: &str = "wise-error-canary-19d";

/// Balance 7's statement lines: date, exact amount, description.
pub const EUR_LINES: &[(&str, &str, &str)] = &[
    ("2026-10-30", "-5.00", "Card payment: October coffee"),
    ("2026-11-02", "1000.10", "Invoice 17 paid"),
    ("2026-11-03", "-12.50", "Card payment: Yeti Supplies"),
    ("2026-11-20", "-0.30", "Fee"),
    ("2026-11-28", "0.20", "Cashback"),
    ("2026-12-01", "-99.99", "December rent"),
];

/// The fake's token and mode.
#[derive(Debug, Clone)]
pub struct Wise {
    token: String,
    status: Option<u16>,
}

impl Wise {
    /// A fake that accepts `token`.
    #[must_use]
    pub fn new(token: &str) -> Self {
        Self {
            token: token.to_owned(),
            status: None,
        }
    }

    /// Every request is refused with `403`, as for a token without access.
    #[must_use]
    pub fn forbidding(mut self) -> Self {
        self.status = Some(403);
        self
    }

    /// Every request is refused with `429`.
    #[must_use]
    pub fn rate_limited(mut self) -> Self {
        self.status = Some(429);
        self
    }

    /// Answers the endpoints of profile [`PROFILE`] under `prefix` on `fixture`.
    pub fn mount(&self, fixture: &Fixture, prefix: &str) {
        let fake = self.clone();
        fixture.respond_with(
            &format!("{prefix}/v4/profiles/{PROFILE}/balances"),
            move |request| fake.guarded(request, |_| balances()),
        );
        for balance in [7, 8, 9] {
            let fake = self.clone();
            fixture.respond_with(
                &format!(
                    "{prefix}/v1/profiles/{PROFILE}/balance-statements/{balance}/statement.json"
                ),
                move |request| fake.guarded(request, |request| statement(balance, request)),
            );
        }
    }

    fn guarded(&self, request: &Recorded, answer: impl Fn(&Recorded) -> Reply) -> Reply {
        if request.method != "GET" {
            return error(405);
        }
        let authorized = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            == Some(format!("Bearer {}", self.token).as_str());
        if !authorized {
            return error(401);
        }
        match self.status {
            Some(429) => error(429).header("retry-after", "30"),
            Some(status) => error(status),
            None => answer(request),
        }
    }
}

fn error(status: u16) -> Reply {
    Reply::status_json(
        status,
        format!(r#"{{"error":"refused","message":"{ERROR_CANARY}"}}"#),
    )
}

fn balances() -> Reply {
    Reply::json(
        r#"[{"id":7,"currency":"EUR","type":"STANDARD","name":null,"amount":{"value":1234.50,"currency":"EUR"},"reservedAmount":{"value":0,"currency":"EUR"}},
            {"id":8,"currency":"USD","type":"STANDARD","name":"Travel","amount":{"value":99.999,"currency":"USD"}},
            {"id":9,"currency":"GBP","type":"STANDARD","amount":{"value":5000.00,"currency":"GBP"}}]"#,
    )
}

/// The value of query parameter `name`.
fn query<'r>(request: &'r Recorded, name: &str) -> Option<&'r str> {
    request
        .query
        .as_deref()?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

fn statement(balance: u64, request: &Recorded) -> Reply {
    let (Some(start), Some(end), Some(currency)) = (
        query(request, "intervalStart"),
        query(request, "intervalEnd"),
        query(request, "currency"),
    ) else {
        return error(400);
    };
    let lines: &[(&str, &str, &str)] = if balance == 7 && currency == "EUR" {
        EUR_LINES
    } else {
        &[]
    };
    let (start, end) = (start.get(..10).unwrap_or(""), end.get(..10).unwrap_or(""));
    let mut shown: Vec<String> = lines
        .iter()
        .filter(|(date, _, _)| *date >= start && *date <= end)
        .map(|(date, amount, description)| {
            format!(
                r#"{{"type":"{}","date":"{date}T09:30:00.000Z","amount":{{"value":{amount},"currency":"{currency}"}},"totalFees":{{"value":0,"currency":"{currency}"}},"details":{{"type":"CARD","description":"{description}"}},"runningBalance":{{"value":0,"currency":"{currency}"}},"referenceNumber":"TRX-{date}"}}"#,
                if amount.starts_with('-') { "DEBIT" } else { "CREDIT" }
            )
        })
        .collect();
    shown.reverse();
    Reply::json(format!(
        r#"{{"accountHolder":{{"type":"PERSONAL"}},"transactions":[{}],"startOfStatementBalance":{{"value":100.00,"currency":"{currency}"}},"endOfStatementBalance":{{"value":1087.50,"currency":"{currency}"}},"query":{{"intervalStart":"{start}","intervalEnd":"{end}","currency":"{currency}"}}}}"#,
        shown.join(",")
    ))
}
