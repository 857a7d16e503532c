//! The strict, bounded JSON reader: a state machine over bytes that counts bytes, depth,
//! entries and nodes as it goes and stops at the first violation, before it allocates past
//! a bound.
//!
//! Containers are tracked on an explicit stack rather than by recursion, so the reader's
//! own stack use does not depend on the input; the depth bound keeps the heap stack tiny.

use crate::error::{Error, Result};
use crate::limits::{Limits, MAX_DECIMAL_PRECISION, MAX_NUMBER_CHARS};
use crate::number::{Decimal, Integer, NumberFault};
use crate::value::{Object, Value};

/// Reads exactly one JSON value from `text` within `limits`.
pub(crate) fn parse(text: &str, limits: &Limits) -> Result<Value> {
    // The byte bound is checked before a single byte is read.
    if text.len() > limits.max_bytes {
        return Err(Error::TooManyBytes);
    }
    Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        nodes: 0,
        limits,
    }
    .document()
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    nodes: usize,
    limits: &'a Limits,
}

/// An open container whose members are still being read.
enum Frame {
    Array(Vec<Value>),
    Object(ObjectFrame),
}

/// An open object: its finished entries, a hash of every key seen (including the key whose
/// value is being read) for the duplicate check, and that pending key.
struct ObjectFrame {
    entries: Vec<(String, Value)>,
    hashes: Vec<u64>,
    key: String,
}

