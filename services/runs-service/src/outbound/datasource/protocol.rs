//! What the service and a query's worker process say to each other.
//!
//! The service writes one request to the worker's stdin: a JSON line (the
//! SQL, the limits, the names and sizes of the tables it names, and for a
//! table in a store its object's key and how to reach the store), then the
//! stored bytes of each table held in the database, in that order; a
//! table in a store the worker reads from there. The worker writes one JSON response
//! to stdout and exits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Stored, objects::StoreAccess};
use crate::domain::datasource::{QueryError, QueryLimits, QueryResult, Refusal};

/// Longest request line a worker reads: the SQL (at most 64 KiB) and the
/// table names.
pub(super) const MAX_HEADER_BYTES: usize = 1024 * 1024;

/// Longest message a worker sends for a failed query; the engine's words
/// can quote the whole query.
pub(super) const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// One query for a worker.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    pub sql: String,
    pub limits: Limits,
    /// Parallelism of the query.
    pub partitions: usize,
    /// The nice value the worker runs at, at least (the service's
    /// data-source threads').
    #[serde(default)]
    pub priority: i32,
    /// Whether the worker runs in the kernel's idle class, as the
    /// service's data-source threads do.
    #[serde(default)]
    pub idle: bool,
    /// The store the tables with an object are read from, as the operator
    /// configured it.
    #[serde(default)]
    pub store: Option<StoreAccess>,
    /// The tables, in the order their bytes follow.
    pub tables: Vec<TableHeader>,
}

/// A table: its stored bytes follow the request line, or it is an object.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct TableHeader {
    pub name: String,
    /// Its stored size.
    pub bytes: usize,
    /// The key of the object that holds it; no bytes follow for it.
    #[serde(default)]
    pub object: Option<String>,
}

impl TableHeader {
    /// The header of the table `name` stored as `stored`.
    pub fn of(name: &str, stored: &Stored) -> Self {
        match stored {
            Stored::Bytes(content) => Self {
                name: name.to_owned(),
                bytes: content.len(),
                object: None,
            },
            Stored::Object { key, bytes } => Self {
                name: name.to_owned(),
                bytes: usize::try_from(*bytes).unwrap_or(usize::MAX),
                object: Some(key.clone()),
            },
        }
    }
}

/// [`QueryLimits`] on the wire.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct Limits {
    pub timeout_ms: u64,
    pub memory_bytes: usize,
    pub max_rows: usize,
    pub max_cell_chars: usize,
    pub max_result_bytes: usize,
    pub max_value_bytes: usize,
    pub process_memory_bytes: usize,
}

impl From<&QueryLimits> for Limits {
    fn from(limits: &QueryLimits) -> Self {
        Self {
            timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
            memory_bytes: limits.memory_bytes,
            max_rows: limits.max_rows,
            max_cell_chars: limits.max_cell_chars,
            max_result_bytes: limits.max_result_bytes,
            max_value_bytes: limits.max_value_bytes,
            process_memory_bytes: limits.process_memory_bytes,
        }
    }
}

impl From<Limits> for QueryLimits {
    fn from(limits: Limits) -> Self {
        Self {
            timeout: Duration::from_millis(limits.timeout_ms),
            memory_bytes: limits.memory_bytes,
            max_rows: limits.max_rows,
            max_cell_chars: limits.max_cell_chars,
            max_result_bytes: limits.max_result_bytes,
            max_value_bytes: limits.max_value_bytes,
            process_memory_bytes: limits.process_memory_bytes,
        }
    }
}

/// A worker's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum Response {
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<String>>,
        truncated: bool,
    },
    Refused {
        refusal: Refusal,
    },
    Engine {
        message: String,
    },
    OutOfMemory {
        limit_bytes: usize,
    },
    Timeout,
    Internal {
        message: String,
    },
}

impl From<Result<QueryResult, QueryError>> for Response {
    fn from(outcome: Result<QueryResult, QueryError>) -> Self {
        match outcome {
            Ok(result) => Self::Rows {
                columns: result.columns,
                rows: result.rows,
                truncated: result.truncated,
            },
            Err(QueryError::Refused(refusal)) => Self::Refused {
                refusal: cut_refusal(refusal),
            },
            Err(QueryError::Engine(message)) => Self::Engine {
                message: cut(message),
            },
            Err(QueryError::OutOfMemory { limit_bytes }) => Self::OutOfMemory { limit_bytes },
            Err(QueryError::Timeout(_)) => Self::Timeout,
            Err(QueryError::Internal(error)) => Self::Internal {
                message: cut(format!("{error:#}")),
            },
        }
    }
}

impl Response {
    /// The query's outcome, as the adapter returns it.
    pub fn into_outcome(self, limits: &QueryLimits) -> Result<QueryResult, QueryError> {
        match self {
            Self::Rows {
                columns,
                rows,
                truncated,
            } => Ok(QueryResult {
                columns,
                rows,
                truncated,
            }),
            Self::Refused { refusal } => Err(QueryError::Refused(refusal)),
            Self::Engine { message } => Err(QueryError::Engine(message)),
            Self::OutOfMemory { limit_bytes } => Err(QueryError::OutOfMemory { limit_bytes }),
            Self::Timeout => Err(QueryError::Timeout(limits.timeout)),
            Self::Internal { message } => Err(QueryError::Internal(anyhow::anyhow!(message))),
        }
    }
}

/// `refusal` with the words it quotes (a name, the engine's message) cut to
/// [`MAX_MESSAGE_BYTES`].
fn cut_refusal(refusal: Refusal) -> Refusal {
    match refusal {
        Refusal::NotReadOnly(what) => Refusal::NotReadOnly(cut(what)),
        Refusal::FunctionNotAvailable(name) => Refusal::FunctionNotAvailable(cut(name)),
        Refusal::NonConstantArguments(name) => Refusal::NonConstantArguments(cut(name)),
        Refusal::NotAllowed(message) => Refusal::NotAllowed(cut(message)),
        other => other,
    }
}

/// `message` cut to [`MAX_MESSAGE_BYTES`] on a character boundary.
fn cut(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut at = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(at) {
            at -= 1;
        }
        message.truncate(at);
        message.push('…');
    }
    message
}

/// The most bytes a worker's response can take: the rendered result
/// escaped as JSON (at most six bytes per byte), a message, and framing.
pub(super) fn max_response_bytes(limits: &QueryLimits) -> usize {
    limits
        .max_result_bytes
        .saturating_add(MAX_MESSAGE_BYTES)
        .saturating_mul(6)
        .saturating_add(limits.max_rows.saturating_mul(8))
        .saturating_add(4096)
}
