//! yetibot-tool-policy's behaviour at its boundary: a scripted model and a scripted executor drive the
//! loop through every rule, plus access selection and property tests.

mod access;
mod kinds;
mod properties;
mod scripted;
mod tool_loop;
