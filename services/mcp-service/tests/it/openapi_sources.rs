//! Where an OpenAPI integration's document and key come from: a document
//! fetched by URL (JSON or YAML) from the pets API running as a process,
//! and refused when the URL redirects, is slow, serves more than the bound,
//! carries a credential or points where the address policy forbids; an API
//! key sent in the query, in place of any argument of its name, and
//! refused for kinds of integration that are not APIs.

use serde_json::{Value, json};
use switchboard_proto::{
    json::struct_to_json,
    mcp::v1::{self as pb, auth_config::Method, transport::Kind},
};
use switchboard_test_support::{DbKind, db_tests, spawn_example_api};

use crate::{
    mcp_endpoint::{setup_with, step},
    openapi::api_integration,
    support::{admin, bad_fields, create, member, req, start, start_with},
};

/// An integration of the pets API whose document is fetched from `url`.
fn by_url(slug: &str, base: &str, url: &str) -> pb::CreateIntegrationRequest {
    let mut request = api_integration(slug, base, &Value::Null);
    openapi_of(&mut request).document = String::new();
    openapi_of(&mut request).document_url = url.to_owned();
    request
}

fn openapi_of(request: &mut pb::CreateIntegrationRequest) -> &mut pb::OpenApiTransport {
    match &mut request.source {
        Some(pb::create_integration_request::Source::Custom(custom)) => {
            match custom.transport.as_mut().and_then(|t| t.kind.as_mut()) {
                Some(Kind::Openapi(api)) => api,
                _ => panic!("an OpenAPI transport"),
            }
        }
        _ => panic!("a custom integration"),
    }
}

fn auth_of(request: &mut pb::CreateIntegrationRequest) -> &mut Option<pb::AuthConfig> {
    match &mut request.source {
        Some(pb::create_integration_request::Source::Custom(custom)) => &mut custom.auth,
        _ => panic!("a custom integration"),
    }
}

async fn documents_by_url_in_json_and_yaml_offer_the_same_tools(kind: DbKind) {
    let api = spawn_example_api();
    let mut h = start(kind).await;
    let token = admin("org-a");
    let mut tools = Vec::new();
    for (slug, path) in [("json", "/openapi.json"), ("yaml", "/openapi.yaml")] {
        let url = format!("{}{path}", api.origin());
        let made = create(&mut h, &token, by_url(slug, &api.base_url, &url)).await;
        let Some(Kind::Openapi(stored)) = made.transport.and_then(|t| t.kind) else {
            panic!("an OpenAPI transport");
        };
        assert_eq!(stored.document_url, url);
        assert!(stored.document.contains("getPet"), "the fetched document");
        let discovered = h
            .client
            .discover(req(
                pb::DiscoverRequest {
                    integration_id: made.id.clone(),
                    ..Default::default()
                },
                &token,
            ))
            .await
            .expect("discovered")
            .into_inner();
        tools.push(
            discovered
                .tools
                .into_iter()
                .map(|t| (t.name, t.input_schema))
                .collect::<Vec<_>>(),
        );
    }
    let names: Vec<&str> = tools[0].iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["createPet", "getPet", "missing"]);
    assert_eq!(tools[0], tools[1], "YAML reads as JSON does");
}

