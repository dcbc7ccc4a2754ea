//! The guardrails through the MCP endpoint, driven by the official
//! TypeScript SDK's client: the same checks as gRPC ExecuteTool, with kinds
//! of secret the end-to-end test does not use. A deployment that only
//! flags GitHub tokens in arguments lets one leave, and the result that
//! echoes it back reaches the client redacted, its findings in `_meta`; a
//! JSON Web Token in arguments is blocked before the call leaves. A
//! resource's CSV blob and a rendered prompt are checked as results are.

use base64::{Engine as _, engine::general_purpose::STANDARD};
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
        config.guardrails.results = "email=redact".into();
    })
    .await;
    let out = e
        .client(
            "example",
            Some(&member("org-a")),
            json!([
                { "op": "callTool", "name": "echo", "arguments": { "text": format!("token {GITHUB}") } },
                { "op": "callTool", "name": "echo", "arguments": { "text": format!("session {JWT}") } },
                { "op": "readResource", "uri": "data://keys-blob" },
                { "op": "getPrompt", "name": "summarize", "arguments": { "topic": "ann@example.com" } },
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

    let read = step(&out, 2);
    let blob = read["contents"][0]["blob"].as_str().expect("a blob");
    let csv = String::from_utf8(STANDARD.decode(blob).expect("base64")).expect("UTF-8");
    assert_eq!(csv, "name,key\ndeploy,[redacted aws_access_key]\n", "{out}");
    assert_eq!(
        read["_meta"]["io.switchboard/guardrails"],
        json!([{ "detector": "aws_access_key", "action": "redact", "place": "result", "count": 1 }]),
        "{out}"
    );
    let prompt = step(&out, 3);
    let said = prompt["messages"][0]["content"]["text"]
        .as_str()
        .expect("text");
    assert!(
        said.contains("[redacted email]") && !said.contains("ann@example.com"),
        "{out}"
    );
    assert_eq!(
        prompt["_meta"]["io.switchboard/guardrails"][0]["place"], "arguments",
        "the arguments' flag, then the result's redaction: {out}"
    );
}

db_tests!(the_endpoint_redacts_a_result_and_blocks_arguments_as_grpc_does);
