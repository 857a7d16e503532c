#![doc = include_str!("../README.md")]

mod bounds;

pub use bounds::Bounds;
