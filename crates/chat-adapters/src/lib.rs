#![doc = include_str!("../README.md")]

mod platform;

pub use platform::Platform;
