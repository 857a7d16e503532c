//! The emoji a Discord reaction may use, as `!react` and the native `react` tool name them:
//! a Unicode emoji, a static `<:name:id>` or animated `<a:name:id>` custom emoji, or the API
//! form `name:id`. A bare `:shortcode:` is refused: Discord has no server-side shortcode
//! lookup, and guessing which emoji a shortcode meant could react with the wrong one.
//!
//! The reading is pure and needs no platform library, so the command layer can check an
//! emoji before it asks the outbox; the Discord outbox reads it again and refuses with the
//! same words.

/// A reaction emoji, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReactionEmoji {
    /// A Unicode emoji, such as `👍`.
    Unicode(String),
    /// A custom emoji of a server.
    Custom {
        /// Its name.
        name: String,
        /// Its ID.
        id: u64,
        /// Whether it is animated.
        animated: bool,
    },
}

/// Why an emoji was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EmojiError {
    /// A bare `:shortcode:`.
    #[error("{}", self.reason())]
    Shortcode,
    /// Anything else that is not an emoji.
    #[error("{}", self.reason())]
    Invalid,
}

/// The longest emoji text accepted.
const MAX_EMOJI_BYTES: usize = 128;

impl ReactionEmoji {
    /// Reads one emoji as a user or a model wrote it.
    ///
    /// # Errors
    ///
    /// [`EmojiError::Shortcode`] for `:name:`, [`EmojiError::Invalid`] for anything else that
    /// is not one of the accepted forms.
    pub fn parse(text: &str) -> Result<Self, EmojiError> {
        let text = text.trim();
        if text.is_empty() || text.len() > MAX_EMOJI_BYTES {
            return Err(EmojiError::Invalid);
        }
        if let Some(inner) = text.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
            let (animated, rest) = match inner.strip_prefix("a:") {
                Some(rest) => (true, rest),
                None => (false, inner.strip_prefix(':').ok_or(EmojiError::Invalid)?),
            };
            return custom(rest, animated);
        }
        if text.len() > 2 && text.starts_with(':') && text.ends_with(':') {
            return Err(EmojiError::Shortcode);
        }
        if text.contains(':') {
            return custom(text, false);
        }
        let unicode = !text.is_ascii()
            && !text
                .chars()
                .any(|c| c.is_ascii_alphanumeric() || c.is_whitespace() || "<>@#&/\\".contains(c));
        if unicode {
            Ok(Self::Unicode(text.to_owned()))
        } else {
            Err(EmojiError::Invalid)
        }
    }

    /// The form [`crate::Outbox::react`] takes: the Unicode emoji, or `name:id`.
    #[must_use]
    pub fn api_form(&self) -> String {
        match self {
            Self::Unicode(text) => text.clone(),
            Self::Custom { name, id, .. } => format!("{name}:{id}"),
        }
    }
}

impl EmojiError {
    /// The refusal as fixed text, for [`crate::SendError::Refused`].
    #[must_use]
    pub fn reason(self) -> &'static str {
        match self {
            Self::Shortcode => {
                "a bare :shortcode: is ambiguous; use the emoji itself, <:name:id> or name:id"
            }
            Self::Invalid => {
                "not an emoji: use a Unicode emoji, <:name:id>, <a:name:id> or name:id"
            }
        }
    }
}

fn custom(text: &str, animated: bool) -> Result<ReactionEmoji, EmojiError> {
    let (name, id) = text.split_once(':').ok_or(EmojiError::Invalid)?;
    let name_ok = (2..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let id: u64 = id
        .parse()
        .ok()
        .filter(|id: &u64| *id > 0)
        .ok_or(EmojiError::Invalid)?;
    if !name_ok || id.to_string() != text.split_once(':').map_or("", |(_, i)| i) {
        return Err(EmojiError::Invalid);
    }
    Ok(ReactionEmoji::Custom {
        name: name.to_owned(),
        id,
        animated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<String, EmojiError> {
        ReactionEmoji::parse(text).map(|e| e.api_form())
    }

    #[test]
    fn every_accepted_form_and_the_refusals() {
        assert_eq!(check("👍"), Ok("👍".into()));
        assert_eq!(check(" ❌ "), Ok("❌".into()));
        assert_eq!(check("👍🏽"), Ok("👍🏽".into()));
        assert_eq!(check("<:party:123>"), Ok("party:123".into()));
        assert_eq!(check("<a:dance:456>"), Ok("dance:456".into()));
        assert_eq!(check("party:123"), Ok("party:123".into()));
        assert_eq!(check(":thumbsup:"), Err(EmojiError::Shortcode));
        for bad in [
            "",
            "thumbsup",
            "<:party>",
            "<:p:123>",
            "party:0",
            "party:12a",
            "party:+12",
            "<b:party:1>",
            "a b",
            "😀 x",
            "<@123>",
            &"😀".repeat(40),
        ] {
            assert_eq!(check(bad), Err(EmojiError::Invalid), "{bad}");
        }
        assert!(matches!(
            ReactionEmoji::parse("<a:dance:456>"),
            Ok(ReactionEmoji::Custom { animated: true, .. })
        ));
    }
}
