#![doc = include_str!("../README.md")]

mod arguments;
mod call;
pub mod collection;
mod credentials;
pub mod edn;
mod error;
pub mod limits;
mod number;
mod operation;
mod operators;
mod order;
mod random;
mod reader;
mod reply;
mod schema;
mod table;
mod value;
mod writer;

pub use call::{Call, execute, preflight};
pub use credentials::{CREDENTIAL_FIELD_NAMES, is_credential_field};
pub use error::{BatchError, Category, Error, Result};
pub use limits::Limits;
pub use number::{Decimal, Integer};
pub use operation::Operation;
pub use random::{RandomSource, SplitMix64};
pub use reply::Reply;
pub use schema::{TOOL_DESCRIPTION, TOOL_NAME, tool_schema};
pub use table::{Constraint, Field, FieldRule, InputShape, OperationSpec};
pub use value::{Object, Value};