async fn a_document_url_is_refused_naming_why(kind: DbKind) {
    let api = spawn_example_api();
    let field = "custom.transport.openapi.document_url";
    let token = admin("org-a");
    let mut h = start_with(kind, |config| {
        config.openapi.fetch_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    let origin = api.origin().to_owned();
    let cases = [
        (format!("{origin}/moved"), "redirects are not followed"),
        (format!("{origin}/slow"), "was not fetched within 300ms"),
        (format!("{origin}/nothing"), "answered 404"),
        (format!("{origin}/openapi.json?api_key=k"), "api_key"),
        (
            "http://169.254.169.254/openapi.json".to_owned(),
            "169.254.169.254",
        ),
        ("file:///etc/passwd".to_owned(), "http or https"),
    ];
    for (url, why) in cases {
        let status = h
            .client
            .create_integration(req(by_url("x", &api.base_url, &url), &token))
            .await
            .expect_err("refused");
        assert_eq!(bad_fields(&status), [field], "{url}");
        assert!(status.message().contains(why), "{url}: {status:?}");
    }

    // The document bound, at its limit: the document's own size passes,
    // one byte less refuses it before it is all read.
    let size = reqwest::get(format!("{origin}/openapi.json"))
        .await
        .expect("served")
        .bytes()
        .await
        .expect("read")
        .len();
    let url = format!("{origin}/openapi.json");
    let mut h = start_with(kind, |config| config.openapi.max_document_bytes = size).await;
    create(&mut h, &token, by_url("fits", &api.base_url, &url)).await;
    let mut h = start_with(kind, |config| config.openapi.max_document_bytes = size - 1).await;
    let status = h
        .client
        .create_integration(req(by_url("big", &api.base_url, &url), &token))
        .await
        .expect_err("refused");
    assert_eq!(bad_fields(&status), [field]);
    assert!(
        status
            .message()
            .contains(&format!("is more than {} bytes", size - 1)),
        "{status:?}"
    );
}

async fn an_api_key_in_the_query_replaces_any_argument_of_its_name(kind: DbKind) {
    let api = spawn_example_api();
    let mut h = start(kind).await;
    let token = admin("org-a");
    let mut request = api_integration("keyed", &api.base_url, &api.document().await);
    *auth_of(&mut request) = Some(pb::AuthConfig {
        method: Some(Method::Query(pb::QueryAuth {
            parameter_name: "fields".into(),
            value: "k3y&more".into(),
            value_set: false,
        })),
    });
    let made = create(&mut h, &token, request).await;
    let Some(Method::Query(stored)) = made.auth.and_then(|a| a.method) else {
        panic!("query auth");
    };
    assert_eq!(
        (
            stored.parameter_name.as_str(),
            stored.value.as_str(),
            stored.value_set
        ),
        ("fields", "", true),
        "the value is write-only"
    );
    let read = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: made.id.clone(),
                tool_name: "getPet".into(),
                arguments_json: json!({ "id": 7, "fields": ["mine"] }).to_string(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("answered")
        .into_inner();
    assert!(!read.is_error, "{read:?}");
    let got = struct_to_json(read.structured_content.as_ref().expect("structured"));
    assert_eq!(got["query"], "fields=k3y%26more", "the key alone, escaped");
    assert_eq!(got["authorization"], "", "no other credential");

    // Not for an MCP server: its URL would carry the key into its logs.
    let mcp = switchboard_test_support::http_integration_with_auth(
        "mcp",
        "http://127.0.0.1:1/mcp",
        Some(Method::Query(pb::QueryAuth {
            parameter_name: "key".into(),
            value: "v".into(),
            value_set: false,
        })),
    );
    let status = h
        .client
        .create_integration(req(mcp, &token))
        .await
        .expect_err("refused");
    assert_eq!(bad_fields(&status), ["custom.auth.query"]);
    let mut bad_name = api_integration("bad", &api.base_url, &api.document().await);
    *auth_of(&mut bad_name) = Some(pb::AuthConfig {
        method: Some(Method::Query(pb::QueryAuth {
            parameter_name: "a&b".into(),
            value: "v".into(),
            value_set: false,
        })),
    });
    let status = h
        .client
        .create_integration(req(bad_name, &token))
        .await
        .expect_err("refused");
    assert_eq!(bad_fields(&status), ["custom.auth.query.parameter_name"]);
}

/// A catalog entry for a team's own API: its document named by URL (fetched
/// when an integration is made from the entry), its key a catalog secret.
async fn a_catalog_entry_names_an_apis_document_and_its_key(kind: DbKind) {
    use std::io::Write as _;
    let api = spawn_example_api();
    let mut catalog = tempfile::NamedTempFile::new().expect("a temp file");
    write!(
        catalog,
        r#"
        [[integrations]]
        id = "pets"
        display_name = "Pets"
        default_slug = "pets"
        transport = {{ type = "openapi", base_url = "{base}", document_url = "{origin}/openapi.yaml" }}
        auth = {{ type = "query", parameter_name = "api_key", secret = "key" }}
        secrets = [{{ name = "key", required = true }}]
        "#,
        base = api.base_url,
        origin = api.origin(),
    )
    .expect("written");
    let path = catalog.path().to_owned();
    let mut h = start_with(kind, |config| config.catalog_file = Some(path)).await;
    let token = admin("org-a");
    let made = create(
        &mut h,
        &token,
        pb::CreateIntegrationRequest {
            display_name: "Pets".into(),
            slug: "pets".into(),
            source: Some(pb::create_integration_request::Source::Predefined(
                pb::PredefinedIntegrationSpec {
                    catalog_id: "pets".into(),
                    secrets: [("key".to_owned(), "k3y".to_owned())].into(),
                },
            )),
            ..Default::default()
        },
    )
    .await;
    let read = h
        .client
        .execute_tool(req(
            pb::ExecuteToolRequest {
                integration_id: made.id,
                tool_name: "getPet".into(),
                arguments_json: json!({ "id": 7 }).to_string(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect("answered")
        .into_inner();
    assert!(!read.is_error, "{read:?}");
    let got = struct_to_json(read.structured_content.as_ref().expect("structured"));
    assert_eq!(got["query"], "api_key=k3y");
}

/// The other front door: an MCP client (the official TypeScript SDK) calls
/// an integration made from a YAML document by URL with a query key, and
/// its argument of the key's name is replaced as through ExecuteTool.
async fn the_endpoint_calls_a_fetched_document_with_its_query_key(kind: DbKind) {
    let api = spawn_example_api();
    let mut e = setup_with(kind, |_| {}).await;
    let url = format!("{}/openapi.yaml", api.origin());
    let mut request = by_url("pets", &api.base_url, &url);
    *auth_of(&mut request) = Some(pb::AuthConfig {
        method: Some(Method::Query(pb::QueryAuth {
            parameter_name: "fields".into(),
            value: "k3y".into(),
            value_set: false,
        })),
    });
    create(&mut e.h, &admin("org-a"), request).await;
    let out = e
        .client(
            "pets",
            Some(&member("org-a")),
            json!([
                { "op": "callTool", "name": "getPet", "arguments": { "id": 42, "fields": ["mine"] } },
            ]),
        )
        .await;
    let read = step(&out, 0);
    assert_eq!(read["structuredContent"]["query"], "fields=k3y", "{out}");
}

db_tests!(
    the_endpoint_calls_a_fetched_document_with_its_query_key,
    a_catalog_entry_names_an_apis_document_and_its_key,
    documents_by_url_in_json_and_yaml_offer_the_same_tools,
    a_document_url_is_refused_naming_why,
    an_api_key_in_the_query_replaces_any_argument_of_its_name,
);
