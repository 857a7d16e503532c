//! `Secrets`, the immutable set of configured values to redact, and the builder that
//! decides which strings are safe to search for.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::credential;
use crate::error::Result;
use crate::scan::{Matcher, Scan};
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
/// and the set is `Send + Sync`. Values known only during one request, such as a key-file
/// token read for it, join through [`Secrets::with_extra`], which leaves the shared part
/// as it is. `Debug` shows only how many values the set holds.
#[derive(Clone)]
pub struct Secrets {
    base: Arc<Set>,
    extra: Option<Arc<Set>>,
}

impl Secrets {
    /// A set that redacts nothing (sensitive JSON fields are still replaced).
    pub fn empty() -> Self {
        Self {
            base: Arc::new(Set {
                matcher: None,
                added: Box::default(),
                ignored: 0,
            }),
            extra: None,
        }
    }

    /// Starts a set to which values are added one by one.
    pub fn builder() -> SecretsBuilder {
        SecretsBuilder::new()
    }

    /// Builds a set from plain string values, each searched for exactly; see
    /// [`SecretsBuilder::add_str`] for which values are kept.
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

    /// Builds a set from credentials, each added with [`SecretsBuilder::add_credential`], so
    /// that the token of an authorization value such as `Bearer <token>` is redacted too.
    ///
    /// # Errors
    ///
    /// As for [`Secrets::new`].
    pub fn from_secrets<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Result<Self> {
        let mut builder = SecretsBuilder::new();
        for secret in secrets {
            builder.add_credential(secret);
        }
        builder.build()
    }

