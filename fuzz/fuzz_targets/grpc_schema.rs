//! gRPC descriptor sets an admin (or a hostile server's reflection) could
//! give, and arguments a model could send: a set is read within its bounds
//! or refused, the methods offered keep to the method bound with distinct
//! tool names, and a request built from any arguments is a message of its
//! method's input type whose encoding decodes, and that writes as JSON.
//!
//! Input: the encoded `FileDescriptorSet`, then, after the last NUL byte,
//! the arguments' JSON (a descriptor set's bytes often hold NUL; JSON text
//! never does). Arguments that are not a JSON object are read as `{}`.
//!
//! Checked on every input: no panic; the invariants above.

#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use prost_reflect::{DynamicMessage, ReflectMessage as _};
use switchboard_mcp_service::domain::grpc::{GrpcLimits, ServiceSchema, message};

/// Small bounds, so that a set past one is found in a short run.
const LIMITS: GrpcLimits = GrpcLimits {
    // Under the 8 KiB inputs `scripts/fuzz.sh` gives, over the example
    // service's set (the seeds).
    max_descriptor_bytes: 7 * 1024,
    max_methods: 16,
    max_schema_nodes: 256,
    max_schema_depth: 8,
    max_enum_values: 32,
    max_stream_messages: 4,
};

fuzz_target!(|data: &[u8]| {
    let (descriptors, arguments) = match data.iter().rposition(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = ServiceSchema::read(descriptors, &[], &LIMITS) else {
        return;
    };
    assert!(schema.methods.len() <= LIMITS.max_methods);
    assert!(
        schema.methods.windows(2).all(|m| m[0].tool < m[1].tool),
        "tool names are ordered and distinct"
    );
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(arguments).unwrap_or_default();
    for method in &schema.methods {
        assert!(serde_json::to_string(&method.input_schema).is_ok());
        let input = method.descriptor.input();
        if let Ok(request) = message::request(&input, &arguments) {
            assert_eq!(request.descriptor(), input);
            let encoded = request.encode_to_vec();
            assert!(DynamicMessage::decode(input.clone(), encoded.as_slice()).is_ok());
            let _ = message::to_json(&request);
        }
    }
});
