//! The guardrails through the MCP endpoint, driven by the official
//! TypeScript SDK's client: the same checks as gRPC ExecuteTool, with kinds
//! of secret the end-to-end test does not use. A deployment that only
//! flags GitHub tokens in arguments lets one leave, and the result that
//! echoes it back reaches the client redacted, its findings in `_meta`; a
//! JSON Web Token in arguments is blocked before the call leaves.

use serde_json::json;
use switchboard_test_support::{DbKind, db_tests};

use crate::{
    mcp_endpoint::{setup_with, step},
    support::member,
};

const GITHUB: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ";

async fn the_endpoint_redacts_a_result_and_blocks_arguments_as_grpc_does(kind: DbKind) {
    let e = setup_with(kind, |config| {
        config.guardrails.arguments = "github_token=flag".into();
    })
    .await;
    let out = e
        .client(
            "example",
            Some(&member("org-a")),
            json!([
                { "op": "callTool", "name": "echo", "arguments": { "text": format!("token {GITHUB}") } },
                { "op": "callTool", "name": "echo", "arguments": { "text": format!("session {JWT}") } },
            ]),
        )
        .await;
    let echoed = step(&out, 0);
    assert_eq!(
        echoed["content"][0]["text"], "token [redacted github_token]",
        "{out}"
    );
    let findings = &echoed["_meta"]["io.switchboard/guardrails"];
    assert_eq!(
        findings,
        &json!([
            { "detector": "github_token", "action": "flag", "place": "arguments", "count": 1 },
            { "detector": "github_token", "action": "redact", "place": "result", "count": 1 },
        ]),
        "{out}"
    );
    let blocked = &out["steps"][1];
    assert!(
        blocked["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("JSON Web Token") && m.contains("not sent")),
        "{blocked}"
    );
    assert!(
        !blocked.to_string().contains(JWT),
        "the refusal names no secret: {blocked}"
    );
}

db_tests!(the_endpoint_redacts_a_result_and_blocks_arguments_as_grpc_does);
