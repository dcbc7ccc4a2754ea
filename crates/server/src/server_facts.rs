//! What an MCP server's failure was, as facts rather than sentences.
//!
//! mcp-service refuses a resource read or a prompt the server failed with a
//! status whose message is written for people; the facts travel beside it
//! in the `google.rpc.ErrorInfo` metadata, so that a client (runs-service,
//! writing for a model) words them itself and never parses a message.
//! Numbers travel as decimal text, the lower layer's words as they were
//! written; a client reading a status from elsewhere bounds what it keeps.

use std::{collections::HashMap, time::Duration};

/// The metadata key naming which fact a status carries.
const KIND: &str = "server_failure";
/// The metadata key of the lower layer's words.
const DETAIL: &str = "detail";
/// The metadata key of a JSON-RPC error's code.
const JSONRPC_CODE: &str = "jsonrpc_code";
/// The metadata key of a time limit, in nanoseconds.
const TIMEOUT_NANOS: &str = "timeout_nanos";
/// The metadata key of a size limit, in bytes.
const LIMIT_BYTES: &str = "limit_bytes";

/// The most of a `detail` a client keeps: an error message, not a payload.
pub const MAX_DETAIL_BYTES: usize = 4096;

/// Why an MCP server's answer never came, or came as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerFacts {
    /// The server did not answer within this limit.
    Timeout(Duration),
    /// The answer was larger than mcp-service accepts, in bytes.
    TooLarge {
        /// The limit.
        limit_bytes: u64,
    },
    /// The server could not be reached; nothing was delivered.
    Unreachable {
        /// The connection's words.
        detail: String,
    },
    /// The connection broke during the call.
    ConnectionLost {
        /// The connection's words.
        detail: String,
    },
    /// The server answered with a JSON-RPC error.
    JsonRpc {
        /// Its code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// A listing went past a bound of mcp-service.
    ListingBound {
        /// Which bound.
        detail: String,
    },
    /// A limit of mcp-service was reached; nothing reached the server. When
    /// to try again travels as the status's `RetryInfo`.
    LimitReached {
        /// Which limit.
        detail: String,
    },
}

impl ServerFacts {
    /// The facts as `ErrorInfo` metadata entries.
    pub(crate) fn to_metadata(&self) -> HashMap<String, String> {
        let entry = |key: &str, value: String| (key.to_owned(), value);
        let (kind, rest) = match self {
            Self::Timeout(limit) => (
                "timeout",
                vec![entry(TIMEOUT_NANOS, limit.as_nanos().to_string())],
            ),
            Self::TooLarge { limit_bytes } => (
                "too_large",
                vec![entry(LIMIT_BYTES, limit_bytes.to_string())],
            ),
            Self::Unreachable { detail } => ("unreachable", vec![entry(DETAIL, detail.clone())]),
            Self::ConnectionLost { detail } => {
                ("connection_lost", vec![entry(DETAIL, detail.clone())])
            }
            Self::JsonRpc { code, message } => (
                "jsonrpc",
                vec![
                    entry(JSONRPC_CODE, code.to_string()),
                    entry(DETAIL, message.clone()),
                ],
            ),
            Self::ListingBound { detail } => ("listing_bound", vec![entry(DETAIL, detail.clone())]),
            Self::LimitReached { detail } => ("limit_reached", vec![entry(DETAIL, detail.clone())]),
        };
        std::iter::once(entry(KIND, kind.to_owned()))
            .chain(rest)
            .collect()
    }

    /// The facts `metadata` carries; `None` when it names none, or names
    /// them with a number that does not parse (a status from elsewhere is
    /// then read by its code alone). A detail is cut at
    /// [`MAX_DETAIL_BYTES`], on a character boundary.
    pub(crate) fn from_metadata(metadata: &HashMap<String, String>) -> Option<Self> {
        let detail = || bounded(metadata.get(DETAIL).map_or("", String::as_str));
        let number = |key: &str| metadata.get(key)?.parse::<u64>().ok();
        Some(match metadata.get(KIND)?.as_str() {
            "timeout" => Self::Timeout(Duration::from_nanos(number(TIMEOUT_NANOS)?)),
            "too_large" => Self::TooLarge {
                limit_bytes: number(LIMIT_BYTES)?,
            },
            "unreachable" => Self::Unreachable { detail: detail() },
            "connection_lost" => Self::ConnectionLost { detail: detail() },
            "jsonrpc" => Self::JsonRpc {
                code: metadata.get(JSONRPC_CODE)?.parse().ok()?,
                message: detail(),
            },
            "listing_bound" => Self::ListingBound { detail: detail() },
            "limit_reached" => Self::LimitReached { detail: detail() },
            _ => return None,
        })
    }
}

/// `text`, cut at [`MAX_DETAIL_BYTES`] on a character boundary.
fn bounded(text: &str) -> String {
    let mut end = text.len().min(MAX_DETAIL_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every() -> Vec<ServerFacts> {
        vec![
            ServerFacts::Timeout(Duration::from_nanos(1_500_000_001)),
            ServerFacts::TooLarge {
                limit_bytes: u64::MAX,
            },
            ServerFacts::Unreachable {
                detail: "connection refused".into(),
            },
            ServerFacts::ConnectionLost {
                detail: "reset".into(),
            },
            ServerFacts::JsonRpc {
                code: i32::MIN,
                message: "bad params: ünïcode".into(),
            },
            ServerFacts::ListingBound {
                detail: "more than 1000 tools".into(),
            },
            ServerFacts::LimitReached {
                detail: "all sessions are busy".into(),
            },
        ]
    }

    #[test]
    fn every_fact_reads_back_as_itself() {
        for facts in every() {
            let metadata = facts.to_metadata();
            assert_eq!(ServerFacts::from_metadata(&metadata), Some(facts));
        }
    }

    #[test]
    fn a_foreign_or_broken_status_carries_no_facts() {
        let read = |pairs: &[(&str, &str)]| {
            let metadata = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            ServerFacts::from_metadata(&metadata)
        };
        assert_eq!(read(&[]), None);
        assert_eq!(read(&[(KIND, "meteor")]), None);
        assert_eq!(read(&[(KIND, "timeout"), (TIMEOUT_NANOS, "-1")]), None);
        assert_eq!(read(&[(KIND, "too_large"), (LIMIT_BYTES, "1e9")]), None);
        assert_eq!(
            read(&[(KIND, "jsonrpc"), (JSONRPC_CODE, "99999999999")]),
            None
        );
    }

    #[test]
    fn a_detail_past_its_bound_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_DETAIL_BYTES);
        let metadata = ServerFacts::ConnectionLost { detail: long }.to_metadata();
        let Some(ServerFacts::ConnectionLost { detail }) = ServerFacts::from_metadata(&metadata)
        else {
            panic!("read back");
        };
        assert_eq!(detail.len(), MAX_DETAIL_BYTES);
        assert!(detail.chars().all(|c| c == 'é'));
    }
}
