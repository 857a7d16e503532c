//! The chat platforms the bot speaks to: the shared [`AdapterKind`] names them, and this
//! module says what each one guarantees.

use yetibot_conversation::AdapterKind;

/// Whether events from this adapter carry a platform-verified user ID, the only kind of
/// identity that toolset allowlists accept. The local adapters (`web`, `cli`) serve the one
/// configured operator instead.
#[must_use]
pub fn has_verified_users(kind: AdapterKind) -> bool {
    matches!(kind, AdapterKind::Discord | AdapterKind::Slack)
}
