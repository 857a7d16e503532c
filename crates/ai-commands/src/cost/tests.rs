//! Tests of the cost label: every form, every cause of `cost n/a`, rounding at the display
//! boundaries, exact sums, and the rate table.

use proptest::prelude::*;
use yetibot_conversation::{Amount, Usage};

use super::*;

const GEMMA: &str = "@cf/google/gemma-4-26b-a4b-it";

/// Prices made up for these tests only; the built-in table has no xAI prices.
const TEST_RATES: &str = r#"{"models": [
  {"provider": "xai", "model": "test-grok", "checked": "2026-11-01",
   "source": "https://example.test/prices",
   "usd_per_million_tokens": {"input": "2.00", "cached_input": "0.50", "output": "10.00"},
   "prompt_tiers": [{"above_prompt_tokens": 200000,
     "usd_per_million_tokens": {"input": "4.00", "cached_input": "1.00", "output": "20.00"}}]},
  {"provider": "workers-ai", "model": "@cf/test/plain", "checked": "2026-11-01",
   "source": "https://example.test/prices",
   "usd_per_million_tokens": {"input": "1", "output": "3"}}
]}"#;

fn test_rates() -> &'static RateTable {
    static TABLE: OnceLock<RateTable> = OnceLock::new();
    TABLE.get_or_init(|| RateTable::parse(TEST_RATES).expect("the test table parses"))
}

fn amount(text: &str) -> Option<Amount> {
    Some(Amount::parse(text).expect("a test amount"))
}

fn tokens(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        ..Usage::default()
    }
}

fn dollars(text: &str) -> Usage {
    Usage {
        cost_usd: amount(text),
        ..Usage::default()
    }
}

fn ticks(count: u64) -> Usage {
    Usage {
        cost_usd_ticks: Some(count),
        ..Usage::default()
    }
}

fn neurons(text: &str) -> Usage {
    Usage {
        neurons: amount(text),
        ..Usage::default()
    }
}

fn tally(
    source: CostSource,
    rates: &'static RateTable,
    turns: &[(&str, Option<Usage>)],
) -> CostTally {
    let mut tally = CostTally::with_rates(source, rates);
    for (model, usage) in turns {
        tally.add_turn(model, usage.as_ref());
    }
    tally
}

/// The label of `turns` at the built-in prices.
fn check(source: CostSource, turns: &[(&str, Option<Usage>)], expect: &str) {
    let label = tally(source, RateTable::builtin(), turns)
        .label()
        .to_string();
    assert_eq!(label, expect, "{source:?} {turns:?}");
}

/// The label of `turns` at the test prices.
fn check_priced(source: CostSource, turns: &[(&str, Option<Usage>)], expect: &str) {
    let label = tally(source, test_rates(), turns).label().to_string();
    assert_eq!(label, expect, "{source:?} {turns:?}");
}

const ZEN: CostSource = CostSource::Zen {
    verified_free: false,
};
const ZEN_FREE: CostSource = CostSource::Zen {
    verified_free: true,
};

#[test]
fn every_label_form() {
    check(ZEN, &[("m", Some(dollars("0.0038")))], "API $0.0038");
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(37_756_000)))],
        "API $0.0038",
    );
    check_priced(
        CostSource::Xai,
        &[(
            "test-grok",
            Some(Usage {
                cached_input_tokens: Some(400),
                ..tokens(1000, 100)
            }),
        )],
        "tokens est. $0.0024",
    );
    check(
        CostSource::WorkersAi,
        &[(GEMMA, Some(tokens(1_000_000, 100_000)))],
        "tokens est. $0.1300",
    );
    check(
        ZEN_FREE,
        &[("m-free", Some(dollars("0")))],
        "API est. $0.0000",
    );
    check(
        CostSource::WorkersAi,
        &[("@cf/meta/unpriced", Some(neurons("2.78")))],
        "2.78 neurons",
    );
    check(
        CostSource::WorkersAi,
        &[("@cf/meta/unpriced", Some(tokens(18, 96)))],
        "18 input / 96 output tokens",
    );
    check(
        CostSource::Other,
        &[("m", Some(dollars("0.0038")))],
        "cost n/a",
    );
    let text = VisibleText {
        context: &"a".repeat(400),
        answers: &["Hello", "é"],
        opaque_context: false,
    };
    // 400 bytes are 100 input tokens; 5 and 2 bytes are 2 + 1 output tokens:
    // (100 × 2.00 + 3 × 10.00) / 10^6 = 0.00023.
    assert_eq!(
        test_rates().text_estimate("test-grok", &text).to_string(),
        "text est. $0.0002"
    );
}

