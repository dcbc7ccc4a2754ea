//! The ids of agents, threads and runs: UUIDs, parsed once at the inbound
//! boundary so that the domain's signatures say which id they take.

use std::{fmt, ops::Deref};

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
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl ParsedId for $name {
            fn parse(field: &str, value: &str) -> Result<Self, FieldViolation> {
                Uuid::parse_str(value)
                    .map(|id| Self(id.hyphenated().to_string()))
                    .map_err(|_| FieldViolation::new(field, concat!("must be ", $what, " id (a UUID)")))
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }
    };
}

id_type!(
    /// An agent's id.
    AgentId,
    "an agent"
);
id_type!(
    /// A thread's id.
    ThreadId,
    "a thread"
);
id_type!(
    /// A run's id.
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
        assert_eq!(&*id, "0192f0c4-7a3b-7c3d-8e4f-0123456789ab");
        let refused = RunId::parse("id", "run-1").expect_err("not a UUID");
        assert_eq!(refused.field, "id");
        assert_eq!(refused.description, "must be a run id (a UUID)");
    }
}
