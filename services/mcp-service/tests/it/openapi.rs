//! OpenAPI integrations through gRPC: an HTTP API on loopback described by
//! an OpenAPI 3.1 document, its operations discovered as tools and called
//! through ExecuteTool (path, query and header parameters, a JSON body, an
//! error response, a 64-bit integer exact, the integration's bearer
//! token), a policy denying one operation, and documents refused with the
//! field at fault.

use serde_json::{Value, json};

use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{
        self as pb, auth_config::Method, policy_service_client::PolicyServiceClient,
        transport::Kind,
    },
};
use switchboard_test_support::{DbKind, db_tests, spawn_example_api};

use crate::{
    mcp_endpoint::{setup_with, step},
    support::{admin, bad_fields, create, member, req, start, start_with},
};

pub(crate) fn api_integration(
    slug: &str,
    base: &str,
    document: &Value,
) -> pb::CreateIntegrationRequest {
    pb::CreateIntegrationRequest {
        display_name: slug.into(),
        slug: slug.into(),
        source: Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport {
                    kind: Some(Kind::Openapi(pb::OpenApiTransport {
                        base_url: base.into(),
                        document: document.to_string(),
                        document_url: String::new(),
                        operations: Vec::new(),
                    })),
                }),
                auth: Some(pb::AuthConfig {
                    method: Some(Method::BearerToken(pb::BearerTokenAuth {
                        token: "s3cret".into(),
                        token_set: false,
                    })),
                }),
            },
        )),
        ..Default::default()
    }
}

