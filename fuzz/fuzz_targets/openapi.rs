//! OpenAPI documents (JSON or YAML) an admin (or a hostile document's author) could
//! upload, and arguments a model could send: a document is read within its
//! bounds or refused, every operation's input schema stays within the node
//! bound, and a request built from any arguments keeps its operation's
//! method and stays within its path (a path argument never adds a segment).
//!
//! Input: the document's bytes, then, after a NUL byte, the arguments' JSON
//! (read as UTF-8, invalid sequences replaced).
//!
//! Checked on every input: no panic; the invariants above.

#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_mcp_service::domain::openapi::{ApiDocument, OpenApiLimits, request::build};

fuzz_target!(|data: &[u8]| {
    let (document, arguments) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let limits = OpenApiLimits::default();
    let Ok(api) = ApiDocument::parse(&String::from_utf8_lossy(document), &limits) else {
        return;
    };
    let arguments: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(arguments).unwrap_or_default();
    for operation in &api.operations {
        assert!(serde_json::to_string(&operation.input_schema).is_ok());
        if let Ok(request) = build(operation, &arguments) {
            assert_eq!(request.method, operation.method);
            let path = request.path_and_query.split('?').next().unwrap_or_default();
            assert_eq!(
                path.matches('/').count(),
                operation.path.matches('/').count(),
                "{path} from {}",
                operation.path
            );
        }
    }
});