impl Reader<'_> {
    fn document(&mut self) -> Result<Value> {
        let mut stack: Vec<Frame> = Vec::new();
        'value: loop {
            // State: a value is expected at depth `stack.len()`.
            let byte = self.skip_whitespace();
            if stack.len() > self.limits.max_depth {
                return Err(Error::TooDeep);
            }
            self.count_node()?;
            let mut value = match byte {
                Some(b'[') => {
                    self.pos += 1;
                    if self.skip_whitespace() == Some(b']') {
                        self.pos += 1;
                        Value::Array(Vec::new())
                    } else {
                        stack.push(Frame::Array(Vec::new()));
                        continue 'value;
                    }
                }
                Some(b'{') => {
                    self.pos += 1;
                    if self.skip_whitespace() == Some(b'}') {
                        self.pos += 1;
                        Value::Object(Object::new())
                    } else {
                        let mut frame = ObjectFrame {
                            entries: Vec::new(),
                            hashes: Vec::new(),
                            key: String::new(),
                        };
                        self.key(&mut frame)?;
                        stack.push(Frame::Object(frame));
                        continue 'value;
                    }
                }
                Some(b'"') => Value::String(self.string()?),
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal(b"true", Value::Bool(true))?,
                Some(b'f') => self.literal(b"false", Value::Bool(false))?,
                Some(b'n') => self.literal(b"null", Value::Null)?,
                Some(b'N' | b'I') => return Err(self.non_finite()),
                other => return Err(self.unexpected(other)),
            };
            // State: `value` is complete; hand it to its container, closing every container
            // that ends right after it.
            loop {
                match stack.last_mut() {
                    None => return self.end(value),
                    Some(Frame::Array(items)) => {
                        items.push(value);
                        match self.skip_whitespace() {
                            Some(b',') => {
                                self.pos += 1;
                                if self.skip_whitespace() == Some(b']') {
                                    return Err(Error::TrailingComma);
                                }
                                if items.len() >= self.limits.max_entries {
                                    return Err(Error::TooManyEntries);
                                }
                                continue 'value;
                            }
                            Some(b']') => self.pos += 1,
                            other => return Err(self.unexpected(other)),
                        }
                    }
                    Some(Frame::Object(object)) => {
                        let key = std::mem::take(&mut object.key);
                        object.entries.push((key, value));
                        match self.skip_whitespace() {
                            Some(b',') => {
                                self.pos += 1;
                                if self.skip_whitespace() == Some(b'}') {
                                    return Err(Error::TrailingComma);
                                }
                                if object.entries.len() >= self.limits.max_entries {
                                    return Err(Error::TooManyEntries);
                                }
                                self.key(object)?;
                                continue 'value;
                            }
                            Some(b'}') => self.pos += 1,
                            other => return Err(self.unexpected(other)),
                        }
                    }
                }
                // The container on top has just been closed.
                value = match stack.pop() {
                    Some(Frame::Array(items)) => Value::Array(items),
                    Some(Frame::Object(object)) => {
                        Value::Object(Object::from_distinct(object.entries))
                    }
                    None => return Err(Error::Syntax),
                };
            }
        }
    }

    /// Reads an object key and its colon into `frame`, rejecting a repeated key.
    fn key(&mut self, frame: &mut ObjectFrame) -> Result<()> {
        let byte = self.skip_whitespace();
        if byte != Some(b'"') {
            return Err(self.unexpected(byte));
        }
        self.count_node()?;
        let key = self.string()?;
        let hash = hash_key(key.as_bytes());
        // Hashes first: a full comparison runs only on a hash match, which keeps the check
        // linear in practice even for an object with the maximum number of keys.
        let repeated = frame
            .hashes
            .iter()
            .zip(&frame.entries)
            .any(|(&h, (k, _))| h == hash && *k == key);
        if repeated {
            return Err(Error::DuplicateKey);
        }
        let byte = self.skip_whitespace();
        if byte != Some(b':') {
            return Err(self.unexpected(byte));
        }
        self.pos += 1;
        frame.hashes.push(hash);
        frame.key = key;
        Ok(())
    }

    /// After the root value only whitespace may follow.
    fn end(&mut self, value: Value) -> Result<Value> {
        match self.skip_whitespace() {
            None => Ok(value),
            Some(b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'N' | b'I') => {
                Err(Error::MultipleRoots)
            }
            other => Err(self.unexpected(other)),
        }
    }

    fn count_node(&mut self) -> Result<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(Error::TooManyNodes);
        }
        Ok(())
    }

    /// Skips JSON whitespace and returns the next byte without consuming it.
    fn skip_whitespace(&mut self) -> Option<u8> {
        while let Some(&byte) = self.bytes.get(self.pos) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
            self.pos += 1;
        }
        None
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// The error for a byte that cannot appear here.
    fn unexpected(&self, byte: Option<u8>) -> Error {
        let next = self.bytes.get(self.pos + 1).copied();
        match (byte, next) {
            (Some(b'/'), Some(b'/' | b'*')) => Error::Comment,
            _ => Error::Syntax,
        }
    }

    /// `NaN` and `Infinity` are what non-finite numbers look like in lax JSON writers.
    fn non_finite(&self) -> Error {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if rest.starts_with(b"NaN") || rest.starts_with(b"Infinity") {
            Error::NonFiniteNumber
        } else {
            Error::Syntax
        }
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Result<Value> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        if !rest.starts_with(word) {
            return Err(Error::Syntax);
        }
        self.pos += word.len();
        Ok(value)
    }

    /// Reads a string literal starting at its opening quote.
    fn string(&mut self) -> Result<String> {
        self.pos += 1;
        let start = self.pos;
        // Fast path: most strings have no escape and are copied in one piece.
        loop {
            self.skip_plain_words();
            let byte = *self.bytes.get(self.pos).ok_or(Error::Syntax)?;
            if !SPECIAL[usize::from(byte)] {
                self.pos += 1;
                continue;
            }
            match byte {
                b'"' => {
                    let text = self.slice(start, self.pos)?.to_owned();
                    self.pos += 1;
                    return Ok(text);
                }
                b'\\' => break,
                _ => return Err(Error::ControlCharacter),
            }
        }
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(self.slice(start, self.pos)?);
        loop {
            let byte = *self.bytes.get(self.pos).ok_or(Error::Syntax)?;
            match byte {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                0x00..=0x1f => return Err(Error::ControlCharacter),
                _ => {
                    let run = self.pos;
                    while self
                        .bytes
                        .get(self.pos)
                        .is_some_and(|&b| !SPECIAL[usize::from(b)])
                    {
                        self.pos += 1;
                    }
                    out.push_str(self.slice(run, self.pos)?);
                }
            }
        }
    }

    /// Skips eight bytes at a time while none of them is special, testing a whole word
    /// with bit tricks instead of each byte.
    fn skip_plain_words(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGH: u64 = 0x8080_8080_8080_8080;
        while let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let word = u64::from_le_bytes(word);
            let quote = word ^ (ONES * u64::from(b'"'));
            let backslash = word ^ (ONES * u64::from(b'\\'));
            // A byte's high bit ends up set exactly when that byte is zero (or, for the last
            // test, below 0x20); any set bit sends the word to the byte-wise loop.
            let special = (quote.wrapping_sub(ONES) & !quote)
                | (backslash.wrapping_sub(ONES) & !backslash)
                | (word.wrapping_sub(ONES * 0x20) & !word);
            if special & HIGH != 0 {
                return;
            }
            self.pos += 8;
        }
    }

    /// Decodes one escape sequence whose backslash has been consumed.
    fn escape(&mut self, out: &mut String) -> Result<()> {
        let byte = *self.bytes.get(self.pos).ok_or(Error::Syntax)?;
        self.pos += 1;
        let decoded = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        let rest = self.bytes.get(self.pos..).unwrap_or_default();
                        if !rest.starts_with(b"\\u") {
                            return Err(Error::LoneSurrogate);
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(Error::LoneSurrogate);
                        }
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        char::from_u32(code).ok_or(Error::LoneSurrogate)?
                    }
                    0xDC00..=0xDFFF => return Err(Error::LoneSurrogate),
                    _ => char::from_u32(unit).ok_or(Error::LoneSurrogate)?,
                }
            }
            _ => return Err(Error::InvalidEscape),
        };
        out.push(decoded);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or(Error::InvalidEscape)?;
        let mut unit = 0;
        for &digit in digits {
            let value = char::from(digit).to_digit(16).ok_or(Error::InvalidEscape)?;
            unit = unit * 16 + value;
        }
        self.pos += 4;
        Ok(unit)
    }

    /// Reads a number token and checks every number bound before building the value.
    fn number(&mut self) -> Result<Value> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(Error::LeadingZero);
                }
            }
            Some(b'1'..=b'9') => self.skip_digits(),
            Some(b'I') => return Err(self.non_finite()),
            _ => return Err(Error::Syntax),
        }
        let int_end = self.pos;
        let next = self.peek();
        if !matches!(next, Some(b'.' | b'e' | b'E')) {
            if int_end - start > MAX_NUMBER_CHARS {
                return Err(Error::NumberTooLong);
            }
            let digits = self.bytes.get(int_start..int_end).unwrap_or_default();
            return Ok(Value::Integer(Integer::from_digits(negative, digits, &[])));
        }
        let mut frac = (int_end, int_end);
        if next == Some(b'.') {
            self.pos += 1;
            let frac_start = self.pos;
            self.skip_digits();
            if self.pos == frac_start {
                return Err(Error::Syntax);
            }
            frac = (frac_start, self.pos);
        }
        let mut exponent: i64 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            let exp_negative = match self.peek() {
                Some(b'-') => {
                    self.pos += 1;
                    true
                }
                Some(b'+') => {
                    self.pos += 1;
                    false
                }
                _ => false,
            };
            let exp_start = self.pos;
            while let Some(digit @ b'0'..=b'9') = self.peek() {
                // Saturating: any exponent this large is far outside the scale bound anyway.
                exponent = (exponent * 10 + i64::from(digit - b'0')).min(1_000_000_000);
                self.pos += 1;
            }
            if self.pos == exp_start {
                return Err(Error::Syntax);
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        if self.pos - start > MAX_NUMBER_CHARS {
            return Err(Error::NumberTooLong);
        }
        let int_digits = self.bytes.get(int_start..int_end).unwrap_or_default();
        let frac_digits = self.bytes.get(frac.0..frac.1).unwrap_or_default();
        // Precision is checked on the digit count before any value is built. Leading zeros
        // are rejected, so only an integer part of "0" can start a run of them.
        let leading = if int_digits == b"0" {
            1 + frac_digits.iter().take_while(|&&d| d == b'0').count()
        } else {
            0
        };
        let significant = (int_digits.len() + frac_digits.len() - leading).max(1);
        if significant as u64 > MAX_DECIMAL_PRECISION {
            return Err(Error::NumberOutOfRange);
        }
        let scale = frac_digits.len() as i64 - exponent;
        let unscaled = Integer::from_digits(negative, int_digits, frac_digits);
        let decimal = Decimal::from_parts(unscaled, scale).map_err(NumberFault::input_error)?;
        Ok(Value::Decimal(decimal))
    }

    fn skip_digits(&mut self) {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        self.pos += rest.iter().take_while(|b| b.is_ascii_digit()).count();
    }

    fn slice(&self, start: usize, end: usize) -> Result<&str> {
        // Both ends sit next to ASCII bytes, so they are always character boundaries.
        self.text.get(start..end).ok_or(Error::Syntax)
    }
}

