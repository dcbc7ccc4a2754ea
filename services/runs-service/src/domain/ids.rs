//! The ids of agents, threads, messages, runs and data sources, and of
//! mcp-service's integrations: UUIDs, parsed once where they enter (a
//! request, a model's arguments) so that the domain's signatures say which
//! id they take. Stored and serialized as their hyphenated lowercase text.

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
    // An id runs-service makes for what it creates.
    ($(#[$doc:meta])* minted $name:ident, $what:literal) => {
        id_type!($(#[$doc])* $name, $what);

        // No `Default`: a default id would be a fresh one, and an
        // `unwrap_or_default()` would then invent an id where none was.
        #[allow(clippy::new_without_default)]
        impl $name {
            /// A new, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
        }
    };
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(into = "String", try_from = "String")]
        pub struct $name(Uuid);

        impl $name {
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
    minted AgentId,
    "an agent"
);
id_type!(
    /// Names a thread; every message and run belongs to one.
    minted ThreadId,
    "a thread"
);
id_type!(
    /// Names a message of a thread.
    minted MessageId,
    "a message"
);
id_type!(
    /// Names a run; its events and lease are keyed by it.
    minted RunId,
    "a run"
);
id_type!(
    /// Names a data source (a table imported into a thread).
    minted DataSourceId,
    "a data source"
);
id_type!(
    /// Names an integration of mcp-service, which makes these ids:
    /// runs-service only reads them (from its callers, from a model's
    /// arguments) and never makes one up, hence no `new`.
    IntegrationId,
    "an integration"
);

impl From<Uuid> for IntegrationId {
    /// An integration id mcp-service made (tests take theirs from it).
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

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
    fn integration_and_data_source_ids_are_refused_by_field_when_not_uuids() {
        let refused =
            IntegrationId::parse("agent.mcp_integration_ids[0]", "github").expect_err("not a UUID");
        assert_eq!(refused.field, "agent.mcp_integration_ids[0]");
        assert_eq!(refused.description, "must be an integration id (a UUID)");
        let refused = DataSourceId::parse("id", "sales").expect_err("not a UUID");
        assert_eq!(refused.description, "must be a data source id (a UUID)");
        let id = IntegrationId::parse("id", "{0192F0C4-7A3B-7C3D-8E4F-0123456789AB}")
            .expect("a braced UUID");
        assert_eq!(id.to_string(), "0192f0c4-7a3b-7c3d-8e4f-0123456789ab");
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
