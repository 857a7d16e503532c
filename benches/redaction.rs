//! Throughput of `yetibot-redaction` over 1 MiB of chat-like text with 1, 10 and 100 secrets.
//!
//! `redact_text` runs on text that holds a handful of secrets, plain and escaped;
//! `contains_secret` runs on the same text already redacted, because a clean text is the
//! common case for that guard and the only one where it reads the whole input.
//! `redact_text_urls` adds percent-encoded URLs to the text (and percent-encoded secrets),
//! and `stream` feeds the first text to a `StreamRedactor` in 64-byte chunks, the size of a
//! typical streamed model delta.

use divan::Bencher;
use divan::counter::BytesCount;
use yetibot_redaction::{Secrets, StreamRedactor};

fn main() {
    divan::main();
}

#[divan::bench(args = [1, 10, 100])]
fn redact_text(bencher: Bencher, count: usize) {
    let fixture = Fixture::new(count, false);
    bencher
        .counter(BytesCount::of_str(&fixture.text))
        .bench(|| {
            fixture
                .secrets
                .redact_text(divan::black_box(&fixture.text))
                .len()
        });
}

#[divan::bench(args = [1, 10, 100])]
fn contains_secret(bencher: Bencher, count: usize) {
    let fixture = Fixture::new(count, false);
    let clean = fixture.secrets.redact_text(&fixture.text).into_owned();
    bencher
        .counter(BytesCount::of_str(&clean))
        .bench(|| fixture.secrets.contains_secret(divan::black_box(&clean)));
}

#[divan::bench(args = [1, 10, 100])]
fn redact_text_urls(bencher: Bencher, count: usize) {
    let fixture = Fixture::new(count, true);
    bencher
        .counter(BytesCount::of_str(&fixture.text))
        .bench(|| {
            fixture
                .secrets
                .redact_text(divan::black_box(&fixture.text))
                .len()
        });
}

#[divan::bench(args = [1, 10, 100])]
fn stream(bencher: Bencher, count: usize) {
    let fixture = Fixture::new(count, false);
    let chunks: Vec<&str> = chunks(&fixture.text, 64);
    bencher
        .counter(BytesCount::of_str(&fixture.text))
        .bench(|| {
            let mut stream = StreamRedactor::new(&fixture.secrets);
            let mut published = 0;
            for chunk in &chunks {
                published += stream.push(divan::black_box(chunk)).len();
            }
            published + stream.finish().len()
        });
}

/// `text` cut into pieces of about `size` bytes, at character boundaries.
fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let end = text.ceil_char_boundary((at + size).min(text.len()));
        chunks.push(&text[at..end]);
        at = end;
    }
    chunks
}

/// A secret set and a text that embeds some of its values.
struct Fixture {
    secrets: Secrets,
    text: String,
}

impl Fixture {
    fn new(count: usize, urls: bool) -> Self {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let values: Vec<String> = (0..count)
            .map(|_| {
                let len = 32 + rng.below(9);
                token(&mut rng, len)
            })
            .collect();
        let secrets = Secrets::new(&values).expect("a hundred short tokens always compile");
        let text = text(&mut rng, &values, urls);
        assert!(
            secrets.contains_secret(&text),
            "the fixture must embed secrets"
        );
        Self { secrets, text }
    }
}

const TEXT_LEN: usize = 1 << 20;
const EMBEDDED: usize = 6;

/// Prose and JSON lines, one in forty with escapes, and `EMBEDDED` secrets spread evenly
/// through it in plain, escaped and double-escaped spellings. With `urls`, one line in
/// ten is also a percent-encoded URL, and some secrets are percent-encoded.
fn text(rng: &mut Rng, values: &[String], urls: bool) -> String {
    let mut text = String::with_capacity(TEXT_LEN + 1024);
    let mut embedded = 0;
    while text.len() < TEXT_LEN {
        if text.len() * EMBEDDED / TEXT_LEN >= embedded {
            let value = &values[embedded % values.len()];
            let variant = if urls { embedded } else { embedded % 4 };
            text.push_str(&spell(value, variant));
            embedded += 1;
        }
        if urls && rng.below(10) == 0 {
            let word = WORDS[rng.below(WORDS.len())];
            let user = rng.below(10_000);
            text.push_str(&format!(
                "GET /search?q={word}%20logs%3A%20%22{word}%22&channel=%23general&user=u{user} 200\n"
            ));
        }
        match rng.below(40) {
            0..=24 => {
                text.push_str(&sentence(rng));
                text.push('\n');
            }
            25..=38 => {
                let user = rng.below(10_000);
                let ts = 1_700_000_000 + rng.below(1_000_000);
                let said = sentence(rng);
                text.push_str(&format!(
                    r##"{{"user":"u{user}","channel":"#general","text":"{said}","ts":{ts}}}"##
                ));
                text.push('\n');
            }
            _ => {
                let word = WORDS[rng.below(WORDS.len())];
                text.push_str(&format!(
                    r#"{{"text":"she said \"{word}\"\nthen left","path":"C:\\temp\\{word}.log"}}"#
                ));
                text.push('\n');
            }
        }
    }
    text
}

/// Writes `value` plainly, inside JSON, with a `\u` escape, escaped twice, or with a
/// percent-encoded character in a URL.
fn spell(value: &str, variant: usize) -> String {
    let (head, tail) = value.split_at(value.len() / 2);
    let mid = tail.chars().next().map_or(0, u32::from);
    let rest = &tail[1..];
    match variant % 5 {
        0 => format!("token={value} "),
        1 => format!(r#"{{"api_key_echo":"{value}"}} "#),
        2 => format!(r#"{{"echo":"{head}\u{mid:04x}{rest}"}} "#),
        3 => format!(r#"{{"text":"{{\"inner\":\"{head}\\u{mid:04X}{rest}\"}}"}} "#),
        _ => format!("GET /v1/models?key={head}%{mid:02X}{rest} "),
    }
}

fn sentence(rng: &mut Rng) -> String {
    let words = 8 + rng.below(13);
    let mut sentence = String::new();
    for i in 0..words {
        if i > 0 {
            sentence.push(' ');
        }
        sentence.push_str(WORDS[rng.below(WORDS.len())]);
    }
    sentence.push('.');
    sentence
}

fn token(rng: &mut Rng, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    (0..len)
        .map(|_| char::from(ALPHABET[rng.below(ALPHABET.len())]))
        .collect()
}

const WORDS: &[&str] = &[
    "the", "bot", "replied", "with", "a", "summary", "of", "channel", "deploy", "failed", "again",
    "after", "tests", "passed", "on", "main", "branch", "please", "check", "logs", "server",
    "restart", "config", "weather", "tomorrow", "looks", "sunny", "meeting", "at", "noon",
    "coffee", "release", "notes", "draft", "ready", "review", "thanks", "everyone",
];

/// xorshift64*: deterministic, dependency-free and plenty random for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % bound as u64).expect("the result is below a usize bound")
    }
}
