//! Calls and their two entry points: the pure whole-batch `preflight` and `execute`, which
//! runs one call and answers with a bounded, redacted [`Reply`].

use std::fmt;

use yetibot_redaction::Secrets;

use crate::arguments;
use crate::collection::{random_index, select, shuffle_order};
use crate::credentials;
use crate::error::{BatchError, Error, Result};
use crate::limits::{Limits, MAX_REPLY_BYTES};
use crate::operators::Plan;
use crate::random::RandomSource;
use crate::reply::Reply;
use crate::value::Value;
use crate::writer::write_value;

/// One tool call: the arguments object exactly as the model sent it.
///
/// Nothing is checked when a call is made; [`preflight`] and [`execute`] check everything.
/// `Debug` shows only the length of the arguments, never their content.
#[derive(Clone, PartialEq, Eq)]
pub struct Call {
    arguments: String,
}

impl Call {
    /// A call from the arguments' JSON text.
    #[must_use]
    pub fn new(arguments: impl Into<String>) -> Self {
        Self {
            arguments: arguments.into(),
        }
    }

    /// A call from arguments a host has already parsed.
    ///
    /// The value is serialized back to text and read by the strict reader like any other
    /// call. A parser that silently merged duplicate keys has already lost them, so prefer
    /// [`Call::new`] with the original text when it is available.
    #[must_use]
    pub fn from_value(arguments: &serde_json::Value) -> Self {
        Self::new(arguments.to_string())
    }

    /// The arguments text.
    #[must_use]
    pub fn arguments(&self) -> &str {
        &self.arguments
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("bytes", &self.arguments.len())
            .finish()
    }
}

/// Checks a whole batch before any call of it runs.
///
/// For every call this checks the arguments (operation, field names, types and bounds),
/// reads `input_json` within the bounds, applies the credential rules, checks the input's
/// shape and computes every deterministic result, redacting and bounding it exactly as
/// [`execute`] will. `random` checks the reply for every member it could pick, without
/// drawing; `shuffle` checks the unchanged array, whose reply has the same size as any
/// permutation's. The function is pure: it draws no randomness and has no effects.
///
/// # Errors
///
/// The first failing call's position and [`Error`].
pub fn preflight(calls: &[Call], secrets: &Secrets) -> std::result::Result<(), BatchError> {
    for (index, call) in calls.iter().enumerate() {
        check(call, secrets).map_err(|error| BatchError::new(index, error))?;
    }
    Ok(())
}

/// Runs one call and answers with its reply.
///
/// The call goes through every check of [`preflight`] again first, so a call that passed
/// preflight cannot fail here, and a call that was never preflighted is still refused when
/// any of its possible results would be. Only then does `random` or `shuffle` draw from
/// `random`.
pub fn execute(call: &Call, random: &mut dyn RandomSource, secrets: &Secrets) -> Reply {
    match run(call, random, secrets) {
        Ok(json) => Reply::success(json),
        Err(error) => Reply::failure(error),
    }
}

fn check(call: &Call, secrets: &Secrets) -> Result<()> {
    let plan = plan(call, secrets)?;
    check_plan(&plan, secrets)
}

fn run(call: &Call, random: &mut dyn RandomSource, secrets: &Secrets) -> Result<String> {
    match plan(call, secrets)? {
        // Finishing a fixed result is exactly the check preflight makes.
        Plan::Fixed(value) => finish(value, secrets),
        Plan::OneOf(mut members) => {
            check_candidates(&members, secrets)?;
            match random_index(members.len(), random) {
                Some(chosen) => finish(members.swap_remove(chosen), secrets),
                None => finish(Value::Null, secrets),
            }
        }
        Plan::Permute(members) => {
            // Fisher–Yates: every permutation is equally likely with a uniform source.
            let order = shuffle_order(members.len(), random);
            finish(Value::Array(select(members, &order)), secrets)
        }
    }
}

fn plan(call: &Call, secrets: &Secrets) -> Result<Plan> {
    let request = arguments::read(&call.arguments, secrets)?;
    request
        .operation
        .spec()
        .plan(request.input, &request.options)
}

/// Checks every reply the plan could produce.
fn check_plan(plan: &Plan, secrets: &Secrets) -> Result<()> {
    match plan {
        Plan::Fixed(value) => finish(value.clone(), secrets).map(drop),
        Plan::OneOf(members) => check_candidates(members, secrets),
        Plan::Permute(members) => finish(Value::Array(members.clone()), secrets).map(drop),
    }
}

/// Checks the reply for every member `random` could pick, or for null when it has none.
fn check_candidates(members: &[Value], secrets: &Secrets) -> Result<()> {
    if members.is_empty() {
        return finish(Value::Null, secrets).map(drop);
    }
    members
        .iter()
        .try_for_each(|member| finish(member.clone(), secrets).map(drop))
}