    /// This set plus `extra` credentials, each added with
    /// [`SecretsBuilder::add_credential`].
    ///
    /// Meant for values known during one request only, such as a key-file token read for
    /// it. The result shares this set's compiled values instead of copying or rebuilding
    /// them, and compiles only the extra values (together with any that an earlier
    /// `with_extra` added) into a second, small matcher, so the cost follows the size of the
    /// extra values. Every redaction function searches both.
    ///
    /// # Errors
    ///
    /// As for [`Secrets::new`], for the extra values.
    pub fn with_extra<'a>(&self, extra: impl IntoIterator<Item = &'a Secret>) -> Result<Self> {
        let mut builder = SecretsBuilder::new();
        if let Some(set) = &self.extra {
            builder.ignored = set.ignored;
            let patterns = set.matcher.iter().flat_map(Matcher::patterns);
            builder.values.extend(
                patterns
                    .zip(set.added.iter().copied())
                    .map(|(pattern, added)| (pattern.to_owned(), added)),
            );
        }
        for secret in extra {
            builder.add_credential(secret);
        }
        if let Some(base) = &self.base.matcher {
            builder.values.retain(|value, _| !base.has(value));
        }
        let set = builder.compile()?;
        let extra = (set.matcher.is_some() || set.ignored > 0).then(|| Arc::new(set));
        Ok(Self {
            base: Arc::clone(&self.base),
            extra,
        })
    }

    /// How many distinct values the set redacts, counting the values added, not the parts
    /// of them it also searches for (see [`SecretsBuilder::add_credential`]).
    pub fn len(&self) -> usize {
        self.sets().map(Set::len).sum()
    }

    /// Whether the set redacts no value at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many added values were dropped as unsafe to search for (too short, or overlapping
    /// the marker), so the caller can warn that they will not be redacted.
    pub fn ignored(&self) -> usize {
        self.sets().map(|set| set.ignored).sum()
    }

    /// Replaces every occurrence of every secret with [`REDACTED`].
    ///
    /// Occurrences are found written plainly, with JSON escapes, with `\uXXXX` escapes,
    /// percent-encoded, in any mix of these, and escaped a second time (JSON inside a JSON
    /// string, or percent-encoding of either). Overlapping and touching occurrences become a
    /// single marker. Replacements always cover whole escape sequences, so a valid JSON
    /// string body stays valid. Text without a secret is returned as it was, without
    /// copying.
    ///
    /// Redacting is idempotent: the result never contains a secret in any of these forms,
    /// so redacting it again changes nothing.
    pub fn redact_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.scan() {
            Some(scan) => scan.redact(text),
            None => Cow::Borrowed(text),
        }
    }

    /// Whether [`Secrets::redact_text`] would change `text`.
    ///
    /// Searches the same forms but stops at the first occurrence, so it is cheap enough to
    /// guard every outgoing message.
    pub fn contains_secret(&self, text: &str) -> bool {
        self.scan().is_some_and(|scan| scan.contains(text))
    }

    /// The search over this set's matchers, or `None` if it has none.
    pub(crate) fn scan(&self) -> Option<Scan<'_>> {
        let base = self.base.matcher.as_ref();
        let extra = self.extra.as_ref().and_then(|set| set.matcher.as_ref());
        match (base, extra) {
            (Some(base), extra) => Some(Scan::new(base, extra)),
            (None, Some(extra)) => Some(Scan::new(extra, None)),
            (None, None) => None,
        }
    }

    fn sets(&self) -> impl Iterator<Item = &Set> {
        std::iter::once(&*self.base).chain(self.extra.as_deref())
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
            .field("len", &self.len())
            .field("ignored", &self.ignored())
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
/// - not containing the marker;
/// - still that long once any edge that could join up with a marker is cut off: a start
///   that is the end of the marker (`]`, `d]`, …, `edacted]`) and an end that is its
///   beginning (`[`, `[r`, …).
///
/// A value with such an edge is searched for both whole and without it. Every occurrence
/// of the value contains the shorter string, which can touch a marker only with characters
/// that are not in it, so a marker written in place of one occurrence can never complete
/// another: a single pass leaves nothing to find, and redaction is idempotent.
/// Duplicates are kept once. `Debug` shows only counts.
#[derive(Default)]
pub struct SecretsBuilder {
    /// Every string to search for, and whether it was added as a value in its own right
    /// rather than derived from one.
    values: BTreeMap<String, bool>,
    ignored: usize,
}

impl SecretsBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a credential, searched for exactly as it is.
    pub fn add(&mut self, secret: &Secret) -> &mut Self {
        self.add_str(secret.expose())
    }

    /// Adds a credential together with the parts of it that a program may pass on alone.
    ///
    /// A value shaped like an HTTP authorization header value, `<scheme> <token>` (a scheme
    /// such as `Bearer`, `Basic`, `Token`, `Bot` or `ApiKey` in any case, one or more spaces,
    /// one token without whitespace), also adds the bare token. For `Basic` it also adds the
    /// base64-decoded `user:password` and the password alone. Parts too short or otherwise
    /// unsafe to search for are skipped without counting in [`Secrets::ignored`], which
    /// counts only the credentials themselves.
    pub fn add_credential(&mut self, secret: &Secret) -> &mut Self {
        self.add(secret);
        for part in credential::parts(secret.expose()) {
            self.insert(&part, false);
        }
        self
    }

    /// Adds a value given as plain text, such as a header value from configuration.
    ///
    /// The value is matched exactly, with no trimming or case folding. Values that break
    /// the rules in the type's documentation are counted in [`Secrets::ignored`] instead.
    pub fn add_str(&mut self, value: &str) -> &mut Self {
        if !self.insert(value, true) {
            self.ignored += 1;
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
        Ok(Secrets {
            base: Arc::new(self.compile()?),
            extra: None,
        })
    }

    /// Keeps `value` (and its core, if that differs) if the rules allow it; `added` says
    /// whether it counts as a value of its own.
    fn insert(&mut self, value: &str, added: bool) -> bool {
        let core = core(value);
        if !searchable(value) || !searchable(core) {
            return false;
        }
        if core != value && !self.values.contains_key(core) {
            self.values.insert(core.to_owned(), false);
        }
        match self.values.get_mut(value) {
            Some(own) => *own |= added,
            None => {
                self.values.insert(value.to_owned(), added);
            }
        }
        true
    }

    fn compile(&self) -> Result<Set> {
        let matcher = if self.values.is_empty() {
            None
        } else {
            Some(Matcher::build(self.values.keys().cloned().collect())?)
        };
        Ok(Set {
            matcher,
            added: self.values.values().copied().collect(),
            ignored: self.ignored,
        })
    }
}

impl fmt::Debug for SecretsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsBuilder")
            .field("len", &self.values.values().filter(|&&added| added).count())
            .field("ignored", &self.ignored)
            .finish()
    }
}

/// Whether a string is long enough and far enough from the marker to search for.
fn searchable(value: &str) -> bool {
    value.len() >= MIN_SECRET_LEN && !REDACTED.contains(value) && !value.contains(REDACTED)
}

