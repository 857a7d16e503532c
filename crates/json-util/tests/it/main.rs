//! Integration tests of the yetibot-json-util crate: the data-driven case file, properties over
//! random values, and the agreement between the schema and the validator.

mod cases;
mod properties;
mod schema;
mod support;