/// Redacts a result, checks it against the bounds and serializes the success reply.
fn finish(mut value: Value, secrets: &Secrets) -> Result<String> {
    credentials::redact(&mut value, secrets);
    check_result(&value, &Limits::TOOL)?;
    let mut json = String::from(r#"{"structuredContent":{"untrusted":true,"result":"#);
    write_value(&mut json, &value);
    json.push_str("}}");
    if json.len() > MAX_REPLY_BYTES {
        return Err(Error::ReplyTooLarge);
    }
    // A last guard over the whole text: redaction works value by value, and this catches
    // anything that only appears once the reply is put together.
    if secrets.contains_secret(&json) {
        return Err(Error::SecretInReply);
    }
    Ok(json)
}

/// Checks a result against the structural bounds and the number bounds.
fn check_result(value: &Value, limits: &Limits) -> Result<()> {
    let mut nodes = 0;
    walk(value, 0, limits, &mut nodes)
}

fn walk(value: &Value, depth: usize, limits: &Limits, nodes: &mut usize) -> Result<()> {
    if depth > limits.max_depth {
        return Err(Error::ResultTooDeep);
    }
    *nodes += 1;
    if *nodes > limits.max_nodes {
        return Err(Error::ResultTooManyNodes);
    }
    match value {
        Value::Array(items) => {
            if items.len() > limits.max_entries {
                return Err(Error::ResultTooManyEntries);
            }
            for item in items {
                walk(item, depth + 1, limits, nodes)?;
            }
        }
        Value::Object(object) => {
            if object.len() > limits.max_entries {
                return Err(Error::ResultTooManyEntries);
            }
            for (_, item) in object.iter() {
                // The key is a node of its own.
                *nodes += 1;
                walk(item, depth + 1, limits, nodes)?;
            }
        }
        Value::Integer(n) => n
            .check_bounds()
            .map_err(|_| Error::ResultNumberOutOfRange)?,
        Value::Null | Value::Bool(_) | Value::Decimal(_) | Value::String(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    /// Checks `input` against the result bounds and compares with `expected`.
    fn check(input: &str, expected: Result<()>) {
        let value = Value::parse_with_limits(
            input,
            &Limits {
                max_depth: 20,
                max_entries: 1000,
                max_nodes: 5000,
                ..Limits::TOOL
            },
        )
        .unwrap();
        assert_eq!(
            check_result(&value, &Limits::TOOL),
            expected,
            "input: {input}"
        );
    }

    #[test]
    fn result_bounds() {
        check("[[[[[[[[1]]]]]]]]", Ok(()));
        check("[[[[[[[[[1]]]]]]]]]", Err(Error::ResultTooDeep));
        check(&format!("[{}]", vec!["1"; 128].join(",")), Ok(()));
        check(
            &format!("[{}]", vec!["1"; 129].join(",")),
            Err(Error::ResultTooManyEntries),
        );
        let inner = format!("[{}]", vec!["1"; 127].join(","));
        check(
            &format!("[{}]", [inner.as_str(); 8].join(",")),
            Err(Error::ResultTooManyNodes),
        );
    }

    #[test]
    fn random_draws_only_after_every_candidate_passes() {
        struct Counting(usize);
        impl RandomSource for Counting {
            fn index_below(&mut self, _: usize) -> usize {
                self.0 += 1;
                0
            }
        }
        let secrets = Secrets::empty();
        let mut source = Counting(0);
        // One member is too large for a reply, so the call fails before any draw.
        let big = "x".repeat(12_250);
        let call = Call::new(format!(
            r#"{{"operation":"random","input_json":"[\"a\",\"{big}\"]"}}"#
        ));
        let reply = execute(&call, &mut source, &secrets);
        assert_eq!(reply.error(), Some(Error::ReplyTooLarge));
        assert_eq!(source.0, 0);
        let call = Call::new(r#"{"operation":"random","input_json":"[\"a\",\"b\"]"}"#);
        let reply = execute(&call, &mut source, &secrets);
        assert_eq!(
            reply.as_json(),
            r#"{"structuredContent":{"untrusted":true,"result":"a"}}"#
        );
        assert_eq!(source.0, 1);
        let mut seeded = SplitMix64::new(1);
        let call = Call::new(r#"{"operation":"shuffle","input_json":"[1,2,3]"}"#);
        assert!(!execute(&call, &mut seeded, &secrets).is_error());
    }

    #[test]
    fn debug_hides_the_arguments() {
        let call = Call::new(r#"{"operation":"head","input_json":"[\"private\"]"}"#);
        assert!(!format!("{call:?}").contains("private"));
    }
}
