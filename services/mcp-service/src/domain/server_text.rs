//! Text a server (or its authorization server) wrote, bounded wherever it
//! lands: a JSON-RPC error's message, a transport failure's detail, an
//! error the domain records in the audit trail. The result-size limit bounds
//! results; this bounds everything said *about* a call.
//!
//! A cut text ends in a marker that states the bound and the text's whole
//! length, so that a reader (a person, a model) knows it was cut and by how
//! much.

use std::borrow::Cow;

use super::ports::CallError;

/// `text` when it is at most `max` bytes, else its first bytes up to a
/// character boundary and a marker: ` … [cut at {max} of {len} bytes]`.
pub fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{} … [cut at {max} of {} bytes]",
        &text[..end],
        text.len()
    ))
}

/// `text` cut to `max` bytes (see [`bounded`]), in place.
pub fn bound_in_place(text: &mut String, max: usize) {
    if let Cow::Owned(cut) = bounded(text, max) {
        *text = cut;
    }
}

impl CallError {
    /// The error with every text it carries from a server cut to `max`
    /// bytes.
    #[must_use]
    pub fn bounded(mut self, max: usize) -> Self {
        match &mut self {
            Self::Connect(text)
            | Self::ExchangeRefused(text)
            | Self::Transport(text)
            | Self::ListingTooLong(text)
            | Self::Upstream { message: text, .. }
            | Self::Exhausted { message: text, .. }
            | Self::AuthorizationRequired(Some(text)) => bound_in_place(text, max),
            Self::AuthorizationRequired(None) | Self::Timeout(_) | Self::TooLarge { .. } => {}
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_within_the_bound_is_kept_and_a_longer_one_is_cut_and_marked() {
        assert_eq!(bounded("short", 5), "short");
        assert_eq!(bounded("longer", 5), "longe … [cut at 5 of 6 bytes]");
        // Never inside a character: "é" is two bytes.
        assert_eq!(bounded("aé", 2), "a … [cut at 2 of 3 bytes]");
    }

    #[test]
    fn every_text_of_a_call_error_is_cut() {
        let long = "x".repeat(100);
        let error = CallError::Upstream {
            code: -32000,
            message: long.clone(),
        }
        .bounded(10);
        assert_eq!(error.to_string(), "xxxxxxxxxx … [cut at 10 of 100 bytes]");
        let error = CallError::Transport(long).bounded(10);
        assert!(error.to_string().ends_with("[cut at 10 of 100 bytes]"));
    }
}
