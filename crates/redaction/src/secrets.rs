//! `Secrets`, the immutable set of configured values to redact, and the builder that
//! decides which values are safe to search for.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::error::Result;
use crate::scan::Matcher;
use crate::secret::{REDACTED, Secret};

/// Values shorter than this many bytes are not redacted.
///
/// A configured value such as `a`, `true` or `8080` would otherwise turn every reply into a
/// wall of markers. Real credentials are far longer than this.
pub const MIN_SECRET_LEN: usize = 8;

/// An immutable set of known secret values, compiled for fast redaction.
///
/// Build it once from everything sensitive in the configuration (provider keys, key-file
/// tokens, MCP header and environment values, host secrets) and share it: cloning is cheap
/// and the set is `Send + Sync`. `Debug` shows only how many values it holds.
#[derive(Clone)]
pub struct Secrets {
    inner: Arc<Inner>,
}

impl Secrets {
    /// A set that redacts nothing (sensitive JSON fields are still replaced).
    pub fn empty() -> Self {
        Self {
            inner: Arc::new(Inner {
                matcher: None,
                len: 0,
                ignored: 0,
            }),
        }
    }

    /// Starts a set to which values are added one by one.
    pub fn builder() -> SecretsBuilder {
        SecretsBuilder::new()
    }

    /// Builds a set from plain string values; see [`SecretsBuilder::add_str`] for which
    /// values are kept.
    ///
    /// # Errors
    ///
    /// [`Error::Build`](crate::Error::Build) if the values cannot be compiled into one
    /// matcher, which takes an enormous set.
    pub fn new<I>(values: I) -> Result<Self>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut builder = SecretsBuilder::new();
        for value in values {
            builder.add_str(value.as_ref());
        }
        builder.build()
    }

    /// Builds a set from [`Secret`]s; see [`SecretsBuilder::add_str`] for which values are
    /// kept.
    ///
    /// # Errors
    ///
    /// As for [`Secrets::new`].
    pub fn from_secrets<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Result<Self> {
        let mut builder = SecretsBuilder::new();
        for secret in secrets {
            builder.add(secret);
        }
        builder.build()
    }

    /// How many distinct values the set redacts.
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Whether the set redacts no value at all.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// How many added values were dropped as unsafe to search for (too short, or overlapping
    /// the marker), so the caller can warn that they will not be redacted.
    pub fn ignored(&self) -> usize {
        self.inner.ignored
    }

    /// Replaces every occurrence of every secret with [`REDACTED`].
    ///
    /// Occurrences are found written plainly, with JSON escapes, with `\uXXXX` escapes, in
    /// any mix of these, and escaped a second time (JSON inside a JSON string). Overlapping
    /// and touching occurrences become a single marker. Replacements always cover whole
    /// escape sequences, so a valid JSON string body stays valid. Text without a secret is
    /// returned as it was, without copying.
    ///
    /// Redacting is idempotent: the result never contains a secret in any of these forms,
    /// so redacting it again changes nothing. To keep that promise cheaply, a contrived text
    /// in which each inserted marker keeps completing a new occurrence (a secret beginning
    /// with `ed]`, followed by many copies of its remainder) is replaced by one marker as a
    /// whole.
    pub fn redact_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.inner.matcher {
            Some(matcher) => matcher.redact(text),
            None => Cow::Borrowed(text),
        }
    }

    /// Whether [`Secrets::redact_text`] would change `text`.
    ///
    /// Searches the same forms but stops at the first occurrence and does not allocate, so
    /// it is cheap enough to guard every outgoing message.
    pub fn contains_secret(&self, text: &str) -> bool {
        self.inner
            .matcher
            .as_ref()
            .is_some_and(|matcher| matcher.contains(text))
    }
}

impl Default for Secrets {
    fn default() -> Self {
        Self::empty()
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("len", &self.inner.len)
            .field("ignored", &self.inner.ignored)
            .finish()
    }
}

/// Collects values for a [`Secrets`] set.
///
/// It keeps a value only if it is safe to search for:
///
/// - at least [`MIN_SECRET_LEN`] bytes long, so short configuration values do not redact
///   ordinary words;
/// - not a piece of the marker `[redacted]` (such as `redacted`), which would match inside
///   every marker already written;
/// - not containing the marker, which the marker itself could help rebuild around a
///   replacement.
///
/// The last two rules are what make redaction idempotent: output that is already redacted
/// never matches again. Duplicates are kept once. `Debug` shows only counts.
#[derive(Default)]
pub struct SecretsBuilder {
    values: BTreeSet<String>,
    ignored: usize,
}

