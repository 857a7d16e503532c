#![doc = include_str!("../README.md")]

pub mod config;
#[cfg(feature = "discord")]
pub mod discord;
mod emoji;
mod event;
mod fit;
mod outbox;
mod platform;
mod reply;
#[cfg(feature = "slack")]
pub mod slack;
mod tables;
#[cfg(feature = "web")]
pub mod web;

pub use emoji::{EmojiError, ReactionEmoji};
pub use event::{Action, Author, Event, EventKind, Place, is_delete_reaction};
pub use fit::{
    ANSWER_FILE, EXCERPT_NOTE, Limits, OVERFLOW_NOTICE, admitted, chunk_count, chunks, excerpt,
    fit, is_media_url, units,
};
pub use outbox::{
    Events, HistoryError, HistoryLimits, HistoryMessage, Incoming, Intake, IntakeError, Outbox,
    Posted, Reservation, SendError, intake,
};
pub use platform::has_verified_users;
pub use reply::{Answer, Attachment, Button, Outgoing, Role, StatusCall, StatusCard};
pub use tables::{TableError, TableStyle, align_tables};
pub use yetibot_conversation::AdapterKind;