/// FxHash-style hash of a key, for the duplicate check only.
fn hash_key(bytes: &[u8]) -> u64 {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut hash = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(SEED);
    }
    for &byte in chunks.remainder() {
        hash = (hash.rotate_left(5) ^ u64::from(byte)).wrapping_mul(SEED);
    }
    hash
}

/// Bytes that end the fast path of a string: the closing quote, a backslash and the control
/// characters JSON forbids unescaped.
static SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = true;
        i += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `input` with the tool limits and compares the outcome with `expected`: the
    /// compact text on success, the error otherwise.
    fn check(input: &str, expected: std::result::Result<&str, Error>) {
        let got = parse(input, &Limits::TOOL).map(|v| v.to_json());
        assert_eq!(got.as_deref().map_err(|e| *e), expected, "input: {input:?}");
    }

    #[test]
    fn accepts_strict_json() {
        check(
            " [1, -2, 3.5, \"x\", true, false, null] ",
            Ok(r#"[1,-2,3.5,"x",true,false,null]"#),
        );
        check(r#"{"a":{"b":[]},"c":{}}"#, Ok(r#"{"a":{"b":[]},"c":{}}"#));
        check(
            r#""\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t""#,
            Ok("\"é😀\\\"\\\\/\\b\\f\\n\\r\\t\""),
        );
        check("0", Ok("0"));
        check("-0.5e-1", Ok("-0.05"));
        check("\t\r\n 7 \n", Ok("7"));
    }

    #[test]
    fn rejects_each_fault_with_its_own_kind() {
        check("", Err(Error::Syntax));
        check("   ", Err(Error::Syntax));
        check("[1 2]", Err(Error::Syntax));
        check("{\"a\" 1}", Err(Error::Syntax));
        check("{1:2}", Err(Error::Syntax));
        check("[", Err(Error::Syntax));
        check("\"abc", Err(Error::Syntax));
        check("tru", Err(Error::Syntax));
        check("+1", Err(Error::Syntax));
        check(".5", Err(Error::Syntax));
        check("1.", Err(Error::Syntax));
        check("1e", Err(Error::Syntax));
        check("-", Err(Error::Syntax));
        check("\u{feff}1", Err(Error::Syntax));
        check("[1]x", Err(Error::Syntax));
        check("[1,,2]", Err(Error::Syntax));
        check("// note\n1", Err(Error::Comment));
        check("[1 /* two */]", Err(Error::Comment));
        check("1 // end", Err(Error::Comment));
        check("[1,]", Err(Error::TrailingComma));
        check(r#"{"a":1,}"#, Err(Error::TrailingComma));
        check(r#"{"a":1,"a":2}"#, Err(Error::DuplicateKey));
        check(r#"{"a":1,"\u0061":2}"#, Err(Error::DuplicateKey));
        check("1 2", Err(Error::MultipleRoots));
        check("{}[]", Err(Error::MultipleRoots));
        check("01", Err(Error::LeadingZero));
        check("-01.5", Err(Error::LeadingZero));
        check(r#""\ud800""#, Err(Error::LoneSurrogate));
        check(r#""\udc00\ud800""#, Err(Error::LoneSurrogate));
        check(r#""\ud800\u0041""#, Err(Error::LoneSurrogate));
        check(r#""\x41""#, Err(Error::InvalidEscape));
        check(r#""\u12g4""#, Err(Error::InvalidEscape));
        check("\"a\nb\"", Err(Error::ControlCharacter));
        check("NaN", Err(Error::NonFiniteNumber));
        check("[Infinity]", Err(Error::NonFiniteNumber));
        check("-Infinity", Err(Error::NonFiniteNumber));
        check("1e309", Err(Error::NumberOutOfRange));
        check("2e308", Err(Error::NonFiniteNumber));
    }

    #[test]
    fn number_bounds_are_exact() {
        let digits = |n: usize| "1".repeat(n);
        // A 200-character integer token is accepted, 201 characters are not.
        check(&digits(200), Ok(&digits(200)));
        check(
            &format!("-{}", digits(199)),
            Ok(&format!("-{}", digits(199))),
        );
        check(&digits(201), Err(Error::NumberTooLong));
        // Precision 128 is accepted, 129 is not; leading zeros do not count.
        let p128 = format!("0.{}", digits(128));
        check(&p128, Ok(&p128));
        check(&format!("0.{}", digits(129)), Err(Error::NumberOutOfRange));
        check("0.0000000001", Ok("1E-10"));
        // Trailing zeros do count, as they do in Java's BigDecimal.
        check(
            &format!("1.{}", "0".repeat(127)),
            Ok(&format!("1.{}", "0".repeat(127))),
        );
        check(
            &format!("1.{}", "0".repeat(128)),
            Err(Error::NumberOutOfRange),
        );
        // Scale from -308 through 308.
        check("1e308", Ok("1E+308"));
        check("1e-308", Ok("1E-308"));
        check("1e-309", Err(Error::NumberOutOfRange));
        check("0e400", Err(Error::NumberOutOfRange));
        check("1e99999999999999999999", Err(Error::NumberOutOfRange));
    }

    #[test]
    fn structural_bounds_are_exact() {
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        // Nine arrays put the innermost at depth 8; ten go one level too deep.
        check(&nest(9), Ok(&nest(9)));
        check(&nest(10), Err(Error::TooDeep));
        check("[[[[[[[[1]]]]]]]]", Ok("[[[[[[[[1]]]]]]]]"));
        check("[[[[[[[[[1]]]]]]]]]", Err(Error::TooDeep));
        let list = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        check(&list(128), Ok(&list(128)));
        check(&list(129), Err(Error::TooManyEntries));
        let object = |n: usize| {
            let entries: Vec<String> = (0..n).map(|i| format!("\"k{i}\":0")).collect();
            format!("{{{}}}", entries.join(","))
        };
        check(&object(128), Ok(&object(128)));
        check(&object(129), Err(Error::TooManyEntries));
        // 8 arrays of 127 zeros plus 8 containers plus the root: 1 + 8 × 128 = 1025 nodes.
        let inner = list(127);
        let nodes = |n: usize| format!("[{}]", vec![inner.as_str(); n].join(","));
        check(&nodes(7), Ok(&nodes(7)));
        let tail = list(126);
        let exact = format!("[{},{tail}]", [inner.as_str(); 7].join(","));
        check(&exact, Ok(&exact));
        check(&nodes(8), Err(Error::TooManyNodes));
        // Keys count as nodes: {"a":[...127...]} ×... is covered by the object bound above.
        let long = format!("\"{}\"", "a".repeat(12_286));
        check(&long, Ok(&long));
        check(
            &format!("\"{}\"", "a".repeat(12_287)),
            Err(Error::TooManyBytes),
        );
    }
}
