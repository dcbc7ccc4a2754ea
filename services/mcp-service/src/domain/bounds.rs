//! The bounds of what a caller sends with a call, enforced by the domain so
//! that every front door (gRPC, the MCP endpoint, any added later) inherits
//! them: a front door cannot make a [`ToolCall`], a [`PromptCall`] or a
//! [`ResourceQuery`] without parsing its name or URI here, and
//! [`CallService`] checks the session scope and the size of the arguments
//! before anything is recorded, logged or sent.
//!
//! The names and URIs are identifiers with generous fixed bounds (the MCP
//! specification limits tool names to 128 characters); the arguments are a
//! payload, bounded by a setting ([`CallBounds`]).
//!
//! This module names nothing else of the domain: every other module may
//! look down to it.
//!
//! [`ToolCall`]: super::ports::ToolCall
//! [`PromptCall`]: super::calls::PromptCall
//! [`ResourceQuery`]: super::calls::ResourceQuery
//! [`CallService`]: super::calls::CallService

use std::{fmt, io, ops::Deref};

use serde::Serialize;
use switchboard_server::FieldViolation;

/// One bound: what it bounds and its largest size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// What is bounded, as the refusal names it.
    pub what: &'static str,
    /// The most bytes accepted.
    pub max_bytes: usize,
}

/// A tool's name.
pub const TOOL_NAME: Bound = Bound {
    what: "tool name",
    max_bytes: 1024,
};
/// A prompt's name.
pub const PROMPT_NAME: Bound = Bound {
    what: "prompt name",
    max_bytes: 1024,
};
/// A resource's URI or URI template.
pub const RESOURCE_URI: Bound = Bound {
    what: "resource URI",
    max_bytes: 8 * 1024,
};
/// A call's session scope: part of the key of an upstream session, held
/// as long as the session lives (a thread id is 36 bytes).
pub const SESSION_SCOPE: Bound = Bound {
    what: "session scope",
    max_bytes: 1024,
};
/// A server's task id a resumed call answers.
pub const TASK_ID: Bound = Bound {
    what: "task id",
    max_bytes: 1024,
};

/// The default of [`CallBounds::max_server_text_bytes`]: a readable
/// paragraph or a short stack trace, far below what any log line, audit
/// row or model context should carry of one error.
pub const DEFAULT_MAX_SERVER_TEXT_BYTES: usize = 4096;

/// The default of [`CallBounds::max_arguments_bytes`].
pub const DEFAULT_MAX_ARGUMENTS_BYTES: usize = 1 << 20;

/// The bounds that are settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBounds {
    /// The most bytes of a call's arguments (a tool's arguments, a prompt's
    /// arguments or a template's parameters) and of the caller's answers,
    /// each as JSON text.
    pub max_arguments_bytes: usize,
    /// The most bytes of a server's text about a call (an error's message,
    /// a failure's detail) passed on, logged or recorded; past it the text
    /// is cut and marked (see [`server_text`](super::server_text)).
    pub max_server_text_bytes: usize,
}

impl Default for CallBounds {
    fn default() -> Self {
        Self {
            max_arguments_bytes: DEFAULT_MAX_ARGUMENTS_BYTES,
            max_server_text_bytes: DEFAULT_MAX_SERVER_TEXT_BYTES,
        }
    }
}

impl CallBounds {
    /// Refuses `value` (arguments, parameters, answers) when its JSON text
    /// is longer than the bound.
    pub fn check_arguments(
        &self,
        field: &str,
        value: &impl Serialize,
    ) -> Result<(), FieldViolation> {
        if json_within(value, self.max_arguments_bytes) {
            return Ok(());
        }
        Err(FieldViolation::new(
            field,
            format!("is longer than {} bytes", self.max_arguments_bytes),
        ))
    }
}

/// Whether `value`'s JSON text is at most `max` bytes: counted without
/// building the text, and stopped at the bound.
pub fn json_within(value: &impl Serialize, max: usize) -> bool {
    let mut counter = Counter { written: 0, max };
    serde_json::to_writer(&mut counter, value).is_ok()
}

/// Counts bytes written, failing past `max`.
struct Counter {
    written: usize,
    max: usize,
}

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.written += buf.len();
        if self.written > self.max {
            return Err(io::Error::other("past the bound"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Bound {
    /// Refuses `value` for `field` when it is empty or longer than the bound.
    pub fn check(&self, field: &str, value: &str) -> Result<(), FieldViolation> {
        if value.is_empty() {
            return Err(FieldViolation::new(field, "is required"));
        }
        self.check_optional(field, value)
    }

    /// Refuses `value` for `field` when it is longer than the bound; empty
    /// is allowed.
    pub fn check_optional(&self, field: &str, value: &str) -> Result<(), FieldViolation> {
        if value.len() > self.max_bytes {
            return Err(FieldViolation::new(
                field,
                format!("is longer than {} bytes", self.max_bytes),
            ));
        }
        Ok(())
    }
}

/// A text within a [`Bound`], parsed once at the front door.
macro_rules! bounded_text {
    ($(#[$doc:meta])* $name:ident, $bound:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// The bound it is within.
            pub const BOUND: Bound = $bound;

            /// `value` of `field`, refused when empty or past the bound.
            pub fn parse(field: &str, value: impl Into<String>) -> Result<Self, FieldViolation> {
                let value = value.into();
                Self::BOUND.check(field, &value)?;
                Ok(Self(value))
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }
    };
}

bounded_text!(
    /// A tool's name as a caller sends it, within [`TOOL_NAME`].
    ToolName,
    TOOL_NAME
);
bounded_text!(
    /// A prompt's name as a caller sends it, within [`PROMPT_NAME`].
    PromptName,
    PROMPT_NAME
);
bounded_text!(
    /// A resource URI or URI template as a caller sends it, within
    /// [`RESOURCE_URI`].
    ResourceUri,
    RESOURCE_URI
);

/// Every bound of a call, for documentation and for the tests that hold
/// each front door to it.
pub const TABLE: [Bound; 5] = [TOOL_NAME, PROMPT_NAME, RESOURCE_URI, SESSION_SCOPE, TASK_ID];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_text_at_its_bound_passes_and_one_byte_more_is_refused() {
        for bound in TABLE {
            assert!(bound.check("f", &"a".repeat(bound.max_bytes)).is_ok());
            let refused = bound.check("f", &"a".repeat(bound.max_bytes + 1));
            assert!(refused.is_err(), "{bound:?}");
            assert!(bound.check("f", "").is_err());
            assert!(bound.check_optional("f", "").is_ok());
        }
        assert!(ToolName::parse("name", "a".repeat(1025)).is_err());
        assert_eq!(
            ToolName::parse("name", "echo").expect("a name").as_str(),
            "echo"
        );
    }

    #[test]
    fn arguments_are_counted_as_json_up_to_the_bound() {
        let bounds = CallBounds {
            max_arguments_bytes: 16,
            ..CallBounds::default()
        };
        // {"a":"0123456"} is 15 bytes, {"a":"01234567"} 16, one more 17.
        assert!(
            bounds
                .check_arguments("arguments", &json!({"a": "0123456"}))
                .is_ok()
        );
        assert!(
            bounds
                .check_arguments("arguments", &json!({"a": "01234567"}))
                .is_ok()
        );
        assert!(
            bounds
                .check_arguments("arguments", &json!({"a": "012345678"}))
                .is_err()
        );
    }
}