impl SecretsBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a credential.
    pub fn add(&mut self, secret: &Secret) -> &mut Self {
        self.add_str(secret.expose())
    }

    /// Adds a value given as plain text, such as a header value from configuration.
    ///
    /// The value is matched exactly, with no trimming or case folding. Values that break
    /// the rules in the type's documentation are counted in [`Secrets::ignored`] instead.
    pub fn add_str(&mut self, value: &str) -> &mut Self {
        if value.len() < MIN_SECRET_LEN || REDACTED.contains(value) || value.contains(REDACTED) {
            self.ignored += 1;
        } else if !self.values.contains(value) {
            self.values.insert(value.to_owned());
        }
        self
    }

    /// Compiles the collected values into a set.
    ///
    /// # Errors
    ///
    /// [`Error::Build`](crate::Error::Build) if the values cannot be compiled into one
    /// matcher, which takes an enormous set.
    pub fn build(&self) -> Result<Secrets> {
        let patterns: Vec<String> = self.values.iter().cloned().collect();
        let matcher = if patterns.is_empty() {
            None
        } else {
            Some(Matcher::build(&patterns)?)
        };
        Ok(Secrets {
            inner: Arc::new(Inner {
                matcher,
                len: patterns.len(),
                ignored: self.ignored,
            }),
        })
    }
}

impl fmt::Debug for SecretsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsBuilder")
            .field("len", &self.values.len())
            .field("ignored", &self.ignored)
            .finish()
    }
}

struct Inner {
    matcher: Option<Matcher>,
    len: usize,
    ignored: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a set from `values` and checks how many were kept and ignored.
    fn check(values: &[&str], len: usize, ignored: usize) {
        let set = Secrets::new(values).unwrap();
        assert_eq!(
            (set.len(), set.ignored()),
            (len, ignored),
            "values: {values:?}"
        );
        assert_eq!(set.is_empty(), len == 0);
    }

    #[test]
    fn keeps_long_distinct_values() {
        check(&["12345678", "abcdefgh", "abcdefgh"], 2, 0);
        check(&[], 0, 0);
    }

    #[test]
    fn ignores_short_values() {
        check(&["", "a", "true", "1234567"], 0, 4);
        // The rule counts bytes: four two-byte characters are long enough.
        check(&["éééé"], 1, 0);
    }

    #[test]
    fn ignores_values_overlapping_the_marker() {
        check(&["redacted", "[redacted", "redacted]", "[redacted]"], 0, 4);
        check(&["prefix [redacted] suffix"], 0, 1);
        check(&["redacted!"], 1, 0);
    }

    #[test]
    fn builder_accepts_secrets_and_strings() {
        let key = Secret::new("sk-0123456789");
        let set = Secrets::builder()
            .add(&key)
            .add_str("tok-0123456789")
            .add_str("no")
            .build()
            .unwrap();
        assert_eq!((set.len(), set.ignored()), (2, 1));
        assert!(set.contains_secret("x sk-0123456789 y"));
        let from = Secrets::from_secrets([&key]).unwrap();
        assert_eq!(from.len(), 1);
    }

    #[test]
    fn debug_prints_counts_only() {
        let set = Secrets::new(["sk-0123456789", "x"]).unwrap();
        assert_eq!(format!("{set:?}"), "Secrets { len: 1, ignored: 1 }");
        let mut builder = Secrets::builder();
        builder.add_str("sk-0123456789");
        assert_eq!(
            format!("{builder:?}"),
            "SecretsBuilder { len: 1, ignored: 0 }"
        );
    }

    #[test]
    fn empty_set_changes_nothing() {
        let set = Secrets::empty();
        assert!(set.is_empty());
        assert_eq!(set.redact_text("anything at all"), "anything at all");
        assert!(!set.contains_secret("anything at all"));
        assert_eq!(Secrets::default().len(), 0);
    }

    #[test]
    fn shares_across_threads() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<Secrets>();
        let set = Secrets::new(["sk-0123456789"]).unwrap();
        let copy = set.clone();
        let handle = std::thread::spawn(move || copy.redact_text("sk-0123456789").into_owned());
        assert_eq!(handle.join().unwrap(), "[redacted]");
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn large_sets_compile() {
        let values: Vec<String> = (0..3000)
            .map(|i| format!("token-{i:08}-abcdefghijklmnop"))
            .collect();
        let set = Secrets::new(&values).unwrap();
        assert_eq!(set.len(), 3000);
        // Past the DFA budget the set compiles to an NFA, which must find escaped forms too.
        assert_eq!(
            set.redact_text(
                r#"x token-00002999-abcdefghijklmnop {"t":"token-000\u00300001-abcdefghijklmnop"}"#
            ),
            r#"x [redacted] {"t":"[redacted]"}"#
        );
        assert!(set.contains_secret(r"token-00000001-abcdefghijklmno\\u0070"));
    }
}
