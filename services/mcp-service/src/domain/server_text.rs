//! Text a server (or its authorization server) wrote, bounded wherever it
//! lands: a JSON-RPC error's message, a transport failure's detail, an
//! error the domain records in the audit trail. The result-size limit bounds
//! results; this bounds everything said *about* a call.
//!
//! A cut text ends in a marker that states the bound and the text's whole
//! length, so that a reader (a person, a model) knows it was cut and by how
//! much.

use std::borrow::Cow;

use serde_json::Value;

use super::{
    bounds::CallBounds,
    downstream::QuestionKind,
    notices::{Notice, NoticeKind},
    ports::CallError,
};

/// The default of the bound on a server's text, in bytes: a readable
/// paragraph or a short stack trace, far below what any log line, audit
/// row or model context should carry of one error.
pub const DEFAULT_MAX_SERVER_TEXT_BYTES: usize = 4096;

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

/// The most bytes of one notice (a log message, a resource update) held
/// for a client session, as JSON: four times the text bound, so a log
/// message's structured `data` keeps its shape when it is small.
pub const MAX_NOTICE_BYTES: usize = 4 * DEFAULT_MAX_SERVER_TEXT_BYTES;

/// `notice` within [`MAX_NOTICE_BYTES`]: a log message whose `data` is
/// larger gets it as text, cut and marked; a notice still past the bound
/// (a resource URI past its own) is dropped, `None`.
pub fn bounded_notice(mut notice: Notice) -> Option<Notice> {
    if json_within(&notice.params, MAX_NOTICE_BYTES) {
        return Some(notice);
    }
    if notice.kind == NoticeKind::Log
        && let Some(params) = notice.params.as_object_mut()
    {
        for field in ["data", "logger"] {
            if let Some(value) = params.get_mut(field) {
                let text = match &mut *value {
                    Value::String(text) => std::mem::take(text),
                    other => other.to_string(),
                };
                *value = Value::String(bounded(&text, DEFAULT_MAX_SERVER_TEXT_BYTES).into_owned());
            }
        }
    }
    json_within(&notice.params, MAX_NOTICE_BYTES).then_some(notice)
}

/// An elicitation's `message` (the text a user reads) cut to the text
/// bound; its form and the other questions' params are bounded by the
/// message size of the session they came on.
pub fn bound_question(kind: QuestionKind, params: &mut Value) {
    if kind != QuestionKind::Elicitation {
        return;
    }
    if let Some(Value::String(message)) = params.get_mut("message") {
        bound_in_place(message, DEFAULT_MAX_SERVER_TEXT_BYTES);
    }
}

/// Whether `value`'s JSON text is at most `max` bytes.
fn json_within(value: &Value, max: usize) -> bool {
    let bounds = CallBounds {
        max_arguments_bytes: max,
        ..CallBounds::default()
    };
    bounds.check_arguments("", value).is_ok()
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
    fn a_log_notice_past_the_bound_keeps_its_data_as_cut_text() {
        let notice = Notice {
            kind: NoticeKind::Log,
            params: serde_json::json!({"level": "info", "data": {"blob": "x".repeat(100_000)}}),
        };
        let bounded = bounded_notice(notice).expect("kept");
        let data = bounded.params["data"].as_str().expect("text");
        assert!(data.len() < DEFAULT_MAX_SERVER_TEXT_BYTES + 64, "{}", data.len());
        assert!(data.ends_with("bytes]"), "{data}");
        assert_eq!(bounded.params["level"], "info");
        let update = Notice {
            kind: NoticeKind::ResourceUpdated,
            params: serde_json::json!({"uri": "x".repeat(100_000)}),
        };
        assert_eq!(bounded_notice(update), None);
    }

    #[test]
    fn an_elicitations_message_is_cut() {
        let mut params = serde_json::json!({"message": "m".repeat(10_000), "requestedSchema": {}});
        bound_question(QuestionKind::Elicitation, &mut params);
        assert!(params["message"].as_str().expect("text").ends_with("of 10000 bytes]"));
    }

    #[test]
    fn every_text_of_a_call_error_is_cut() {
        let long = "x".repeat(100);
        let error = CallError::Upstream {
            code: -32000,
            message: long.clone(),
        }
        .bounded(10);
        assert_eq!(
            error.to_string(),
            "xxxxxxxxxx … [cut at 10 of 100 bytes]"
        );
        let error = CallError::Transport(long).bounded(10);
        assert!(error.to_string().ends_with("[cut at 10 of 100 bytes]"));
    }
}
