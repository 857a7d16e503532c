//! Fitting an answer to a platform: one set of admission rules for every adapter, read from
//! the platform's [`Limits`], so that no adapter crops, floods or drops an answer its own way.
//!
//! An answer is admitted whole or not at all. It is measured as a conservative payload:
//! every message split into chunks of [`Limits::chunk_units`] UTF-16 units (never inside a
//! character, so never between the halves of a surrogate pair), at most
//! [`Limits::max_chunks`] chunks, and at most [`Limits::payload_bytes`] UTF-8 bytes with the
//! caption. An answer over either bound is replaced by one fixed overflow notice; its data is
//! never cut to fit. An admitted answer whose text fits the platform's card
//! ([`Limits::card_units`]) is posted as it is; a longer one becomes one readable excerpt plus
//! `answer.md` with the exact original text. A platform whose adapter splits messages itself
//! ([`Limits::adapter_chunks`]) gets each message whole, or that excerpt and file once a
//! message needs more chunks than the adapter posts. Errors are always shown. On platforms
//! without Markdown tables ([`Limits::tables`]) tables become aligned code blocks first, and
//! a table that cannot be aligned faithfully, or whose padding overflows the card, sends the
//! answer the excerpt's way too.

use std::borrow::Cow;

use crate::reply::{Answer, Attachment, Outgoing, Role};
use crate::tables::{TableStyle, align_tables};

/// What a platform accepts, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// UTF-16 units per chunk when the answer's size is accounted for, and per message on
    /// platforms without cards.
    pub chunk_units: usize,
    /// The most chunks one answer may take.
    pub max_chunks: usize,
    /// The most UTF-8 bytes one answer may take, caption included.
    pub payload_bytes: usize,
    /// UTF-16 units of rendered text one card shows, on platforms that post an answer as a
    /// card; longer answers become an excerpt and an attached `answer.md`.
    pub card_units: Option<usize>,
    /// On a platform whose adapter splits long messages itself, at boundaries only it can
    /// judge (Slack, after turning Markdown into its own markup): the most chunks one
    /// message may need. Such a message is handed over whole; one that needs more becomes
    /// an excerpt plus `answer.md`. `None`: messages are split here (or shown as cards).
    pub adapter_chunks: Option<usize>,
    /// How the platform shows Markdown tables.
    pub tables: TableStyle,
    /// Whether the platform shows a live Grok request's completed messages as separate
    /// replies while later tools still run (Discord); elsewhere only the final answer is
    /// posted.
    pub live_replies: bool,
    /// Whether the platform shows an answer's text while the model is still writing it, in
    /// the request's status message, edited as the text grows (the web console). Chat
    /// platforms, where every edit is a rate-limited API call and a notification, show the
    /// finished answer only.
    pub live_text: bool,
}

impl Limits {
    /// Discord: Components V2 cards of 4,000 units, accounted as 2,000-character messages.
    pub const DISCORD: Self = Self {
        chunk_units: 2_000,
        max_chunks: 30,
        payload_bytes: 64 * 1024,
        card_units: Some(4_000),
        adapter_chunks: None,
        tables: TableStyle::FixedWidth,
        live_replies: true,
        live_text: false,
    };

    /// Slack: plain messages of 3,000 characters (Slack shortens longer sections), which
    /// the adapter splits itself; a message of more than 5 is an excerpt plus `answer.md`.
    pub const SLACK: Self = Self {
        chunk_units: 3_000,
        max_chunks: 30,
        payload_bytes: 64 * 1024,
        card_units: None,
        adapter_chunks: Some(5),
        tables: TableStyle::Markdown,
        live_replies: false,
        live_text: false,
    };

    /// The local web console: cards of 16,000 units (a page shows long text comfortably),
    /// and no overflow notice. A page has no message quota, so any answer a command can
    /// produce (the interpreter bounds a value at 1 MiB) is admitted: its start is shown and
    /// the whole of it is `answer.md`. The bounds below only keep the accounting finite.
    pub const WEB: Self = Self {
        chunk_units: 2_000,
        max_chunks: usize::MAX,
        payload_bytes: 16 << 20,
        card_units: Some(16_000),
        adapter_chunks: None,
        tables: TableStyle::Markdown,
        live_replies: false,
        live_text: true,
    };
}

/// The name of the file that carries a long answer's exact text.
pub const ANSWER_FILE: &str = "answer.md";

/// The notice that replaces an answer over the limits.
pub const OVERFLOW_NOTICE: &str = "This answer is too long to post here (over 30 messages or 64 KiB). Ask for less, or select a smaller part (head, random, grep).";

