#![doc = include_str!("../README.md")]

mod arguments;
mod call;
mod collection;
mod credentials;
mod error;
mod limits;
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
pub use collection::{
    IntegerRange, exact_sum, jvm_trim, leaves, numeric_order, random_index, select, shuffle_order,
    sort_order, unique_indices, utf16_cmp,
};
pub use credentials::{CREDENTIAL_FIELD_NAMES, is_credential_field};
pub use error::{BatchError, Category, Error, Result};
pub use limits::{
    Limits, MAX_ARGUMENT_CHARS, MAX_COUNT, MAX_DECIMAL_PRECISION, MAX_DECIMAL_SCALE,
    MAX_INPUT_BYTES, MAX_NUMBER_CHARS, MAX_PATH_INDEX, MAX_PATH_SEGMENTS, MAX_RANGE_MAGNITUDE,
    MAX_REPLY_BYTES, MAX_TEXT_FIELD_CHARS, MIN_DECIMAL_SCALE,
};
pub use number::{Decimal, Integer};
pub use operation::Operation;
pub use random::{RandomSource, SplitMix64};
pub use reply::Reply;
pub use schema::{TOOL_DESCRIPTION, TOOL_NAME, tool_schema};
pub use table::{Constraint, Field, FieldRule, InputShape, OperationSpec};
pub use value::{Object, Value};