/// `value` without any start that could be the end of a marker or end that could be the
/// beginning of one, cut repeatedly until neither is left.
fn core(value: &str) -> &str {
    let mut core = value;
    loop {
        let before = core.len();
        // Longest first, so that `ed]` goes whole rather than as `]`.
        if let Some(len) = (1..REDACTED.len())
            .rev()
            .find(|&len| core.starts_with(&REDACTED[REDACTED.len() - len..]))
        {
            core = &core[len..];
        }
        if let Some(len) = (1..REDACTED.len())
            .rev()
            .find(|&len| core.ends_with(&REDACTED[..len]))
        {
            core = &core[..core.len() - len];
        }
        if core.len() == before {
            return core;
        }
    }
}

/// One compiled part of a [`Secrets`] set.
struct Set {
    matcher: Option<Matcher>,
    /// For each of the matcher's patterns, in its order, whether it was added as a value.
    added: Box<[bool]>,
    ignored: usize,
}

impl Set {
    fn len(&self) -> usize {
        self.added.iter().filter(|&&added| added).count()
    }
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
        // An edge that could join a marker: searched with and without it, or not at all
        // when too little is left.
        check(&["]abcdefgh", "abcdefgh[re"], 2, 0);
        check(&["ed]abcdef", "abcdefg[", "]abcdefg["], 0, 3);
        assert_eq!(core("]]abc[r[redacte"), "abc");
        assert_eq!(core("edacted]x"), "x");
        assert_eq!(core("plain"), "plain");
    }

    #[test]
    fn credential_token_without_its_scheme_is_redacted() {
        // Regression: only one caller added the bare token of a `Bearer` header value, so
        // the sets built elsewhere missed it.
        let header = Secret::new("Bearer sk-0123456789");
        let set = Secrets::builder().add_credential(&header).build().unwrap();
        assert_eq!((set.len(), set.ignored()), (1, 0));
        assert_eq!(set.redact_text("echo: sk-0123456789"), "echo: [redacted]");
        assert_eq!(set.redact_text("Bearer sk-0123456789"), "[redacted]");
        let from = Secrets::from_secrets([&header]).unwrap();
        assert!(from.contains_secret("sk-0123456789"));
        // `add` keeps its exact meaning.
        let exact = Secrets::builder().add(&header).build().unwrap();
        assert!(!exact.contains_secret("sk-0123456789"));
    }

    #[test]
    fn basic_credential_parts_are_redacted() {
        // "Basic" + base64("aladdin:opensesame")
        let header = Secret::new("Basic YWxhZGRpbjpvcGVuc2VzYW1l");
        let set = Secrets::from_secrets([&header]).unwrap();
        assert_eq!(set.len(), 1);
        for text in [
            "aladdin:opensesame",
            "pw=opensesame",
            "YWxhZGRpbjpvcGVuc2VzYW1l",
        ] {
            assert!(set.contains_secret(text), "{text}");
        }
        // Parts too short to search for are skipped without a warning.
        let short = Secret::new("Basic dTpwdw=="); // "u:pw"
        let set = Secrets::from_secrets([&short]).unwrap();
        assert_eq!((set.len(), set.ignored()), (1, 0));
        assert!(set.contains_secret("dTpwdw=="));
    }

    #[test]
    fn per_request_secret_joins_without_rebuilding_the_shared_set() {
        let configured = Secrets::new(["sk-configured-0123"]).unwrap();
        let token = Secret::new("Bearer key-file-token-4567");
        let request = configured.with_extra([&token]).unwrap();
        // The configured part is shared, not copied.
        assert!(Arc::ptr_eq(&configured.base, &request.base));
        assert_eq!((request.len(), request.ignored()), (2, 0));
        let text =
            r#"a sk-configured-0123 b key-file-token-4567 c {"t":"key-file-token-\u0034567"}"#;
        let expected = r#"a [redacted] b [redacted] c {"t":"[redacted]"}"#;
        assert_eq!(request.redact_text(text), expected);
        assert!(request.contains_secret("key-file-token-4567"));
        assert!(!configured.contains_secret("key-file-token-4567"));
        // Extras accumulate; values the shared set has, or too short, add nothing new.
        let more = request
            .with_extra([&Secret::new("sk-configured-0123"), &Secret::new("short")])
            .unwrap();
        assert_eq!((more.len(), more.ignored()), (2, 1));
        assert!(more.contains_secret("key-file-token-4567"));
        // An empty shared set works too.
        let alone = Secrets::empty().with_extra([&token]).unwrap();
        assert_eq!(alone.redact_text("key-file-token-4567"), "[redacted]");
        let nothing = Secrets::empty().with_extra([]).unwrap();
        assert!(nothing.is_empty());
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
