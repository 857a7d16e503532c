//! Panic reports that cannot leak: the location, and the message only once it has been
//! redacted, cut short and stripped of control characters.
//!
//! A panic message can quote whatever the panicking code held, such as the first bytes of a
//! provider's stream with an echoed key in them. Rust's default hook prints it as it is, so
//! every binary of the workspace replaces that hook with [`install_panic_hook`].

use std::fmt::Write as _;
use std::io::Write as _;
use std::panic::PanicHookInfo;
use std::sync::OnceLock;

use crate::secrets::Secrets;

/// The most characters of a panic message a report keeps.
pub const MAX_PANIC_MESSAGE_CHARS: usize = 512;

/// One line describing a panic: where it happened and, when `secrets` is given, its message
/// with every secret redacted, at most [`MAX_PANIC_MESSAGE_CHARS`] characters, with control
/// characters escaped so the line cannot be split or recoloured. Without a set (before the
/// configuration is loaded, say) the message is withheld, since nothing says what in it is
/// secret.
#[must_use]
pub fn panic_report(info: &PanicHookInfo<'_>, secrets: Option<&Secrets>) -> String {
    let mut report = String::from("panicked");
    if let Some(location) = info.location() {
        let _ = write!(
            report,
            " at {}:{}:{}",
            location.file(),
            location.line(),
            location.column()
        );
    }
    match (info.payload_as_str(), secrets) {
        (Some(message), Some(secrets)) => {
            report.push_str(": ");
            push_safe(&mut report, &secrets.redact_text(message));
        }
        (Some(_), None) => report.push_str(" (message withheld: no redaction set yet)"),
        (None, _) => {}
    }
    report
}

/// Replaces the process's panic hook with one that writes [`panic_report`] to standard
/// error, redacting with the set in `secrets` once it is set. Call it first thing in
/// `main`, then set the cell when the configuration's secrets are known.
pub fn install_panic_hook(secrets: &'static OnceLock<Secrets>) {
    std::panic::set_hook(Box::new(move |info| {
        let report = panic_report(info, secrets.get());
        let _ = writeln!(std::io::stderr().lock(), "{report}");
    }));
}

/// Appends `text`, cut to the report bound, with control characters written as escapes.
fn push_safe(out: &mut String, text: &str) {
    for (count, c) in text.chars().enumerate() {
        if count == MAX_PANIC_MESSAGE_CHARS {
            out.push('…');
            return;
        }
        if c.is_control() {
            let _ = write!(out, "{}", c.escape_default());
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Runs `body` under a hook that keeps [`panic_report`]'s line, and returns the line.
    fn report_of(secrets: Option<Secrets>, body: impl FnOnce() + std::panic::UnwindSafe) -> String {
        static LOCK: Mutex<()> = Mutex::new(());
        let _serial = LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&seen);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let line = panic_report(info, secrets.as_ref());
            *sink
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = line;
        }));
        let outcome = std::panic::catch_unwind(body);
        std::panic::set_hook(previous);
        assert!(outcome.is_err(), "the body must panic");
        seen.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A panic whose message quoted a payload (here an echoed API key, as the SSE parser's
    /// BOM panic once did) used to reach standard error as it was.
    #[test]
    fn panic_message_with_a_payload_is_redacted() {
        let secrets = Secrets::new(["sk-live-0123456789abcdef"]).expect("set");
        let line = report_of(Some(secrets), || {
            panic!("bad event: {{\"key\":\"sk-live-0123456789abcdef\"}}\n\x1b[2J")
        });
        assert!(line.starts_with("panicked at "), "{line}");
        assert!(line.contains("panic.rs:"), "{line}");
        assert!(!line.contains("sk-live-0123456789abcdef"), "{line}");
        assert!(line.contains("[redacted]"), "{line}");
        assert!(!line.contains('\n') && !line.contains('\x1b'), "{line}");
    }

    #[test]
    fn without_a_set_the_message_is_withheld() {
        let line = report_of(None, || panic!("payload sk-live-0123456789abcdef"));
        assert!(!line.contains("payload"), "{line}");
        assert!(line.contains("withheld"), "{line}");
    }

    #[test]
    fn long_messages_are_cut() {
        let line = report_of(Some(Secrets::empty()), || panic!("{}", "x".repeat(5000)));
        assert!(
            line.chars().count() < MAX_PANIC_MESSAGE_CHARS + 200,
            "{}",
            line.len()
        );
        assert!(line.ends_with('…'));
    }
}
