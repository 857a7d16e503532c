//! Property tests of redaction at the crate boundary; the one integration-test binary.

mod encode;
mod escaped_secrets;
mod idempotence;
mod percent;
mod stream;
mod untouched_text;
mod valid_json;
