#![doc = include_str!("../README.md")]

mod platform;

pub use platform::has_verified_users;
pub use yetibot_conversation::AdapterKind;
