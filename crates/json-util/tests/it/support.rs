//! Shared helpers: a scripted random source and argument builders.

use yetibot_json_util::RandomSource;

/// A random source that returns the given indexes in order, then zeros.
#[derive(Debug, Default)]
pub(crate) struct Scripted {
    draws: Vec<usize>,
    next: usize,
}

impl Scripted {
    pub(crate) fn new(draws: Vec<usize>) -> Self {
        Self { draws, next: 0 }
    }
}

impl RandomSource for Scripted {
    fn index_below(&mut self, bound: usize) -> usize {
        let draw = self.draws.get(self.next).copied().unwrap_or(0);
        self.next += 1;
        assert!(draw < bound, "scripted draw {draw} is not below {bound}");
        draw
    }
}

/// The arguments JSON for `operation` on `input` with extra fields.
pub(crate) fn arguments(
    operation: &str,
    input: &str,
    fields: &[(&str, serde_json::Value)],
) -> String {
    let mut object = serde_json::Map::new();
    object.insert("operation".into(), operation.into());
    object.insert("input_json".into(), input.into());
    for (name, value) in fields {
        object.insert((*name).into(), value.clone());
    }
    serde_json::Value::Object(object).to_string()
}
