//! The tool's 28 operators as a closed enum; their names and rules live in the operator table.

use crate::table::OperationSpec;

/// One of the tool's 28 operators, named as in the tool's `operation` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// One uniformly chosen array member.
    Random,
    /// The first array member.
    Head,
    /// The last array member.
    Tail,
    /// The first `count` members.
    Take,
    /// All but the first `count` members.
    Drop,
    /// All but the first member.
    Rest,
    /// All but the last member.
    Droplast,
    /// Joins a string array with an optional separator.
    Join,
    /// Splits a string on a literal separator.
    Split,
    /// Trims characters at or below U+0020.
    Trim,
    /// Splits a trimmed string on ASCII whitespace.
    Words,
    /// Joins a string array with one space.
    Unwords,
    /// Flattens nested arrays.
    Flatten,
    /// A string's code points as strings.
    Letters,
    /// Concatenates a string array.
    Unletters,
    /// Stable deduplication by structural equality.
    Unique,
    /// Wraps a value in an array.
    List,
    /// Array length, key count or code-point count.
    Count,
    /// Exact sum of a numeric array.
    Sum,
    /// A random permutation.
    Shuffle,
    /// Lexical sort in UTF-16 code-unit order.
    Sort,
    /// Numeric sort by exact value.
    Sortnum,
    /// Members containing a literal query.
    Grep,
    /// Reverses an array.
    Reverse,
    /// A bounded integer range.
    Range,
    /// Object keys in lexical order.
    Keys,
    /// Object values in key order.
    Vals,
    /// Follows a path of keys and indexes.
    Get,
}

impl Operation {
    /// Every operator, in the order the tool documents them.
    pub const ALL: [Self; 28] = {
        let mut all = [Self::Random; 28];
        let mut i = 0;
        while i < all.len() {
            all[i] = crate::table::TABLE[i].operation;
            i += 1;
        }
        all
    };

    /// The operator's name in tool arguments.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.spec().name()
    }

    /// The operator's entry in the operator table: its fields, input shape and summary.
    #[must_use]
    pub fn spec(self) -> &'static OperationSpec {
        crate::table::spec_of(self)
    }

    /// The operator with this exact (case-sensitive) name.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownOperation`](crate::Error::UnknownOperation) for any other name; the
    /// error does not repeat the name, which came from a model.
    pub fn from_name(name: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|op| op.name() == name)
            .ok_or(crate::Error::UnknownOperation)
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Operation;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut names: Vec<&str> = Operation::ALL.iter().map(|op| op.name()).collect();
        for op in Operation::ALL {
            assert_eq!(Operation::from_name(op.name()).ok(), Some(op));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 28);
        assert!(Operation::from_name("Sort").is_err());
        assert!(Operation::from_name("xargs").is_err());
    }
}
