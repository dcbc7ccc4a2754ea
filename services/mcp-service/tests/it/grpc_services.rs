//! gRPC integrations through gRPC: the example inventory service, run as a
//! process, its methods discovered as tools from its reflection (or from an
//! uploaded descriptor set) and called through ExecuteTool (well-known
//! types, enums, maps, a oneof, a 64-bit integer exact, a status with
//! `google.rpc` details, a server stream at its bound, the integration's
//! bearer token), a policy denying one
//! method, descriptors refused with the field at fault, the MCP endpoint
//! serving the methods to the official SDK client, and mutual TLS with the
//! integration's CA and client certificate.

use serde_json::{Value, json};
use switchboard_example_grpc_service::FILE_DESCRIPTOR_SET;
use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{
        self as pb, auth_config::Method, policy_service_client::PolicyServiceClient,
        transport::Kind,
    },
};
use switchboard_test_support::{
    DbKind, db_tests, pki::TestPki, spawn_example_grpc_service, spawn_example_grpc_service_with,
};

use crate::{
    mcp_endpoint::{setup_with, step},
    support::{Harness, admin, bad_fields, create, member, req, start, start_with},
};

fn grpc_integration(slug: &str, transport: pb::GrpcTransport) -> pb::CreateIntegrationRequest {
    pb::CreateIntegrationRequest {
        display_name: slug.into(),
        slug: slug.into(),
        source: Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport {
                    kind: Some(Kind::Grpc(transport)),
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

fn target(url: &str) -> pb::GrpcTransport {
    pb::GrpcTransport {
        target: url.into(),
        ..Default::default()
    }
}

/// Calls `tool` of integration `id` with `arguments` (exact JSON).
async fn call(
    h: &mut Harness,
    id: &str,
    tool: &str,
    arguments: Value,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    let request = req(
        pb::ExecuteToolRequest {
            integration_id: id.into(),
            tool_name: tool.into(),
            arguments_json: arguments.to_string(),
            ..Default::default()
        },
        &admin("org-a"),
    );
    h.client
        .execute_tool(request)
        .await
        .map(tonic::Response::into_inner)
}

async fn tools(h: &mut Harness, id: &str) -> Vec<String> {
    h.client
        .discover(req(
            pb::DiscoverRequest {
                integration_id: id.into(),
                ..Default::default()
            },
            &admin("org-a"),
        ))
        .await
        .expect("discovered")
        .into_inner()
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect()
}

fn structured(answer: &pb::ExecuteToolResponse) -> Value {
    struct_to_json(answer.structured_content.as_ref().expect("structured"))
}

async fn methods_are_tools_called_through_execute_tool(kind: DbKind) {
    let service = spawn_example_grpc_service();
    let mut h = start(kind).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        grpc_integration("inventory", target(&service.url)),
    )
    .await
    .id;
    assert_eq!(
        tools(&mut h, &id).await,
        [
            "Inventory_DeleteItem",
            "Inventory_GetItem",
            "Inventory_LastCall",
            "Inventory_ListItems",
            "Inventory_PutItem",
        ],
        "client streaming is not offered"
    );
    let read = call(
        &mut h,
        &id,
        "Inventory_GetItem",
        json!({"id": "9007199254740993"}),
    )
    .await
    .expect("answered");
    assert!(!read.is_error, "{read:?}");
    let item = structured(&read);
    assert_eq!(
        item["id"], "9007199254740993",
        "a 64-bit integer arrives exact"
    );
    assert_eq!(item["kind"], "KIND_TOOL");
    assert_eq!(item["createdAt"], "2024-01-02T03:04:05Z");
    assert_eq!(item["labels"], json!({"aisle": "7"}));

    let item = json!({
        "id": "-9007199254740993", "name": "bolt", "kind": "KIND_PART",
        "createdAt": "2026-11-30T01:02:03Z", "warranty": "3600s", "stock": 4,
        "labels": {"bin": "b2"}, "attributes": {"metric": true, "sizes": [8, 10]},
        "quote": "ask", "tags": ["m8"], "thumbnail": "AAEC", "weight": 0.5,
    });
    let put = call(&mut h, &id, "Inventory_PutItem", json!({"item": item}))
        .await
        .expect("answered");
    assert!(!put.is_error, "{put:?}");
    assert_eq!(
        structured(&put),
        item,
        "every field kind comes back as sent"
    );

    let invalid = call(&mut h, &id, "Inventory_GetItem", json!({"id": "0"}))
        .await
        .expect("answered");
    assert!(invalid.is_error);
    assert!(
        invalid
            .error_message
            .contains("InvalidArgument: id must not be 0"),
        "{invalid:?}"
    );
    assert!(
        invalid.error_message.contains("must not be 0"),
        "the BadRequest detail"
    );
    let unfit = call(&mut h, &id, "Inventory_GetItem", json!({"identifier": "1"}))
        .await
        .expect("answered");
    assert!(
        unfit.is_error && unfit.error_message.contains("identifier"),
        "{unfit:?}"
    );

    let listed = call(&mut h, &id, "Inventory_ListItems", json!({"count": 3}))
        .await
        .expect("answered");
    assert_eq!(
        structured(&listed)["messages"].as_array().map(Vec::len),
        Some(3)
    );

    let seen = call(&mut h, &id, "Inventory_LastCall", json!({}))
        .await
        .expect("answered");
    let seen = structured(&seen);
    assert_eq!(seen["authorization"], "Bearer s3cret");
    deny_delete(&mut h).await;
    let denied = call(
        &mut h,
        &id,
        "Inventory_DeleteItem",
        json!({"id": "9007199254740993"}),
    )
    .await
    .expect_err("denied");
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);
    assert!(denied.message().contains("items are kept"), "{denied:?}");
}

async fn deny_delete(h: &mut Harness) {
    let mut policies = PolicyServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    policies
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(pb::Policy {
                    name: "no-deletes".into(),
                    rules: vec![pb::PolicyRule {
                        name: "deny-delete".into(),
                        condition: "request.kind == 'tool' && tool.name == 'Inventory_DeleteItem'"
                            .into(),
                        effect: pb::PolicyEffect::Deny.into(),
                        reason: "items are kept".into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                expected_version: 0,
            },
            &admin("org-a"),
        ))
        .await
        .expect("written");
}

/// An uploaded descriptor set offers the methods chosen, and a stream is
/// ended at the deployment's bound (two messages here).
async fn an_uploaded_set_offers_the_chosen_methods_and_a_stream_ends_at_its_bound(kind: DbKind) {
    let service = spawn_example_grpc_service();
    let mut h = start_with(kind, |config| config.grpc.max_stream_messages = 2).await;
    let transport = pb::GrpcTransport {
        descriptor_set: FILE_DESCRIPTOR_SET.to_vec(),
        methods: vec![
            "example.inventory.v1.Inventory/GetItem".into(),
            "example.inventory.v1.Inventory/ListItems".into(),
        ],
        ..target(&service.url)
    };
    let id = create(
        &mut h,
        &admin("org-a"),
        grpc_integration("uploaded", transport),
    )
    .await
    .id;
    assert_eq!(
        tools(&mut h, &id).await,
        ["Inventory_GetItem", "Inventory_ListItems"]
    );
    let at_bound = call(&mut h, &id, "Inventory_ListItems", json!({"count": 2}))
        .await
        .expect("answered");
    let content = structured(&at_bound);
    assert_eq!(content["messages"].as_array().map(Vec::len), Some(2));
    assert!(content.get("truncated").is_none(), "{content}");
    let past = call(&mut h, &id, "Inventory_ListItems", json!({"count": 500}))
        .await
        .expect("answered");
    let content = structured(&past);
    assert_eq!(content["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        content["truncated"],
        "the stream was ended after 2 messages, the most a result keeps"
    );
    let missing = call(&mut h, &id, "Inventory_GetItem", json!({"id": "42"}))
        .await
        .expect("answered");
    assert!(
        missing.error_message.contains("NotFound: no item 42"),
        "{missing:?}"
    );
    assert!(
        missing.error_message.contains("example.inventory.v1.Item"),
        "the ResourceInfo"
    );
}

async fn descriptors_are_refused_with_the_field_at_fault(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    let mut refused = Vec::new();
    let cases = [
        target("ftp://127.0.0.1:1"),
        target("http://127.0.0.1:1/inventory"),
        pb::GrpcTransport {
            descriptor_set: b"\xff\xff".to_vec(),
            ..target("http://127.0.0.1:1")
        },
        pb::GrpcTransport {
            descriptor_set: FILE_DESCRIPTOR_SET.to_vec(),
            methods: vec!["example.inventory.v1.Inventory/Nope".into()],
            ..target("http://127.0.0.1:1")
        },
        pb::GrpcTransport {
            ca_certificate: "-----BEGIN CERTIFICATE-----".into(),
            ..target("http://127.0.0.1:1")
        },
        pb::GrpcTransport {
            client_certificate: "-----BEGIN CERTIFICATE-----".into(),
            ..target("https://127.0.0.1:1")
        },
    ];
    for (i, transport) in cases.into_iter().enumerate() {
        let status = h
            .client
            .create_integration(req(grpc_integration(&format!("g{i}"), transport), &token))
            .await
            .expect_err("refused");
        refused.push(bad_fields(&status));
    }
    let at = |f: &str| vec![format!("custom.transport.grpc.{f}")];
    assert_eq!(
        refused,
        [
            at("target"),
            at("target"),
            at("descriptor_set"),
            at("methods[0]"),
            at("ca_certificate"),
            [at("client_certificate"), at("client_certificate")].concat(),
        ]
    );
    // The deployment's bound, at its limit: six methods, five allowed.
    let mut h = start_with(kind, |config| config.grpc.max_methods = 5).await;
    let transport = pb::GrpcTransport {
        descriptor_set: FILE_DESCRIPTOR_SET.to_vec(),
        ..target("http://127.0.0.1:1")
    };
    let status = h
        .client
        .create_integration(req(grpc_integration("bound", transport), &token))
        .await
        .expect_err("refused");
    assert_eq!(
        bad_fields(&status),
        ["custom.transport.grpc.descriptor_set"]
    );
    assert!(
        status.message().contains("has 6 methods, more than 5"),
        "{status:?}"
    );
}

/// The MCP endpoint serves a service's methods as an MCP server's tools,
/// to the official SDK client.
async fn the_endpoint_serves_a_services_methods_to_an_sdk_client(kind: DbKind) {
    let service = spawn_example_grpc_service();
    let mut e = setup_with(kind, |_| {}).await;
    create(
        &mut e.h,
        &admin("org-a"),
        grpc_integration("inventory", target(&service.url)),
    )
    .await;
    let out = e
        .client(
            "inventory",
            Some(&member("org-a")),
            json!([
                { "op": "listTools" },
                { "op": "callTool", "name": "Inventory_GetItem", "arguments": { "id": "9007199254740993" } },
                { "op": "callTool", "name": "Inventory_GetItem", "arguments": { "id": "7" } },
            ]),
        )
        .await;
    let names: Vec<&str> = step(&out, 0)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"Inventory_GetItem"), "{out}");
    let read = step(&out, 1);
    assert_eq!(read["structuredContent"]["id"], "9007199254740993", "{out}");
    assert_eq!(read["structuredContent"]["name"], "anvil", "{out}");
    assert_eq!(step(&out, 2)["isError"], true, "{out}");
}

/// The transport of a gRPC integration as answered.
fn grpc_transport(integration: &pb::Integration) -> pb::GrpcTransport {
    match integration.transport.as_ref().and_then(|t| t.kind.as_ref()) {
        Some(Kind::Grpc(grpc)) => grpc.clone(),
        other => panic!("not a gRPC transport: {other:?}"),
    }
}

/// A service requiring client certificates (its own CA's): the
/// integration trusts the CA and presents its client certificate, whose
/// key is sealed and never answered; without the certificate the
/// handshake is refused and the call names the connection's failure.
async fn mutual_tls_presents_the_integrations_client_certificate(kind: DbKind) {
    let pki = TestPki::new("grpc-mtls-ca");
    let server = pki.server("server");
    let client = pki.client("client", None, "switchboard");
    let file = |path: &std::path::Path| path.to_str().expect("a UTF-8 path").to_owned();
    let service = spawn_example_grpc_service_with(&[
        "--tls-cert",
        &file(&server.cert_file),
        "--tls-key",
        &file(&server.key_file),
        "--client-ca",
        &file(&pki.ca_file()),
    ]);
    assert!(
        service.url.starts_with("https://127.0.0.1:"),
        "{}",
        service.url
    );
    let mut h = start(kind).await;
    let token = admin("org-a");
    let transport = pb::GrpcTransport {
        ca_certificate: pki.ca_pem.clone(),
        client_certificate: client.cert_pem.clone(),
        client_key: client.key_pem.clone(),
        ..target(&service.url)
    };
    let created = create(&mut h, &token, grpc_integration("mtls", transport)).await;
    let read = h
        .client
        .get_integration(req(
            pb::GetIntegrationRequest {
                id: created.id.clone(),
            },
            &token,
        ))
        .await
        .expect("read")
        .into_inner()
        .integration
        .expect("an integration");
    for answered in [&created, &read] {
        let grpc = grpc_transport(answered);
        assert_eq!(grpc.client_key, "", "the key is never answered");
        assert!(grpc.client_key_set, "{grpc:?}");
        assert_eq!(grpc.client_certificate, client.cert_pem);
        assert_eq!(grpc.ca_certificate, pki.ca_pem);
    }
    let answer = call(
        &mut h,
        &created.id,
        "Inventory_GetItem",
        json!({"id": "9007199254740993"}),
    )
    .await
    .expect("answered");
    assert!(!answer.is_error, "{answer:?}");
    assert_eq!(structured(&answer)["name"], "anvil");

    // Without the client certificate the server refuses the handshake
    // (under TLS 1.3, with an alert the client reads after its side of the
    // handshake), whether the methods are read by reflection or uploaded:
    // the call is answered as an error result naming the connection's
    // failure. (Seen: reflection's read failing, "could not connect to the
    // MCP server: the server's reflection: transport error" or "…operation
    // was canceled", unreachable; the uploaded method's call failing, "the
    // connection to the MCP server failed: Unknown error: transport error",
    // connection lost.)
    let uploaded = pb::GrpcTransport {
        descriptor_set: FILE_DESCRIPTOR_SET.to_vec(),
        ..target(&service.url)
    };
    for (slug, transport) in [("reflected", target(&service.url)), ("uploaded", uploaded)] {
        let transport = pb::GrpcTransport {
            ca_certificate: pki.ca_pem.clone(),
            ..transport
        };
        let id = create(&mut h, &token, grpc_integration(slug, transport))
            .await
            .id;
        let refused = call(&mut h, &id, "Inventory_GetItem", json!({"id": "42"}))
            .await
            .expect("answered as an error result");
        assert!(refused.is_error, "{slug}: {refused:?}");
        assert!(
            matches!(
                refused.failure_reason(),
                pb::ToolFailureReason::ServerUnreachable | pb::ToolFailureReason::ConnectionLost
            ),
            "{slug}: {refused:?}"
        );
        assert!(
            refused.error_message.starts_with("could not connect to ")
                || refused.error_message.starts_with("the connection to "),
            "{slug}: {refused:?}"
        );
    }
}

db_tests!(
    methods_are_tools_called_through_execute_tool,
    an_uploaded_set_offers_the_chosen_methods_and_a_stream_ends_at_its_bound,
    descriptors_are_refused_with_the_field_at_fault,
    the_endpoint_serves_a_services_methods_to_an_sdk_client,
    mutual_tls_presents_the_integrations_client_certificate,
);