/// The line under an excerpt.
pub const EXCERPT_NOTE: &str = "*The whole answer is attached as answer.md.*";

/// The messages that show `answer` on a platform with these limits, in order. Buttons and
/// the caption go on the last one.
#[must_use]
pub fn fit(answer: &Answer, limits: &Limits) -> Vec<Outgoing> {
    let mut out = if answer.error {
        errors(answer, limits)
    } else if !admitted(answer, limits) {
        let mut notice = Outgoing::text(Role::Answer, OVERFLOW_NOTICE);
        // The caption still helps (which model, what it cost) when it fits beside the notice.
        notice.caption = answer
            .caption
            .clone()
            .filter(|caption| units(OVERFLOW_NOTICE) + units(caption) < limits.chunk_units);
        vec![notice]
    } else {
        admitted_messages(answer, limits)
    };
    // Each file (a generated image) is a message of its own after the text, so that every
    // platform can post it as an upload.
    for file in &answer.files {
        let mut message = Outgoing::text(Role::Answer, "");
        message.attachment = Some(file.clone());
        out.push(message);
    }
    if out.is_empty() {
        return out;
    }
    if let Some(last) = out.last_mut() {
        if !answer.error && last.caption.is_none() && !is_overflow(last) {
            last.caption.clone_from(&answer.caption);
        }
        last.buttons.clone_from(&answer.buttons);
    }
    out
}

fn is_overflow(message: &Outgoing) -> bool {
    message.text == OVERFLOW_NOTICE
}

/// Whether the answer fits the conservative payload: chunk count and bytes.
#[must_use]
pub fn admitted(answer: &Answer, limits: &Limits) -> bool {
    let mut chunks = 0usize;
    let mut bytes = answer.caption.as_ref().map_or(0, String::len);
    for message in &answer.messages {
        bytes = bytes.saturating_add(message.len());
        chunks = chunks.saturating_add(chunk_count(message, limits.chunk_units));
        if bytes > limits.payload_bytes || chunks > limits.max_chunks {
            return false;
        }
    }
    true
}

/// Errors are shown whatever their size: each message cut to one chunk.
fn errors(answer: &Answer, limits: &Limits) -> Vec<Outgoing> {
    answer
        .messages
        .iter()
        .map(|message| {
            let text = chunks(message, limits.chunk_units)
                .into_iter()
                .next()
                .unwrap_or_default();
            Outgoing::text(Role::Answer, text).as_error()
        })
        .collect()
}

fn admitted_messages(answer: &Answer, limits: &Limits) -> Vec<Outgoing> {
    let (media, text): (Vec<&String>, Vec<&String>) =
        answer.messages.iter().partition(|m| is_media_url(m));
    let mut out = Vec::new();
    let shown: Option<Vec<Cow<'_, str>>> = text
        .iter()
        .map(|m| match limits.tables {
            TableStyle::Markdown => Some(Cow::Borrowed(m.as_str())),
            TableStyle::FixedWidth => align_tables(m, limits.card_units.unwrap_or(usize::MAX)).ok(),
        })
        .collect();
    match (limits.card_units, shown) {
        (Some(card), shown)
            if shown
                .as_ref()
                .is_none_or(|shown| shown.iter().any(|m| units(m) > card)) =>
        {
            let whole = text
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            let mut message = Outgoing::text(Role::Answer, excerpt(&whole, card));
            message.attachment = Some(Attachment::text(
                ANSWER_FILE,
                "text/markdown; charset=utf-8",
                whole,
            ));
            out.push(message);
        }
        (Some(_), shown) => out.extend(
            shown
                .unwrap_or_default()
                .iter()
                .map(|m| Outgoing::text(Role::Answer, m.as_ref())),
        ),
        (None, _) if limits.adapter_chunks.is_some() => {
            out.extend(adapter_split(&text, limits));
        }
        (None, shown) => {
            // Without cards an unalignable table stays as the model wrote it.
            let shown =
                shown.unwrap_or_else(|| text.iter().map(|m| Cow::Borrowed(m.as_str())).collect());
            for message in &shown {
                out.extend(
                    chunks(message, limits.chunk_units)
                        .into_iter()
                        .map(|chunk| Outgoing::text(Role::Answer, chunk)),
                );
            }
        }
    }
    for url in media {
        let mut message = Outgoing::text(Role::Answer, "");
        message.media = Some(url.trim().to_owned());
        out.push(message);
    }
    out
}

