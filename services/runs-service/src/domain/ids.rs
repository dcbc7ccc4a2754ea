//! The ids of agents, threads, messages and runs: UUIDs, parsed once at the
//! inbound boundary so that the domain's signatures say which id they take.
//! Stored and serialized as their hyphenated lowercase text.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use switchboard_server::FieldViolation;
use uuid::Uuid;

/// An id type of runs-service.
pub trait ParsedId: Sized {
    /// Parses the id of request field `field`.
    fn parse(field: &str, value: &str) -> Result<Self, FieldViolation>;
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(into = "String", try_from = "String")]
        pub struct $name(Uuid);

        // No `Default`: a default id would be a fresh one, and an
        // `unwrap_or_default()` would then invent an id where none was.
        #[allow(clippy::new_without_default)]
        impl $name {
            /// A new, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// A fixed id, for tests that name their rows.
            #[cfg(test)]
            #[allow(dead_code, reason = "not every id's tests name fixed rows")]
            pub(crate) const fn fixed(value: u128) -> Self {
                Self(Uuid::from_u128(value))
            }
        }

        impl ParsedId for $name {
            fn parse(field: &str, value: &str) -> Result<Self, FieldViolation> {
                value
                    .parse()
                    .map_err(|_| FieldViolation::new(field, concat!("must be ", $what, " id (a UUID)")))
            }
        }

        /// Reads a stored id; any spelling of a UUID.
        impl FromStr for $name {
            type Err = uuid::Error;

            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(value).map(Self)
            }
        }

        impl TryFrom<String> for $name {
            type Error = uuid::Error;

            fn try_from(value: String) -> Result<Self, Self::Error> {
                value.parse()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.to_string()
            }
        }
    };
}

id_type!(
    /// Names an agent within its organization.
    AgentId,
    "an agent"
);
id_type!(
    /// Names a thread; every message and run belongs to one.
    ThreadId,
    "a thread"
);
id_type!(
    /// Names a message of a thread.
    MessageId,
    "a message"
);
id_type!(
    /// Names a run; its events and lease are keyed by it.
    RunId,
    "a run"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuids_in_one_spelling() {
        let id =
            ThreadId::parse("thread_id", "0192F0C4-7A3B-7C3D-8E4F-0123456789AB").expect("a UUID");
        assert_eq!(id.to_string(), "0192f0c4-7a3b-7c3d-8e4f-0123456789ab");
        let refused = RunId::parse("id", "run-1").expect_err("not a UUID");
        assert_eq!(refused.field, "id");
        assert_eq!(refused.description, "must be a run id (a UUID)");
    }

    #[test]
    fn ids_serialize_as_their_stored_text() {
        let id: RunId = "0192f0c4-7a3b-7c3d-8e4f-0123456789ab"
            .parse()
            .expect("a UUID");
        let json = serde_json::to_string(&id).expect("serializable");
        assert_eq!(json, "\"0192f0c4-7a3b-7c3d-8e4f-0123456789ab\"");
        assert_eq!(serde_json::from_str::<RunId>(&json).expect("readable"), id);
        assert!(serde_json::from_str::<RunId>("\"run-1\"").is_err());
    }
}