async fn operations_are_tools_called_through_execute_tool(kind: DbKind) {
    let api = spawn_example_api();
    let base = api.base_url.clone();
    let mut h = start(kind).await;
    let token = admin("org-a");
    let id = create(
        &mut h,
        &token,
        api_integration("pets", &base, &api.document().await),
    )
    .await
    .id;
    let discovered = h
        .client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.clone(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("discovered")
        .into_inner();
    let names: Vec<&str> = discovered.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["createPet", "getPet", "missing"]);

    let mut call = async |tool: &str, arguments: Value| {
        h.client
            .execute_tool(req(
                pb::ExecuteToolRequest {
                    integration_id: id.clone(),
                    tool_name: tool.into(),
                    // Exact JSON: a Struct carries numbers as doubles.
                    arguments_json: arguments.to_string(),
                    ..Default::default()
                },
                &token,
            ))
            .await
    };
    let read = call(
        "getPet",
        json!({ "id": 9007199254740993_u64, "fields": ["name", "a b"], "X-Request-Tag": "t1" }),
    )
    .await
    .expect("answered")
    .into_inner();
    assert!(!read.is_error, "{read:?}");
    let got = struct_to_json(read.structured_content.as_ref().expect("structured"));
    assert_eq!(
        got["id"], "9007199254740993",
        "a 64-bit integer arrives exact"
    );
    assert_eq!(got["query"], "fields=name&fields=a+b");
    assert_eq!(got["tag"], "t1");
    assert_eq!(got["authorization"], "Bearer s3cret");

    let created = call("createPet", json!({ "body": { "name": "Rex" } }))
        .await
        .expect("answered")
        .into_inner();
    assert!(!created.is_error, "{created:?}");
    assert_eq!(
        struct_to_json(created.structured_content.as_ref().expect("structured")),
        json!({ "created": { "name": "Rex" } })
    );
    let missing = call("missing", json!({}))
        .await
        .expect("answered")
        .into_inner();
    assert!(missing.is_error);
    assert!(missing.error_message.contains("HTTP 404"), "{missing:?}");
    let escaped = call("getPet", json!({ "id": "../missing" }))
        .await
        .expect("answered")
        .into_inner();
    assert!(!escaped.is_error, "stays in its operation: {escaped:?}");
    assert_eq!(api.last_seen().await.expect("seen")["id"], "../missing");

    let mut policies = PolicyServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    policies
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(pb::Policy {
                    name: "no-creates".into(),
                    rules: vec![pb::PolicyRule {
                        name: "deny-create".into(),
                        condition: "request.kind == 'tool' && tool.name == 'createPet'".into(),
                        effect: pb::PolicyEffect::Deny.into(),
                        reason: "pets are created by the shelter".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &token,
        ))
        .await
        .expect("written");
    let denied = call("createPet", json!({ "body": { "name": "Rex" } }))
        .await
        .expect_err("denied");
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);
    assert!(denied.message().contains("pets are created by the shelter"));
}

async fn a_document_is_refused_with_the_field_at_fault(kind: DbKind) {
    let api = spawn_example_api();
    let base = api.base_url.clone();
    let mut h = start(kind).await;
    let token = admin("org-a");
    let mut refuse = async |request: pb::CreateIntegrationRequest| {
        let status = h
            .client
            .create_integration(req(request, &token))
            .await
            .expect_err("refused");
        (bad_fields(&status), status.message().to_owned())
    };
    // The credential would go where the document does not say the API is.
    let (fields, _) = refuse(api_integration(
        "a",
        "http://127.0.0.1:1/v1",
        &api.document().await,
    ))
    .await;
    assert_eq!(fields, ["custom.transport.openapi.base_url"]);
    let mut cyclic = api.document().await;
    cyclic["components"]["schemas"]["Pet"]["properties"]["parent"] =
        json!({ "$ref": "#/components/schemas/Pet" });
    let (fields, _) = refuse(api_integration("b", &base, &cyclic)).await;
    assert_eq!(fields, ["custom.transport.openapi.document"]);
    let mut unknown = api_integration("c", &base, &api.document().await);
    if let Some(pb::create_integration_request::Source::Custom(custom)) = &mut unknown.source
        && let Some(Kind::Openapi(api)) = custom.transport.as_mut().and_then(|t| t.kind.as_mut())
    {
        api.operations = vec!["getPet".into(), "deletePet".into()];
    }
    let (fields, _) = refuse(unknown).await;
    assert_eq!(fields, ["custom.transport.openapi.operations[1]"]);

    // The deployment's bound, at its limit: three operations, two allowed.
    let mut h = start_with(kind, |config| config.openapi.max_operations = 2).await;
    let status = h
        .client
        .create_integration(req(
            api_integration("d", &base, &api.document().await),
            &token,
        ))
        .await
        .expect_err("refused");
    assert_eq!(bad_fields(&status), ["custom.transport.openapi.document"]);
    assert!(
        status.message().contains("has 3 operations, more than 2"),
        "{status:?}"
    );
}

/// The MCP endpoint serves an API's operations as an MCP server's tools,
/// to the official SDK client.
async fn the_endpoint_serves_an_apis_operations_to_an_sdk_client(kind: DbKind) {
    let api = spawn_example_api();
    let mut e = setup_with(kind, |_| {}).await;
    create(
        &mut e.h,
        &admin("org-a"),
        api_integration("pets", &api.base_url, &api.document().await),
    )
    .await;
    let out = e
        .client(
            "pets",
            Some(&member("org-a")),
            json!([
                { "op": "listTools" },
                { "op": "callTool", "name": "getPet", "arguments": { "id": 42, "X-Request-Tag": "sdk" } },
                { "op": "callTool", "name": "missing", "arguments": {} },
            ]),
        )
        .await;
    let names: Vec<&str> = step(&out, 0)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["createPet", "getPet", "missing"], "{out}");
    let read = step(&out, 1);
    assert_eq!(read["structuredContent"]["id"], "42", "{out}");
    assert_eq!(read["structuredContent"]["tag"], "sdk", "{out}");
    let missing = step(&out, 2);
    assert_eq!(missing["isError"], true, "{out}");
    assert_eq!(
        api.last_seen().await.expect("seen")["authorization"],
        "Bearer s3cret"
    );
}

/// At the bound of documents kept read (one), two integrations called in
/// turn each read their own document again, and answer.
async fn past_the_documents_kept_each_integration_reads_its_own_again(kind: DbKind) {
    let api = spawn_example_api();
    let mut h = start_with(kind, |config| config.openapi.documents_cached = 1).await;
    let token = admin("org-a");
    let mut only_missing = api.document().await;
    only_missing["paths"]
        .as_object_mut()
        .expect("paths")
        .retain(|path, _| path == "/missing");
    let full = create(
        &mut h,
        &token,
        api_integration("full", &api.base_url, &api.document().await),
    )
    .await
    .id;
    let small = create(
        &mut h,
        &token,
        api_integration("small", &api.base_url, &only_missing),
    )
    .await
    .id;
    for _ in 0..2 {
        for (id, tools) in [(&full, 3), (&small, 1)] {
            let listed = h
                .client
                .discover(req(
                    pb::DiscoverRequest {
                        integration_id: id.clone(),
                        ..Default::default()
                    },
                    &token,
                ))
                .await
                .expect("discovered")
                .into_inner();
            assert_eq!(listed.tools.len(), tools);
        }
    }
}

db_tests!(
    past_the_documents_kept_each_integration_reads_its_own_again,
    operations_are_tools_called_through_execute_tool,
    a_document_is_refused_with_the_field_at_fault,
    the_endpoint_serves_an_apis_operations_to_an_sdk_client,
);