/// Messages the adapter splits itself: each whole, or all of them as one excerpt plus the
/// exact `answer.md` when one needs more chunks than the adapter posts.
fn adapter_split(text: &[&String], limits: &Limits) -> Vec<Outgoing> {
    let most = limits.adapter_chunks.unwrap_or(usize::MAX);
    if text
        .iter()
        .all(|m| chunk_count(m, limits.chunk_units) <= most)
    {
        return text
            .iter()
            .map(|m| Outgoing::text(Role::Answer, m.as_str()))
            .collect();
    }
    let whole = text
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    // An excerpt of about half a message, so that it and its note fit in one.
    let mut message = Outgoing::text(Role::Answer, excerpt(&whole, limits.chunk_units * 2));
    message.attachment = Some(Attachment::text(
        ANSWER_FILE,
        "text/markdown; charset=utf-8",
        whole,
    ));
    vec![message]
}

/// The UTF-16 length of `text`, the unit Discord and browsers count in.
#[must_use]
pub fn units(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// How many chunks of `max_units` `text` takes ([`chunks`]).
#[must_use]
pub fn chunk_count(text: &str, max_units: usize) -> usize {
    chunks(text, max_units).len().max(1)
}

/// `text` split into pieces of at most `max_units` UTF-16 units, never inside a character
/// (so never between the halves of a surrogate pair). A piece ends after the last line break
/// in its final quarter when there is one, so chunks tend to end at lines. The pieces
/// concatenate to `text`; an empty text gives no pieces.
#[must_use]
pub fn chunks(text: &str, max_units: usize) -> Vec<&str> {
    let max_units = max_units.max(2);
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut used = 0;
        let mut end = rest.len();
        let mut newline_end = None;
        for (index, c) in rest.char_indices() {
            let width = c.len_utf16();
            if used + width > max_units {
                end = index;
                break;
            }
            used += width;
            if c == '\n' && used * 4 >= max_units * 3 {
                newline_end = Some(index + 1);
            }
        }
        if end < rest.len()
            && let Some(line_end) = newline_end
        {
            end = line_end;
        }
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The start of `text` for a card of `card_units`: whole lines up to a quarter of the card
/// (a long first line is cut at a character), an open code fence closed, and the note that
/// the whole answer is attached.
#[must_use]
pub fn excerpt(text: &str, card_units: usize) -> String {
    let budget = (card_units / 4).max(64);
    let mut out = String::new();
    let mut used = 0;
    let mut in_fence = false;
    for line in text.split_inclusive('\n') {
        let width = units(line);
        if used + width > budget {
            if out.is_empty() {
                // One long line: as much of it as fits.
                for c in line.chars() {
                    if used + c.len_utf16() > budget {
                        break;
                    }
                    used += c.len_utf16();
                    out.push(c);
                }
            }
            break;
        }
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        used += width;
        out.push_str(line);
    }
    let mut out = out.trim_end().to_owned();
    if in_fence {
        out.push_str("\n```");
    }
    out.push_str("\n\n…\n\n");
    out.push_str(EXCERPT_NOTE);
    out
}

/// Whether a message is only a direct link to an image, GIF or video, which platforms show
/// as media.
#[must_use]
pub fn is_media_url(text: &str) -> bool {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://"))
        || trimmed.chars().any(char::is_whitespace)
    {
        return false;
    }
    let path = lower.split(['?', '#']).next().unwrap_or_default();
    [
        ".png", ".jpg", ".jpeg", ".gif", ".webp", ".mp4", ".webm", ".mov",
    ]
    .iter()
    .any(|ext| path.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Action;
    use crate::reply::Button;
    use proptest::prelude::*;

    #[test]
    fn files_follow_the_text_as_messages_of_their_own_with_the_buttons_last() {
        let mut with_image = answer(&["a cat"]);
        let image = Attachment {
            name: "gi-1.png".into(),
            media_type: "image/png",
            content: vec![0x89, b'P', b'N', b'G'].into(),
        };
        with_image.files = vec![image.clone()];
        let out = fit(&with_image, &Limits::DISCORD);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].text, "a cat");
        assert!(out[0].buttons.is_empty() && out[0].attachment.is_none());
        assert_eq!(out[1].text, "");
        assert_eq!(out[1].attachment.as_ref(), Some(&image));
        assert_eq!(out[1].buttons.len(), 1);
        assert!(out[1].caption.is_some());
        with_image.error = true;
        let out = fit(&with_image, &Limits::DISCORD);
        assert_eq!(out.last().and_then(|m| m.attachment.as_ref()), Some(&image));
    }

    fn answer(messages: &[&str]) -> Answer {
        Answer {
            files: Vec::new(),
            messages: messages.iter().map(|m| (*m).to_owned()).collect(),
            caption: Some("m1 · 0.4 s · cost n/a".into()),
            error: false,
            buttons: vec![Button {
                action: Action::RunAgain,
                token: "t".into(),
            }],
        }
    }

    #[test]
    fn a_short_answer_is_one_message_with_caption_and_buttons() {
        let out = fit(&answer(&["hello"]), &Limits::DISCORD);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].text, "hello");
        assert_eq!(out[0].caption.as_deref(), Some("m1 · 0.4 s · cost n/a"));
        assert_eq!(out[0].buttons.len(), 1);
        assert!(out[0].attachment.is_none());
    }

    #[test]
    fn a_long_answer_becomes_an_excerpt_and_the_exact_file() {
        let text = format!("# Title\n\n{}", "word ".repeat(1_000));
        let out = fit(&answer(&[&text]), &Limits::DISCORD);
        assert_eq!(out.len(), 1);
        let file = out[0].attachment.as_ref().expect("answer.md");
        assert_eq!(file.name, "answer.md");
        assert_eq!(&*file.content, text.as_bytes());
        assert!(out[0].text.starts_with("# Title"));
        assert!(out[0].text.ends_with(EXCERPT_NOTE));
        assert!(units(&out[0].text) <= 4_000);
        assert!(out[0].caption.is_some());
    }

    #[test]
    fn an_excerpt_closes_an_open_code_fence() {
        let text = format!("```\n{}\n```", "line\n".repeat(2_000));
        let short = excerpt(&text, 4_000);
        assert_eq!(short.matches("```").count(), 2, "{short}");
    }

    #[test]
    fn an_answer_over_the_payload_is_replaced_by_one_notice() {
        // 31 chunks' worth, and separately more than 64 KiB in few chunks of wide text.
        let many = "x".repeat(2_000 * 30 + 1);
        let wide = "€".repeat(22_000); // 66 KB in UTF-8, 22,000 units
        for text in [many, wide] {
            let out = fit(&answer(&[&text]), &Limits::DISCORD);
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].text, OVERFLOW_NOTICE);
            assert!(out[0].attachment.is_none());
            assert_eq!(out[0].buttons.len(), 1);
            assert!(
                out[0].caption.is_some(),
                "the caption fits beside the notice"
            );
        }
    }

    #[test]
    fn the_console_admits_any_answer_as_its_start_and_answer_md() {
        // Over the chat platforms' 64 KiB and 30 messages: the console has no such quota.
        let long = format!(
            "# Report\n\n{}",
            "A long line of the report.\n".repeat(20_000)
        );
        assert!(long.len() > 500_000);
        let out = fit(&answer(&[&long]), &Limits::WEB);
        assert_eq!(out.len(), 1);
        assert_ne!(out[0].text, OVERFLOW_NOTICE);
        assert!(out[0].text.starts_with("# Report"));
        assert!(units(&out[0].text) <= 16_000);
        let file = out[0].attachment.as_ref().expect("answer.md");
        assert_eq!(file.name, ANSWER_FILE);
        assert_eq!(&*file.content, long.as_bytes());
        assert_eq!(
            fit(&answer(&[&long]), &Limits::DISCORD)[0].text,
            OVERFLOW_NOTICE
        );
    }

    #[test]
    fn errors_are_always_shown() {
        let mut error = answer(&[&"e".repeat(100_000)]);
        error.error = true;
        let out = fit(&error, &Limits::DISCORD);
        assert_eq!(out.len(), 1);
        assert!(out[0].error);
        assert_eq!(units(&out[0].text), 2_000);
        assert!(out[0].caption.is_none());
    }

    #[test]
    fn media_urls_are_media_after_the_text() {
        let out = fit(
            &answer(&["https://x.test/a.gif", "two", "https://x.test/b.mp4?x=1"]),
            &Limits::WEB,
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].text, "two");
        assert_eq!(out[1].media.as_deref(), Some("https://x.test/a.gif"));
        assert_eq!(out[2].media.as_deref(), Some("https://x.test/b.mp4?x=1"));
        assert!(out[2].caption.is_some() && out[0].caption.is_none());
        assert!(!is_media_url("https://x.test/a.gif and text"));
        assert!(!is_media_url("ftp://x.test/a.gif"));
    }

    #[test]
    fn platforms_without_cards_get_chunks() {
        let text = format!("{}\n{}", "a".repeat(2_900), "b".repeat(2_000));
        let limits = Limits {
            adapter_chunks: None,
            ..Limits::SLACK
        };
        let out = fit(&answer(&[&text]), &limits);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].text, format!("{}\n", "a".repeat(2_900)));
        assert!(out[1].caption.is_some());
    }

    #[test]
    fn adapters_that_split_get_whole_messages_or_the_file() {
        // Two chunks' worth is handed over whole, for the adapter to split.
        let text = format!("{}\n{}", "a".repeat(2_900), "b".repeat(2_000));
        let out = fit(&answer(&[&text]), &Limits::SLACK);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].text, text);
        assert!(out[0].attachment.is_none() && out[0].caption.is_some());
        // More than five chunks is an excerpt plus the exact file, under the payload bound.
        let long = format!("# Notes\n\n{}", "line of text\n".repeat(1_500));
        let out = fit(&answer(&[&long]), &Limits::SLACK);
        assert_eq!(out.len(), 1);
        let file = out[0].attachment.as_ref().expect("answer.md");
        assert_eq!(
            (
                file.name.as_str(),
                std::str::from_utf8(&file.content).unwrap()
            ),
            (ANSWER_FILE, long.as_str())
        );
        assert!(out[0].text.starts_with("# Notes") && out[0].text.ends_with(EXCERPT_NOTE));
        assert!(units(&out[0].text) <= 3_000);
        assert_eq!(out[0].buttons.len(), 1);
        // Over the payload it is still the one notice.
        let huge = "x".repeat(3_000 * 30 + 1);
        assert_eq!(
            fit(&answer(&[&huge]), &Limits::SLACK)[0].text,
            OVERFLOW_NOTICE
        );
    }

    #[test]
    fn chunks_never_split_a_surrogate_pair() {
        let text = format!("a{}", "😀".repeat(3));
        // 1 + 2 + 2 + 2 units; pieces of 2 units: "a", "😀", "😀", "😀".
        assert_eq!(chunks(&text, 2), ["a", "😀", "😀", "😀"]);
        assert_eq!(chunks(&text, 3), ["a😀", "😀", "😀"]);
        assert!(chunks("", 10).is_empty());
        assert_eq!(chunk_count("", 10), 1);
    }

    #[test]
    fn discord_tables_are_aligned_and_unsafe_or_wide_ones_attached() {
        let table = "| a | b |\n|---|--:|\n| x | 10 |";
        let out = fit(&answer(&[table]), &Limits::DISCORD);
        assert_eq!(out[0].text, "```\na |  b\n--+---\nx | 10\n```");
        assert!(out[0].attachment.is_none());
        // The console renders tables itself.
        assert_eq!(fit(&answer(&[table]), &Limits::WEB)[0].text, table);
        let ragged = "| a |\n|---|\n| x | y |";
        let wide = format!(
            "| {} | b |\n|---|---|\n{}",
            "a".repeat(20),
            "|x|y|\n".repeat(500)
        );
        assert!(units(&wide) <= 4_000, "the Markdown itself fits a card");
        for text in [ragged, wide.as_str()] {
            let out = fit(&answer(&[text]), &Limits::DISCORD);
            assert_eq!(out.len(), 1);
            let file = out[0].attachment.as_ref().expect("answer.md");
            assert_eq!(&*file.content, text.as_bytes(), "the exact original text");
            assert!(out[0].text.ends_with(EXCERPT_NOTE));
        }
    }

    proptest! {
        #[test]
        fn chunks_rejoin_and_respect_the_bound(text in "\\PC{0,300}|[a😀\n]{0,300}", max in 2usize..50) {
            let pieces = chunks(&text, max);
            prop_assert_eq!(pieces.concat(), text.clone());
            for piece in &pieces {
                prop_assert!(!piece.is_empty());
                prop_assert!(units(piece) <= max);
            }
        }

        #[test]
        fn an_admitted_answer_keeps_every_byte(text in "[a-z😀\n ]{0,9000}") {
            let out = fit(&answer(&[&text]), &Limits::DISCORD);
            if admitted(&answer(&[&text]), &Limits::DISCORD) && !text.is_empty() {
                let shown: String = match &out[0].attachment {
                    Some(file) => String::from_utf8(file.content.to_vec()).unwrap(),
                    None => out.iter().map(|m| m.text.as_str()).collect(),
                };
                prop_assert_eq!(shown, text);
            }
        }
    }
}
