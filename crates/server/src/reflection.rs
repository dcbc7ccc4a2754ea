//! The gRPC server reflection services every listener serves.

use anyhow::Context as _;

/// Server reflection (v1) of every Switchboard contract and of health.
pub(crate) fn reflection_v1() -> anyhow::Result<
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(switchboard_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .context("failed to build the reflection service")
}

/// Server reflection (v1alpha, for clients that predate v1) of the same
/// contracts.
pub(crate) fn reflection_v1alpha() -> anyhow::Result<
    tonic_reflection::server::v1alpha::ServerReflectionServer<
        impl tonic_reflection::server::v1alpha::ServerReflection,
    >,
> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(switchboard_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .context("failed to build the reflection service")
}