#[test]
fn tiny_positive_amounts_keep_their_prefix() {
    check(
        ZEN,
        &[("m", Some(dollars("0.00000000001")))],
        "API <$0.0001",
    );
    // Gemma at 18 input and 96 output tokens: (18 × 0.10 + 96 × 0.30) / 10^6 = 0.0000306.
    check(
        CostSource::WorkersAi,
        &[(GEMMA, Some(tokens(18, 96)))],
        "tokens est. <$0.0001",
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(1)))],
        "API <$0.0001",
    );
    let text = VisibleText {
        context: "hi",
        answers: &[],
        opaque_context: false,
    };
    assert_eq!(
        test_rates().text_estimate("test-grok", &text).to_string(),
        "text est. <$0.0001"
    );
}

#[test]
fn dollars_round_half_up_to_four_places_and_never_show_a_positive_zero() {
    for (cost, shown) in [
        ("0.00005", "API <$0.0001"),
        ("0.0000999999", "API <$0.0001"),
        ("0.0001", "API $0.0001"),
        ("0.00014999", "API $0.0001"),
        ("0.00015", "API $0.0002"),
        ("0.00025", "API $0.0003"),
        ("0.0038", "API $0.0038"),
        ("0.00384999", "API $0.0038"),
        ("0.00385", "API $0.0039"),
        ("0.99995", "API $1.0000"),
        ("12.3456789", "API $12.3457"),
        ("1", "API $1.0000"),
        ("123456789.00005", "API $123456789.0001"),
    ] {
        check(ZEN, &[("m", Some(dollars(cost)))], shown);
    }
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(0)))],
        "API $0.0000",
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(1_000_000)))],
        "API $0.0001",
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(999_999)))],
        "API <$0.0001",
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(500_000)))],
        "API <$0.0001",
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(1_500_000)))],
        "API $0.0002",
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(1_499_999)))],
        "API $0.0001",
    );
}

#[test]
fn neurons_round_half_up_to_two_places() {
    let unpriced = "@cf/meta/unpriced";
    for (count, shown) in [
        ("2.78", "2.78 neurons"),
        ("2.775", "2.78 neurons"),
        ("2.7749", "2.77 neurons"),
        ("0.015", "0.02 neurons"),
        ("0.01", "0.01 neurons"),
        ("0.005", "<0.01 neurons"),
        ("0.004", "<0.01 neurons"),
        ("0", "0.00 neurons"),
        ("1234", "1234.00 neurons"),
    ] {
        check(
            CostSource::WorkersAi,
            &[(unpriced, Some(neurons(count)))],
            shown,
        );
    }
    check(
        CostSource::WorkersAi,
        &[
            (unpriced, Some(neurons("1.7"))),
            (unpriced, Some(neurons("11.6"))),
        ],
        "13.30 neurons",
    );
}

#[test]
fn sums_are_exact_over_turns() {
    // Floating point would make 0.1 + 0.2 = 0.30000000000000004 and ten 0.00001s a hair
    // under 0.0001; decimal sums do neither.
    let zen = tally(
        ZEN,
        RateTable::builtin(),
        &[("m", Some(dollars("0.1"))), ("m", Some(dollars("0.2")))],
    );
    match zen.label() {
        CostLabel::ApiReported(total) => assert_eq!(total.exact(), "0.3"),
        other => panic!("expected a reported cost, got {other:?}"),
    }
    let turns: Vec<_> = (0..10).map(|_| ("m", Some(dollars("0.00001")))).collect();
    check(ZEN, &turns, "API $0.0001");

    // Two Workers AI turns: 250 and 500 millionths of a dollar.
    let gemma = tally(
        CostSource::WorkersAi,
        RateTable::builtin(),
        &[
            (GEMMA, Some(tokens(1000, 500))),
            (GEMMA, Some(tokens(2000, 1000))),
        ],
    );
    assert_eq!(gemma.label().to_string(), "tokens est. $0.0008");
    match gemma.label() {
        CostLabel::TokensEstimate(total) => assert_eq!(total.exact(), "0.00075"),
        other => panic!("expected an estimate, got {other:?}"),
    }
    check(
        CostSource::WorkersAi,
        &[
            ("@cf/meta/unpriced", Some(tokens(18, 96))),
            ("@cf/meta/unpriced", Some(tokens(2, 4))),
        ],
        "20 input / 100 output tokens",
    );
}

