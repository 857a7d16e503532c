//! The JSON value model: exact numbers, insertion-ordered objects without duplicate keys,
//! and the structural equality the tool compares values with.

use std::fmt;

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::number::{Decimal, Integer};
use crate::{reader, writer};

/// One JSON value.
///
/// Numbers keep their category and exact value: [`Value::Integer`] for tokens without a
/// fraction or exponent, [`Value::Decimal`] for the rest. Objects keep their keys in
/// insertion order and never hold a key twice.
///
/// Equality is structural, as Clojure's `=` compares the same data: integers equal
/// integers of the same value, decimals equal decimals of the same value whatever their
/// trailing zeros (`1.0 == 1.00`), but an integer never equals a decimal (`1 != 1.0`);
/// arrays compare member by member; objects compare as maps, ignoring key order.
#[derive(Debug, Clone)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number without fraction or exponent.
    Integer(Integer),
    /// A number with a fraction or an exponent.
    Decimal(Decimal),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Object),
}

impl Value {
    /// Reads one JSON text within the tool's bounds ([`Limits::TOOL`]).
    ///
    /// # Errors
    ///
    /// The reader's error kinds, from [`Error::Syntax`] through [`Error::TooManyNodes`].
    pub fn parse(text: &str) -> Result<Self> {
        reader::parse(text, &Limits::TOOL)
    }

    /// Reads one JSON text within `limits`.
    ///
    /// The reader itself uses no stack per level, but writing, comparing and dropping a
    /// value recurse once per level, so keep `max_depth` small; the tool's is 8.
    ///
    /// # Errors
    ///
    /// As for [`Value::parse`].
    pub fn parse_with_limits(text: &str, limits: &Limits) -> Result<Self> {
        reader::parse(text, limits)
    }

    /// The compact JSON text of the value, with numbers written exactly.
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        writer::write_value(&mut out, self);
        out
    }

    /// The string, if this is one.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(text) => Some(text),
            _ => None,
        }
    }

    /// The members, if this is an array.
    #[must_use]
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Self::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The object, if this is one.
    #[must_use]
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Self::Object(object) => Some(object),
            _ => None,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Null, Self::Null) => true,
            (Self::Bool(a), Self::Bool(b)) => a == b,
            (Self::Integer(a), Self::Integer(b)) => a == b,
            (Self::Decimal(a), Self::Decimal(b)) => a == b,
            (Self::String(a), Self::String(b)) => a == b,
            (Self::Array(a), Self::Array(b)) => a == b,
            (Self::Object(a), Self::Object(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl From<Integer> for Value {
    fn from(value: Integer) -> Self {
        Self::Integer(value)
    }
}

impl From<Decimal> for Value {
    fn from(value: Decimal) -> Self {
        Self::Decimal(value)
    }
}

impl From<&str> for Value {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl From<String> for Value {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

/// A JSON object: keys in insertion order, each key at most once.
///
/// Equality compares objects as maps: the same keys with equal values, in any order.
#[derive(Debug, Clone, Default)]
pub struct Object {
    entries: Vec<(String, Value)>,
}

impl Object {
    /// An empty object.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a key at the end.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateKey`] if the key is already present; the object is unchanged.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Result<()> {
        let key = key.into();
        if self.get(&key).is_some() {
            return Err(Error::DuplicateKey);
        }
        self.entries.push((key, value));
        Ok(())
    }

    /// The value under `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// How many keys the object has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the object has no keys.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in insertion order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The values in insertion order, to change in place (the keys stay as they are).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// Rewrites the keys: `rename` returns a key's new name, or `None` to keep it. A key
    /// that then equals an earlier one gets the suffix ` (2)`, ` (3)` and so on, so no entry
    /// is lost and keys stay distinct. Linear in the number of keys.
    pub fn rename_keys(&mut self, mut rename: impl FnMut(&str) -> Option<String>) {
        let renamed: Vec<Option<String>> = self.entries.iter().map(|(k, _)| rename(k)).collect();
        if renamed.iter().all(Option::is_none) {
            return;
        }
        let mut taken = std::collections::HashSet::with_capacity(self.entries.len());
        // The next suffix to try per name, so many equal names cost linear time in all.
        let mut next: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        for ((key, _), new) in self.entries.iter_mut().zip(renamed) {
            let base = new.unwrap_or_else(|| std::mem::take(key));
            let mut unique = base.clone();
            if taken.contains(&unique) {
                let mut n = next.get(&base).copied().unwrap_or(2);
                loop {
                    unique = format!("{base} ({n})");
                    n += 1;
                    if !taken.contains(&unique) {
                        break;
                    }
                }
                next.insert(base, n);
            }
            taken.insert(unique.clone());
            *key = unique;
        }
    }

    /// Builds an object from entries whose keys the caller has already proven distinct.
    pub(crate) fn from_distinct(entries: Vec<(String, Value)>) -> Self {
        Self { entries }
    }

    pub(crate) fn entries(&self) -> &[(String, Value)] {
        &self.entries
    }

    pub(crate) fn into_entries(self) -> Vec<(String, Value)> {
        self.entries
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        // Keys are distinct on both sides, so equal sizes plus every key of one found with
        // an equal value in the other means the two maps are equal.
        self.len() == other.len()
            && self
                .entries
                .iter()
                .all(|(k, v)| other.get(k).is_some_and(|w| v == w))
    }
}

impl Eq for Object {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares two JSON texts with the structural equality.
    fn check(a: &str, b: &str, equal: bool) {
        let (x, y) = (Value::parse(a).unwrap(), Value::parse(b).unwrap());
        assert_eq!(x == y, equal, "{a} vs {b}");
        assert_eq!(y == x, equal, "{b} vs {a}");
    }

    #[test]
    fn renamed_keys_stay_distinct_and_keep_every_entry() {
        let Value::Object(mut object) = Value::parse(r#"{"a":1,"b":2,"a2":3}"#).unwrap() else {
            panic!("an object");
        };
        object.rename_keys(|k| (k == "a2" || k == "b").then(|| "a".to_owned()));
        let keys: Vec<&str> = object.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "a (2)", "a (3)"]);
        for value in object.values_mut() {
            *value = Value::Null;
        }
        assert!(object.iter().all(|(_, v)| *v == Value::Null));
    }

    #[test]
    fn structural_equality() {
        check("1", "1", true);
        check("1", "1.0", false);
        check("1.0", "1.00", true);
        check("1e2", "100.0", true);
        check("1e2", "100", false);
        check(r#"{"a":1,"b":[2]}"#, r#"{"b":[2],"a":1}"#, true);
        check(r#"{"a":1}"#, r#"{"a":1,"b":2}"#, false);
        check(r#"{"a":1.0}"#, r#"{"a":1}"#, false);
        check("[1,2]", "[2,1]", false);
        check("[]", "{}", false);
        check("null", "false", false);
        check(r#""a""#, r#""\u0061""#, true);
    }

    #[test]
    fn objects_reject_duplicate_keys() {
        let mut object = Object::new();
        object.insert("a", Value::Null).unwrap();
        assert_eq!(
            object.insert("a", Value::Bool(true)),
            Err(Error::DuplicateKey)
        );
        assert_eq!(object.len(), 1);
        assert_eq!(object.get("a"), Some(&Value::Null));
        assert_eq!(Value::Object(object).to_json(), r#"{"a":null}"#);
    }
}
