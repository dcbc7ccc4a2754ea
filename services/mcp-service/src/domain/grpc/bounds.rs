//! The bounds of a gRPC integration's descriptors, and how a set or a
//! method is refused.

/// The bounds of a gRPC integration's descriptors and answers, set per
/// deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcLimits {
    /// Largest encoded descriptor set (uploaded, or gathered by
    /// reflection), in bytes.
    pub max_descriptor_bytes: usize,
    /// Most methods in a descriptor set.
    pub max_methods: usize,
    /// Most nodes of one method's input schema.
    pub max_schema_nodes: usize,
    /// Deepest nesting of messages in one method's input schema.
    pub max_schema_depth: usize,
    /// Most values of one enum.
    pub max_enum_values: usize,
    /// Most messages of a server-streaming call kept for its result.
    pub max_stream_messages: usize,
}

impl Default for GrpcLimits {
    /// 4 MiB, 1,000 methods, 10,000 schema nodes, 32 levels, 1,000 enum
    /// values, 100 streamed messages.
    fn default() -> Self {
        Self {
            max_descriptor_bytes: 4 * 1024 * 1024,
            max_methods: 1000,
            max_schema_nodes: 10_000,
            max_schema_depth: 32,
            max_enum_values: 1000,
            max_stream_messages: 100,
        }
    }
}

/// Why a descriptor set (or one of its methods) is refused: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct SchemaError {
    /// The descriptor set, or the method (`pkg.Service/Method`).
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl SchemaError {
    pub(super) fn at(at: &str, message: impl Into<String>) -> Self {
        Self {
            at: at.to_owned(),
            message: message.into(),
        }
    }
}

/// Why a method is not offered: the set is refused, or the one method is
/// left out.
#[derive(Debug)]
pub(super) enum Skip {
    /// The whole set is refused.
    Refused(SchemaError),
    /// The one method is left out.
    Unsupported(SchemaError),
}