#[test]
fn xai_ticks_are_summed_as_integers_over_every_turn() {
    let grok = tally(
        CostSource::Xai,
        RateTable::builtin(),
        &[
            ("grok-4.7", Some(ticks(37_756_000))),
            (
                "grok-4.7",
                Some(Usage {
                    x_search_calls: Some(3),
                    ..ticks(318_319_000)
                }),
            ),
            ("grok-4.7", Some(ticks(1))),
        ],
    );
    let label = grok.label();
    assert_eq!(label.to_string(), "API $0.0356");
    match label {
        CostLabel::ApiReported(total) => assert_eq!(total.exact(), "0.0356075001"),
        other => panic!("expected a reported cost, got {other:?}"),
    }
    // Totals past u64 stay exact.
    let huge = tally(
        CostSource::Xai,
        RateTable::builtin(),
        &[
            ("grok-4.7", Some(ticks(u64::MAX))),
            ("grok-4.7", Some(ticks(u64::MAX))),
        ],
    );
    match huge.label() {
        CostLabel::ApiReported(total) => assert_eq!(total.exact(), "3689348814.741910323"),
        other => panic!("expected a reported cost, got {other:?}"),
    }
    // Reported ticks win over an estimate the table could make.
    check_priced(
        CostSource::Xai,
        &[(
            "test-grok",
            Some(Usage {
                cost_usd_ticks: Some(20_000_000),
                cached_input_tokens: Some(0),
                ..tokens(1000, 100)
            }),
        )],
        "API $0.0020",
    );
}

#[test]
fn estimates_apply_cached_input_and_prompt_tiers() {
    let cached = |input, cached, output| Usage {
        cached_input_tokens: Some(cached),
        ..tokens(input, output)
    };
    // (600 × 2.00 + 400 × 0.50 + 100 × 10.00) / 10^6 = 0.0024.
    check_priced(
        CostSource::Xai,
        &[("test-grok", Some(cached(1000, 400, 100)))],
        "tokens est. $0.0024",
    );
    // A prompt of exactly 200,000 tokens is not above the tier: (200,000 × 2 + 1,000 × 10) / 10^6.
    check_priced(
        CostSource::Xai,
        &[("test-grok", Some(cached(200_000, 0, 1000)))],
        "tokens est. $0.4100",
    );
    // One token more is: (200,001 × 4 + 1,000 × 20) / 10^6 = 0.820004.
    check_priced(
        CostSource::Xai,
        &[("test-grok", Some(cached(200_001, 0, 1000)))],
        "tokens est. $0.8200",
    );
    // The tier's cached price applies too: (1 × 4 + 200,000 × 1) / 10^6 = 0.200004.
    check_priced(
        CostSource::Xai,
        &[("test-grok", Some(cached(200_001, 200_000, 0)))],
        "tokens est. $0.2000",
    );
    // Each turn picks its own tier; the sum is 0.0024 + 0.820004.
    check_priced(
        CostSource::Xai,
        &[
            ("test-grok", Some(cached(1000, 400, 100))),
            ("test-grok", Some(cached(200_001, 0, 1000))),
        ],
        "tokens est. $0.8224",
    );
    // Without a cached price, cached tokens are input like any other: (18 × 1 + 96 × 3) / 10^6.
    check_priced(
        CostSource::WorkersAi,
        &[("@cf/test/plain", Some(cached(18, 10, 96)))],
        "tokens est. $0.0003",
    );
}

