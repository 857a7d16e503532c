//! The crate's closed set of error kinds, the coarse categories replies report, and the
//! error a batch preflight returns.

use std::fmt;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Every way a call can fail.
///
/// Each kind carries no data: the messages are fixed sentences, so an error can be shown to
/// a model or written to a log without repeating any part of the arguments, the input or a
/// credential. Callers that only need a coarse answer use [`Error::category`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", self.message())]
pub enum Error {
    // The arguments object.
    /// The arguments are not one strict JSON object within bounds.
    ArgumentsNotObject,
    /// The arguments text is longer than the envelope allows.
    ArgumentsTooLong,
    /// A required argument is absent.
    MissingField,
    /// An argument has a name the tool does not know.
    UnknownField,
    /// A known optional argument was given to an operation that does not take it.
    FieldNotAllowed,
    /// An argument has the wrong JSON type.
    FieldType,
    /// An argument is outside its documented range or length.
    FieldOutOfRange,
    /// The `operation` argument names none of the 28 operators.
    UnknownOperation,

    // Reading input_json.
    /// The text is not JSON: an unexpected character or a premature end.
    Syntax,
    /// The text contains a `//` or `/*` comment.
    Comment,
    /// An array or object ends with a comma.
    TrailingComma,
    /// An object repeats a key (compared after unescaping).
    DuplicateKey,
    /// Something other than whitespace follows the first complete value.
    MultipleRoots,
    /// A number has a superfluous leading zero.
    LeadingZero,
    /// A string escapes half of a UTF-16 surrogate pair.
    LoneSurrogate,
    /// A string contains an escape JSON does not define.
    InvalidEscape,
    /// A string contains an unescaped control character.
    ControlCharacter,
    /// A number is `NaN`, an infinity, or too large for a finite double.
    NonFiniteNumber,
    /// A numeric token is longer than 200 characters.
    NumberTooLong,
    /// A decimal has more than 128 significant digits or a scale beyond ±308.
    NumberOutOfRange,
    /// The text is longer than 12,288 UTF-8 bytes.
    TooManyBytes,
    /// A value is nested deeper than depth 8.
    TooDeep,
    /// An array or object has more than 128 members.
    TooManyEntries,
    /// The value has more than 1,024 nodes.
    TooManyNodes,

    // The shape the operation needs.
    /// The operation needs an array.
    NotArray,
    /// The operation needs an array whose members are all strings.
    NotStringArray,
    /// The operation needs an array whose members are all numbers.
    NotNumericArray,
    /// The operation needs a string.
    NotString,
    /// The operation needs an object.
    NotObject,
    /// `count` needs an array, an object or a string.
    NotCountable,
    /// `range` needs `[start, end]` or `[start, end, step]` of integers.
    InvalidRange,
    /// A `range` integer is outside -1,000,000..=1,000,000.
    RangeOutOfBounds,
    /// A `range` step is zero.
    ZeroStep,

    // Results.
    /// `range` would produce more than 128 members.
    RangeTooLong,
    /// The result would have an array or object with more than 128 members.
    ResultTooManyEntries,
    /// The result would be nested deeper than depth 8.
    ResultTooDeep,
    /// The result would have more than 1,024 nodes.
    ResultTooManyNodes,
    /// A numeric result is outside the number bounds or has no finite double value.
    ResultNumberOutOfRange,
    /// The serialized reply would exceed 12,288 bytes.
    ReplyTooLarge,

    // Credentials.
    /// A configured credential appears in the arguments or the input.
    SecretInInput,
    /// An object key or path segment names a credential-like field.
    SensitiveField,
    /// A credential survived redaction in the serialized reply.
    SecretInReply,
}

impl Error {
    /// The coarse category a reply reports for this error.
    #[must_use]
    pub fn category(self) -> Category {
        match self {
            Self::ArgumentsNotObject
            | Self::ArgumentsTooLong
            | Self::MissingField
            | Self::UnknownField
            | Self::FieldNotAllowed
            | Self::FieldType
            | Self::FieldOutOfRange
            | Self::UnknownOperation => Category::InvalidArguments,
            Self::Syntax
            | Self::Comment
            | Self::TrailingComma
            | Self::DuplicateKey
            | Self::MultipleRoots
            | Self::LeadingZero
            | Self::LoneSurrogate
            | Self::InvalidEscape
            | Self::ControlCharacter
            | Self::NonFiniteNumber => Category::InvalidJson,
            Self::NotArray
            | Self::NotStringArray
            | Self::NotNumericArray
            | Self::NotString
            | Self::NotObject
            | Self::NotCountable
            | Self::InvalidRange
            | Self::RangeOutOfBounds
            | Self::ZeroStep => Category::InvalidInput,
            Self::NumberTooLong
            | Self::NumberOutOfRange
            | Self::TooManyBytes
            | Self::TooDeep
            | Self::TooManyEntries
            | Self::TooManyNodes
            | Self::RangeTooLong
            | Self::ResultTooManyEntries
            | Self::ResultTooDeep
            | Self::ResultTooManyNodes
            | Self::ResultNumberOutOfRange
            | Self::ReplyTooLarge => Category::LimitExceeded,
            Self::SecretInInput | Self::SensitiveField | Self::SecretInReply => {
                Category::Credential
            }
        }
    }

