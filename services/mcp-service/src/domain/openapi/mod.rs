//! OpenAPI integrations: an HTTP API described by an OpenAPI 3.0 or 3.1
//! document, each operation offered as a tool. A document is hostile until
//! bounded: its size, its number of operations, and each operation's input
//! schema once its `$ref`s are inlined ([`schema`]) are bounded, and a
//! `$ref` cycle is refused with the path it takes. An operation this
//! mapping cannot offer (a cookie parameter, a body that is not JSON, a
//! header it must not set) is left out, with why ([`ApiDocument::skipped`]).
//!
//! The document is read as JSON or YAML into a JSON value, not through a
//! typed OpenAPI model: the typed crates each read one of the two versions,
//! and the mapping reads only `servers`, `paths`, their parameters and JSON
//! request bodies, with bounds no model applies. YAML's anchors and aliases
//! are bounded while it is read ([`yaml`]), before any of it is a value.

mod operation;
pub mod request;
mod schema;
#[cfg(test)]
mod tests;
mod yaml;

use serde_json::Value;

pub use operation::{Location, Operation, Parameter};

/// The bounds of a document, set per deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenApiLimits {
    /// Largest document, in bytes.
    pub max_document_bytes: usize,
    /// Most operations in a document.
    pub max_operations: usize,
    /// Most nodes of one operation's input schema, its `$ref`s inlined.
    pub max_schema_nodes: usize,
    /// Deepest nesting of one operation's input schema.
    pub max_schema_depth: usize,
}

impl Default for OpenApiLimits {
    /// 4 MiB, 1,000 operations, 10,000 schema nodes, 64 levels.
    fn default() -> Self {
        Self {
            max_document_bytes: 4 * 1024 * 1024,
            max_operations: 1000,
            max_schema_nodes: 10_000,
            max_schema_depth: 64,
        }
    }
}

/// Why a document (or one of its operations) is refused: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct DocumentError {
    /// The document, or the operation (`GET /pets/{id}`).
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl DocumentError {
    fn at(at: &str, message: impl Into<String>) -> Self {
        Self {
            at: at.to_owned(),
            message: message.into(),
        }
    }
}

/// A document read: its servers and the operations offered as tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiDocument {
    /// The document's title.
    pub title: String,
    /// The absolute `http`/`https` URLs of its `servers`.
    pub servers: Vec<String>,
    /// The operations offered, ordered by tool name.
    pub operations: Vec<Operation>,
    /// The operations left out, with why.
    pub skipped: Vec<DocumentError>,
}

/// The HTTP methods whose operations are read.
const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

impl ApiDocument {
    /// Reads `text` as an OpenAPI 3.0 or 3.1 document (JSON, or YAML when
    /// it does not open with `{`), within `limits`.
    pub fn parse(text: &str, limits: &OpenApiLimits) -> Result<Self, DocumentError> {
        let document = read_document(text, limits)?;
        let paths = document["paths"]
            .as_object()
            .ok_or_else(|| DocumentError::at("document", "has no paths"))?;
        let count = paths
            .values()
            .filter_map(Value::as_object)
            .map(|item| METHODS.iter().filter(|m| item.contains_key(**m)).count())
            .sum::<usize>();
        if count > limits.max_operations {
            return Err(DocumentError::at(
                "document",
                format!(
                    "has {count} operations, more than {}",
                    limits.max_operations
                ),
            ));
        }
        let mut operations: Vec<Operation> = Vec::new();
        let mut skipped = Vec::new();
        for (path, item) in paths {
            for method in METHODS {
                let Some(spec) = item.get(method) else {
                    continue;
                };
                match Operation::read(&document, path, method, item, spec, limits) {
                    Ok(operation) if operations.iter().any(|o| o.tool == operation.tool) => {
                        skipped.push(DocumentError::at(
                            &operation.label(),
                            format!("its tool name {} is taken", operation.tool),
                        ));
                    }
                    Ok(operation) => operations.push(operation),
                    // A document that amplifies is refused whole.
                    Err(Skip::Refused(error)) => return Err(error),
                    Err(Skip::Unsupported(error)) => skipped.push(error),
                }
            }
        }
        operations.sort_by(|a, b| a.tool.cmp(&b.tool));
        Ok(Self {
            title: document["info"]["title"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            servers: servers(&document),
            operations,
            skipped,
        })
    }

    /// The operation offered as `tool`.
    pub fn operation(&self, tool: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.tool == tool)
    }
}

/// Why an operation is not offered: the document is refused, or the one
/// operation is left out.
#[derive(Debug)]
enum Skip {
    Refused(DocumentError),
    Unsupported(DocumentError),
}

/// `text` as an OpenAPI 3.0 or 3.1 document, JSON or YAML, within its size.
fn read_document(text: &str, limits: &OpenApiLimits) -> Result<Value, DocumentError> {
    if text.len() > limits.max_document_bytes {
        return Err(DocumentError::at(
            "document",
            format!(
                "is {} bytes, more than {}",
                text.len(),
                limits.max_document_bytes
            ),
        ));
    }
    let document: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| DocumentError::at("document", format!("is not JSON: {e}")))?
    } else {
        yaml::read(text).map_err(|e| DocumentError::at("document", e))?
    };
    let version = document["openapi"].as_str().unwrap_or_default();
    if !(version.starts_with("3.0.") || version.starts_with("3.1.")) {
        return Err(DocumentError::at(
            "document",
            format!("is OpenAPI {version:?}; 3.0 and 3.1 are read"),
        ));
    }
    Ok(document)
}

fn servers(document: &Value) -> Vec<String> {
    document["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["url"].as_str())
        .filter(|url| url.starts_with("https://") || url.starts_with("http://"))
        .map(|url| url.trim_end_matches('/').to_owned())
        .collect()
}