#[test]
fn every_cause_of_not_available() {
    let na = "cost n/a";
    for source in [
        ZEN,
        ZEN_FREE,
        CostSource::Xai,
        CostSource::WorkersAi,
        CostSource::Other,
    ] {
        check(source, &[], na);
    }
    // Other providers have no applicable accounting, whatever they report.
    check(
        CostSource::Other,
        &[(
            "m",
            Some(Usage {
                cost_usd_ticks: Some(5),
                neurons: amount("1"),
                ..tokens(1, 1)
            }),
        )],
        na,
    );
    // Zen: a turn without usage, a turn without cost, a zero that was not verified free,
    // a cost in another unit.
    check(ZEN, &[("m", None)], na);
    check(ZEN, &[("m", Some(dollars("0.0038"))), ("m", None)], na);
    check(
        ZEN,
        &[("m", Some(dollars("0.0038"))), ("m", Some(tokens(5, 5)))],
        na,
    );
    check(ZEN, &[("m", Some(dollars("0")))], na);
    check(ZEN, &[("m", Some(ticks(37_756_000)))], na);
    check(ZEN_FREE, &[("m", Some(dollars("0.0038"))), ("m", None)], na);
    // xAI: a turn without usage, mixed reported and estimated turns, dollars instead of
    // ticks, tokens for a model the table does not price (the built-in table prices no Grok).
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(ticks(37_756_000))), ("grok-4.7", None)],
        na,
    );
    check_priced(
        CostSource::Xai,
        &[
            ("test-grok", Some(ticks(37_756_000))),
            (
                "test-grok",
                Some(Usage {
                    cached_input_tokens: Some(0),
                    ..tokens(10, 10)
                }),
            ),
        ],
        na,
    );
    check(
        CostSource::Xai,
        &[("grok-4.7", Some(dollars("0.0038")))],
        na,
    );
    check(
        CostSource::Xai,
        &[(
            "grok-4.7",
            Some(Usage {
                cached_input_tokens: Some(0),
                ..tokens(10, 10)
            }),
        )],
        na,
    );
    // An estimate that needs a cached count the turn did not report, or one larger than the
    // input, or an unpriced model on one of the turns.
    check_priced(
        CostSource::Xai,
        &[("test-grok", Some(tokens(1000, 100)))],
        na,
    );
    check_priced(
        CostSource::Xai,
        &[(
            "test-grok",
            Some(Usage {
                cached_input_tokens: Some(1001),
                ..tokens(1000, 100)
            }),
        )],
        na,
    );
    check_priced(
        CostSource::Xai,
        &[
            (
                "test-grok",
                Some(Usage {
                    cached_input_tokens: Some(0),
                    ..tokens(10, 10)
                }),
            ),
            (
                "grok-other",
                Some(Usage {
                    cached_input_tokens: Some(0),
                    ..tokens(10, 10)
                }),
            ),
        ],
        na,
    );
    // Workers AI: nothing reported, half the counts, counts on only some turns, a total too
    // large to count.
    check(CostSource::WorkersAi, &[(GEMMA, None)], na);
    check(
        CostSource::WorkersAi,
        &[(GEMMA, Some(Usage::default()))],
        na,
    );
    check(
        CostSource::WorkersAi,
        &[(
            GEMMA,
            Some(Usage {
                input_tokens: Some(18),
                ..Usage::default()
            }),
        )],
        na,
    );
    check(
        CostSource::WorkersAi,
        &[
            ("@cf/meta/unpriced", Some(tokens(18, 96))),
            ("@cf/meta/unpriced", None),
        ],
        na,
    );
    check(
        CostSource::WorkersAi,
        &[
            ("@cf/meta/unpriced", Some(neurons("2.78"))),
            ("@cf/meta/unpriced", Some(Usage::default())),
        ],
        na,
    );
    check(
        CostSource::WorkersAi,
        &[
            ("@cf/meta/unpriced", Some(tokens(u64::MAX, 1))),
            ("@cf/meta/unpriced", Some(tokens(1, 1))),
        ],
        na,
    );
    // Visible-text estimates: an opaque context, or a model without prices.
    let opaque = VisibleText {
        context: "look at this",
        answers: &["ok"],
        opaque_context: true,
    };
    assert_eq!(
        test_rates().text_estimate("test-grok", &opaque),
        CostLabel::NotAvailable
    );
    let plain = VisibleText {
        opaque_context: false,
        ..opaque
    };
    assert_eq!(
        test_rates().text_estimate("grok-other", &plain),
        CostLabel::NotAvailable
    );
    assert_eq!(
        CostLabel::text_estimate("grok-4.7", &plain),
        CostLabel::NotAvailable
    );
}

#[test]
fn verified_free_zen_shows_a_verified_zero_unless_it_was_charged() {
    check(
        ZEN_FREE,
        &[
            ("m-free", Some(dollars("0"))),
            ("m-free", Some(dollars("0"))),
        ],
        "API est. $0.0000",
    );
    // The zero comes from the fresh price check, so missing usage does not undo it.
    check(ZEN_FREE, &[("m-free", None)], "API est. $0.0000");
    check(
        ZEN_FREE,
        &[("m-free", Some(tokens(18, 96)))],
        "API est. $0.0000",
    );
    // A charge Zen reports on every turn is what it cost.
    check(
        ZEN_FREE,
        &[
            ("m-free", Some(dollars("0.0001"))),
            ("m-free", Some(dollars("0"))),
        ],
        "API $0.0001",
    );
}