    /// The fixed sentence describing this error; it never contains call data.
    #[must_use]
    pub fn message(self) -> &'static str {
        match self {
            Self::ArgumentsNotObject => "the arguments are not one valid JSON object",
            Self::ArgumentsTooLong => "the arguments exceed 16384 characters",
            Self::MissingField => "a required argument is missing",
            Self::UnknownField => "the arguments contain an unknown field",
            Self::FieldNotAllowed => "an optional argument is not accepted by this operation",
            Self::FieldType => "an argument has the wrong type",
            Self::FieldOutOfRange => "an argument is outside its allowed range",
            Self::UnknownOperation => "unknown operation",
            Self::Syntax => "input_json is not valid JSON",
            Self::Comment => "input_json contains a comment",
            Self::TrailingComma => "input_json contains a trailing comma",
            Self::DuplicateKey => "input_json repeats an object key",
            Self::MultipleRoots => "input_json holds more than one root value",
            Self::LeadingZero => "input_json has a number with a leading zero",
            Self::LoneSurrogate => "input_json has a string with a lone surrogate",
            Self::InvalidEscape => "input_json has a string with an invalid escape",
            Self::ControlCharacter => "input_json has a string with an unescaped control character",
            Self::NonFiniteNumber => "input_json has a non-finite number",
            Self::NumberTooLong => "input_json has a numeric token longer than 200 characters",
            Self::NumberOutOfRange => {
                "input_json has a decimal outside the precision or scale bounds"
            }
            Self::TooManyBytes => "input_json exceeds 12288 bytes",
            Self::TooDeep => "input_json is nested deeper than 8 levels",
            Self::TooManyEntries => "input_json has an array or object with more than 128 entries",
            Self::TooManyNodes => "input_json has more than 1024 nodes",
            Self::NotArray => "this operation needs an array",
            Self::NotStringArray => "this operation needs an array of strings",
            Self::NotNumericArray => "this operation needs an array of numbers",
            Self::NotString => "this operation needs a string",
            Self::NotObject => "this operation needs an object",
            Self::NotCountable => "count needs an array, an object or a string",
            Self::InvalidRange => "range needs [start, end] or [start, end, step] integers",
            Self::RangeOutOfBounds => "range integers must be between -1000000 and 1000000",
            Self::ZeroStep => "range step must not be zero",
            Self::RangeTooLong => "the range would have more than 128 members",
            Self::ResultTooManyEntries => {
                "the result would have more than 128 entries in one array or object"
            }
            Self::ResultTooDeep => "the result would be nested deeper than 8 levels",
            Self::ResultTooManyNodes => "the result would have more than 1024 nodes",
            Self::ResultNumberOutOfRange => "the numeric result is out of range",
            Self::ReplyTooLarge => "the reply would exceed 12288 bytes",
            Self::SecretInInput => "the arguments contain a configured credential",
            Self::SensitiveField => "the input names a credential-like field",
            Self::SecretInReply => "the reply would contain a configured credential",
        }
    }
}

/// The coarse class of an [`Error`], reported in failure replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// The arguments object is malformed, or a field is missing, unknown, misplaced or out
    /// of range.
    InvalidArguments,
    /// `input_json` is not strict JSON.
    InvalidJson,
    /// The JSON is valid but not the shape the operation needs.
    InvalidInput,
    /// An input or result bound was exceeded.
    LimitExceeded,
    /// A credential rule rejected the call.
    Credential,
}

impl Category {
    /// The category's name as it appears in replies.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArguments => "invalid_arguments",
            Self::InvalidJson => "invalid_json",
            Self::InvalidInput => "invalid_input",
            Self::LimitExceeded => "limit_exceeded",
            Self::Credential => "credential",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first call of a batch that failed preflight, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("call {index} of the batch failed preflight: {error}")]
pub struct BatchError {
    index: usize,
    error: Error,
}

impl BatchError {
    pub(crate) fn new(index: usize, error: Error) -> Self {
        Self { index, error }
    }

    /// The position of the failing call in the batch, from zero.
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }

    /// Why the call failed.
    #[must_use]
    pub fn error(&self) -> Error {
        self.error
    }
}
