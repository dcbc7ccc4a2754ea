//! The settings of gRPC integrations: the bounds of their descriptors and
//! of their streamed answers.

use crate::domain::grpc::GrpcLimits;

/// How many integrations' schemas and channels are kept, by default.
const SERVICES_CACHED: usize = 256;

/// gRPC integrations' bounds.
#[derive(Debug, Clone, clap::Args)]
pub struct GrpcArgs {
    /// Largest descriptor set of a gRPC integration (uploaded, or gathered
    /// from the server's reflection), in bytes.
    #[arg(
        id = "grpc_max_descriptor_bytes",
        long = "grpc-max-descriptor-bytes",
        env = "SWITCHBOARD_GRPC_MAX_DESCRIPTOR_BYTES",
        default_value_t = GrpcLimits::default().max_descriptor_bytes
    )]
    pub max_descriptor_bytes: usize,
    /// Most methods in one descriptor set.
    #[arg(
        id = "grpc_max_methods",
        long = "grpc-max-methods",
        env = "SWITCHBOARD_GRPC_MAX_METHODS",
        default_value_t = GrpcLimits::default().max_methods
    )]
    pub max_methods: usize,
    /// Most nodes of one method's input schema.
    #[arg(
        id = "grpc_max_schema_nodes",
        long = "grpc-max-schema-nodes",
        env = "SWITCHBOARD_GRPC_MAX_SCHEMA_NODES",
        default_value_t = GrpcLimits::default().max_schema_nodes
    )]
    pub max_schema_nodes: usize,
    /// Deepest nesting of messages in one method's input schema.
    #[arg(
        id = "grpc_max_schema_depth",
        long = "grpc-max-schema-depth",
        env = "SWITCHBOARD_GRPC_MAX_SCHEMA_DEPTH",
        default_value_t = GrpcLimits::default().max_schema_depth
    )]
    pub max_schema_depth: usize,
    /// Most values of one enum in an input schema.
    #[arg(
        id = "grpc_max_enum_values",
        long = "grpc-max-enum-values",
        env = "SWITCHBOARD_GRPC_MAX_ENUM_VALUES",
        default_value_t = GrpcLimits::default().max_enum_values
    )]
    pub max_enum_values: usize,
    /// Most messages of a server-streaming call kept for its result; the
    /// stream is ended there and the result says so.
    #[arg(
        id = "grpc_max_stream_messages",
        long = "grpc-max-stream-messages",
        env = "SWITCHBOARD_GRPC_MAX_STREAM_MESSAGES",
        default_value_t = GrpcLimits::default().max_stream_messages
    )]
    pub max_stream_messages: usize,
    /// Most gRPC integrations whose schema and channel are kept; past it the
    /// least recently used is read (and connected) again when next called.
    #[arg(
        id = "grpc_services_cached",
        long = "grpc-services-cached",
        env = "SWITCHBOARD_GRPC_SERVICES_CACHED",
        default_value_t = SERVICES_CACHED
    )]
    pub services_cached: usize,
}

impl Default for GrpcArgs {
    fn default() -> Self {
        let limits = GrpcLimits::default();
        Self {
            max_descriptor_bytes: limits.max_descriptor_bytes,
            max_methods: limits.max_methods,
            max_schema_nodes: limits.max_schema_nodes,
            max_schema_depth: limits.max_schema_depth,
            max_enum_values: limits.max_enum_values,
            max_stream_messages: limits.max_stream_messages,
            services_cached: SERVICES_CACHED,
        }
    }
}

impl GrpcArgs {
    /// How many integrations' schemas are kept (at least one).
    pub fn services_cached(&self) -> std::num::NonZeroUsize {
        std::num::NonZeroUsize::new(self.services_cached).unwrap_or(std::num::NonZeroUsize::MIN)
    }

    /// The bounds these settings give.
    pub fn limits(&self) -> GrpcLimits {
        GrpcLimits {
            max_descriptor_bytes: self.max_descriptor_bytes,
            max_methods: self.max_methods,
            max_schema_nodes: self.max_schema_nodes,
            max_schema_depth: self.max_schema_depth,
            max_enum_values: self.max_enum_values,
            max_stream_messages: self.max_stream_messages.max(1),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser as _;

    use crate::config::Config;

    #[test]
    fn grpc_bounds_parse_apart_from_openapis_of_the_same_name() {
        let config = Config::try_parse_from([
            "mcp-service",
            "--grpc-max-schema-nodes=7",
            "--openapi-max-schema-nodes=9",
            "--grpc-max-stream-messages=3",
        ])
        .unwrap();
        assert_eq!(config.grpc.max_schema_nodes, 7);
        assert_eq!(config.openapi.max_schema_nodes, 9);
        assert_eq!(config.grpc.limits().max_stream_messages, 3);
    }
}