#[test]
fn workers_ai_prefers_prices_then_neurons_then_tokens() {
    let full = Usage {
        neurons: amount("2.78"),
        ..tokens(1_000_000, 100_000)
    };
    check(
        CostSource::WorkersAi,
        &[(GEMMA, Some(full))],
        "tokens est. $0.1300",
    );
    check(
        CostSource::WorkersAi,
        &[("@cf/meta/unpriced", Some(full))],
        "2.78 neurons",
    );
    // A priced model with a turn lacking counts falls back to the neurons every turn has.
    check(
        CostSource::WorkersAi,
        &[(GEMMA, Some(full)), (GEMMA, Some(neurons("1")))],
        "3.78 neurons",
    );
}

#[test]
fn the_built_in_rate_table_parses_and_is_dated() {
    let table = RateTable::parse(RATES_JSON).expect("rates.json parses");
    let gemma = table
        .get(RateProvider::WorkersAi, GEMMA)
        .expect("Gemma is priced");
    assert_eq!(gemma.checked(), "2026-11-01");
    assert!(
        gemma
            .source()
            .starts_with("https://developers.cloudflare.com/")
    );
    assert_eq!(gemma.model(), GEMMA);
    assert_eq!(gemma.provider(), RateProvider::WorkersAi);
    assert!(table.models().all(|m| is_date(m.checked())));
    // The spec names Grok 4.7 rates without giving them: no xAI price is in the table.
    assert!(table.models().all(|m| m.provider() != RateProvider::Xai));
    assert_eq!(
        RateTable::builtin().models().count(),
        table.models().count()
    );
    // A table that does not parse prices nothing rather than failing a reply.
    assert_eq!(parse_or_empty("{").models().count(), 0);
    assert_eq!(
        parse_or_empty(RATES_JSON).models().count(),
        table.models().count()
    );
}

