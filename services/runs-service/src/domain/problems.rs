//! What is wrong with a tool call's arguments or a tool's structured
//! result, as the checks in [`super::tools`] find it and the texts in
//! [`super::texts`] tell it to the model.

/// Most problems told to the model for one call; the rest are counted.
pub const MAX_REPORTED_PROBLEMS: usize = 3;

/// One problem of a call's arguments: where (a JSON pointer, empty for
/// the arguments as a whole) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The field, as a JSON pointer.
    pub at: String,
    /// What is wrong with it.
    pub what: String,
}

/// How a structured result differs from its tool's output schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultMismatch {
    /// The tool declares an output schema and returned no structured result.
    Missing,
    /// The structured result is not JSON.
    NotJson,
    /// What is wrong, at most [`MAX_REPORTED_PROBLEMS`], and how many more.
    Problems(Vec<Problem>, usize),
}
