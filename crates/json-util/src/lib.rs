#![doc = include_str!("../README.md")]

mod error;
mod operation;

pub use error::{Error, Result};
pub use operation::Operation;
