//! The settings of OpenAPI integrations: the bounds of the documents they
//! are read from, and how long one given by URL may take to fetch.

use crate::domain::openapi::OpenApiLimits;

/// How many integrations' documents are kept read, by default.
const DOCUMENTS_CACHED: usize = 256;

/// OpenAPI documents' bounds.
#[derive(Debug, Clone, clap::Args)]
pub struct OpenApiArgs {
    /// Largest OpenAPI document an integration may hold, in bytes.
    #[arg(
        long = "openapi-max-document-bytes",
        env = "SWITCHBOARD_OPENAPI_MAX_DOCUMENT_BYTES",
        default_value_t = OpenApiLimits::default().max_document_bytes
    )]
    pub max_document_bytes: usize,
    /// Most operations in one document.
    #[arg(
        long = "openapi-max-operations",
        env = "SWITCHBOARD_OPENAPI_MAX_OPERATIONS",
        default_value_t = OpenApiLimits::default().max_operations
    )]
    pub max_operations: usize,
    /// Most nodes of one operation's input schema once its `$ref`s are
    /// inlined.
    #[arg(
        long = "openapi-max-schema-nodes",
        env = "SWITCHBOARD_OPENAPI_MAX_SCHEMA_NODES",
        default_value_t = OpenApiLimits::default().max_schema_nodes
    )]
    pub max_schema_nodes: usize,
    /// Deepest nesting of one operation's input schema.
    #[arg(
        long = "openapi-max-schema-depth",
        env = "SWITCHBOARD_OPENAPI_MAX_SCHEMA_DEPTH",
        default_value_t = OpenApiLimits::default().max_schema_depth
    )]
    pub max_schema_depth: usize,
    /// Most OpenAPI integrations whose documents are kept read; past it the
    /// least recently used is read again when next called.
    #[arg(
        long = "openapi-documents-cached",
        env = "SWITCHBOARD_OPENAPI_DOCUMENTS_CACHED",
        default_value_t = DOCUMENTS_CACHED
    )]
    pub documents_cached: usize,
    /// Longest a document given by URL may take to fetch.
    #[arg(
        long = "openapi-fetch-timeout",
        env = "SWITCHBOARD_OPENAPI_FETCH_TIMEOUT",
        default_value = "10s",
        value_parser = humantime::parse_duration
    )]
    pub fetch_timeout: std::time::Duration,
}

impl Default for OpenApiArgs {
    fn default() -> Self {
        let limits = OpenApiLimits::default();
        Self {
            max_document_bytes: limits.max_document_bytes,
            max_operations: limits.max_operations,
            max_schema_nodes: limits.max_schema_nodes,
            max_schema_depth: limits.max_schema_depth,
            documents_cached: DOCUMENTS_CACHED,
            fetch_timeout: std::time::Duration::from_secs(10),
        }
    }
}

impl OpenApiArgs {
    /// How many integrations' documents are kept read (at least one).
    pub fn documents_cached(&self) -> std::num::NonZeroUsize {
        std::num::NonZeroUsize::new(self.documents_cached).unwrap_or(std::num::NonZeroUsize::MIN)
    }

    /// The bounds these settings give.
    pub fn limits(&self) -> OpenApiLimits {
        OpenApiLimits {
            max_document_bytes: self.max_document_bytes,
            max_operations: self.max_operations,
            max_schema_nodes: self.max_schema_nodes,
            max_schema_depth: self.max_schema_depth,
        }
    }
}
