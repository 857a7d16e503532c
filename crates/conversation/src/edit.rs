//! How far apart two words are: the one measure behind every "did you mean" (a misspelt
//! command, configuration key or model ID).

/// The Levenshtein distance between two character sequences. Quadratic in time and linear
/// in memory, so callers bound the lengths they compare.
///
/// ```
/// let a: Vec<char> = "comand".chars().collect();
/// let b: Vec<char> = "command".chars().collect();
/// assert_eq!(yetibot_conversation::edit_distance(&a, &b), 1);
/// ```
#[must_use]
pub fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            current[j + 1] = (previous[j] + cost)
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    fn distance(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        edit_distance(&a, &b)
    }

    #[test]
    fn edits() {
        assert_eq!(distance("comand", "command"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("same", "same"), 0);
    }
}