#[test]
fn malformed_rate_tables_are_refused_with_the_model_named() {
    let entry = |prices: &str, extra: &str| {
        format!(
            r#"{{"models": [{{"provider": "xai", "model": "m1", "checked": "2026-11-01",
            "source": "https://example.test/", "usd_per_million_tokens": {prices}{extra}}}]}}"#
        )
    };
    let ok = r#"{"input": "1", "output": "2"}"#;
    assert!(RateTable::parse(&entry(ok, "")).is_ok());
    let refused = |json: &str| RateTable::parse(json).expect_err("refused");
    assert!(matches!(refused("not json"), RateTableError::Shape(_)));
    assert!(matches!(
        refused(r#"{"models": [], "extra": 1}"#),
        RateTableError::Shape(_)
    ));
    assert!(matches!(
        refused(&entry(ok, r#", "cost": 1"#)),
        RateTableError::Shape(_)
    ));
    assert!(matches!(
        refused(&entry(r#"{"input": 1, "output": "2"}"#, "")),
        RateTableError::Shape(_)
    ));
    assert!(matches!(
        refused(&entry(ok, "").replace("\"xai\"", "\"openai\"")),
        RateTableError::Shape(_)
    ));
    for prices in [
        r#"{"input": "-0.10", "output": "2"}"#,
        r#"{"input": "0.10 USD", "output": "2"}"#,
        r#"{"input": "1", "output": "NaN"}"#,
        r#"{"input": "1", "output": "2", "cached_input": ""}"#,
    ] {
        let error = refused(&entry(prices, ""));
        assert!(
            matches!(&error, RateTableError::Price { model } if model == "m1"),
            "{prices}"
        );
        assert!(
            !error.to_string().contains("0.10"),
            "no price in the message"
        );
    }
    for date in [
        "2026-13-01",
        "2026-11-32",
        "01-11-2026",
        "2026-11-1",
        "2026/11/01",
        "",
    ] {
        let json = entry(ok, "").replace("2026-11-01", date);
        assert!(
            matches!(refused(&json), RateTableError::Date { .. }),
            "{date:?}"
        );
    }
    for source in ["http://example.test/", "https://", "example.test"] {
        let json = entry(ok, "").replace("https://example.test/", source);
        assert!(
            matches!(refused(&json), RateTableError::Source { .. }),
            "{source}"
        );
    }
    let tier = |above: u64| {
        format!(r#"{{"above_prompt_tokens": {above}, "usd_per_million_tokens": {ok}}}"#)
    };
    for tiers in [
        tier(0),
        format!("{}, {}", tier(200_000), tier(200_000)),
        format!("{}, {}", tier(5), tier(4)),
    ] {
        let json = entry(ok, &format!(r#", "prompt_tiers": [{tiers}]"#));
        assert!(
            matches!(refused(&json), RateTableError::Tiers { .. }),
            "{tiers}"
        );
    }
    let twice = r#"{"models": [
      {"provider": "xai", "model": "m1", "checked": "2026-11-01", "source": "https://e.test/",
       "usd_per_million_tokens": {"input": "1", "output": "2"}},
      {"provider": "xai", "model": "m1", "checked": "2026-11-01", "source": "https://e.test/",
       "usd_per_million_tokens": {"input": "1", "output": "2"}}]}"#;
    assert!(matches!(refused(twice), RateTableError::Duplicate { .. }));
    let blank = entry(ok, "").replace("\"m1\"", "\" \"");
    assert!(matches!(refused(&blank), RateTableError::BlankModel));
    // The same model at another provider is a different entry.
    let both = twice.replacen("\"xai\"", "\"workers-ai\"", 1);
    assert_eq!(RateTable::parse(&both).expect("parses").models().count(), 2);
}

fn any_usage() -> impl Strategy<Value = Option<Usage>> {
    let count = proptest::option::of(any::<u64>());
    let small = proptest::option::of(0u64..1_000_000);
    let decimal = proptest::option::of(
        (any::<u32>(), 0u16..12)
            .prop_map(|(u, s)| Amount::new(u64::from(u), s).unwrap_or(Amount::ZERO)),
    );
    proptest::option::of(
        (
            small.clone(),
            small.clone(),
            small,
            decimal.clone(),
            count,
            decimal,
        )
            .prop_map(|(input, cached, output, cost_usd, ticks, neurons)| Usage {
                input_tokens: input,
                cached_input_tokens: cached,
                output_tokens: output,
                cost_usd,
                cost_usd_ticks: ticks,
                neurons,
                ..Usage::default()
            }),
    )
}

fn any_source() -> impl Strategy<Value = CostSource> {
    prop_oneof![
        Just(ZEN),
        Just(ZEN_FREE),
        Just(CostSource::Xai),
        Just(CostSource::WorkersAi),
        Just(CostSource::Other),
    ]
}

proptest! {
    #[test]
    fn any_turns_give_a_label_and_a_missing_turn_gives_not_available(
        source in any_source(),
        turns in proptest::collection::vec(any_usage(), 0..8),
    ) {
        let models = ["test-grok", "@cf/test/plain", GEMMA, "other"];
        let mut tally = CostTally::with_rates(source, test_rates());
        for (i, usage) in turns.iter().enumerate() {
            tally.add_turn(models[i % models.len()], usage.as_ref());
        }
        let label = tally.label();
        let shown = label.to_string();
        prop_assert!(!shown.is_empty());
        if turns.iter().any(Option::is_none) && source != ZEN_FREE {
            prop_assert_eq!(label, CostLabel::NotAvailable);
        }
    }

    #[test]
    fn summed_ticks_are_exact(counts in proptest::collection::vec(any::<u64>(), 1..20)) {
        let turns: Vec<_> = counts.iter().map(|&c| ("grok-4.7", Some(ticks(c)))).collect();
        let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
        let expect = plain(&BigDecimal::new(BigInt::from(total), TICK_PLACES));
        match tally(CostSource::Xai, RateTable::builtin(), &turns).label() {
            CostLabel::ApiReported(dollars) => prop_assert_eq!(dollars.exact(), expect),
            other => prop_assert!(false, "expected a reported cost, got {:?}", other),
        }
    }

    #[test]
    fn a_positive_cost_never_shows_as_zero(units in 1u64..u64::MAX, scale in 0u16..30) {
        let cost = Amount::new(units, scale).expect("in range");
        let turn = Usage { cost_usd: Some(cost), ..Usage::default() };
        let shown = tally(ZEN, RateTable::builtin(), &[("m", Some(turn))]).label().to_string();
        prop_assert_ne!(shown.as_str(), "API $0.0000");
        prop_assert!(shown.starts_with("API $") || shown == "API <$0.0001", "{}", shown);
    }

    #[test]
    fn text_estimates_never_panic(context in ".{0,200}", answers in proptest::collection::vec(".{0,50}", 0..4), opaque in any::<bool>()) {
        let answers: Vec<&str> = answers.iter().map(String::as_str).collect();
        let text = VisibleText { context: &context, answers: &answers, opaque_context: opaque };
        let label = test_rates().text_estimate("test-grok", &text);
        prop_assert_eq!(opaque, label == CostLabel::NotAvailable);
    }
}
