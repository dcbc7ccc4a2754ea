//! Documents read into tools, hostile ones refused at their bound, and
//! arguments made into requests that stay within their operation.

use serde_json::{Value, json};

use super::{ApiDocument, Location, OpenApiLimits, request::build};

fn pets() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": { "title": "Pets" },
        "servers": [{ "url": "https://pets.example.com/v1/" }, { "url": "/relative" }],
        "paths": {
            "/pets/{id}": {
                "parameters": [{ "name": "id", "in": "path", "required": true, "schema": { "type": "integer", "format": "int64" } }],
                "get": {
                    "operationId": "getPet",
                    "summary": "Reads a pet.",
                    "parameters": [
                        { "name": "fields", "in": "query", "schema": { "type": "array", "items": { "type": "string" } } },
                        { "name": "X-Request-Tag", "in": "header", "description": "A tag.", "schema": { "type": "string" } }
                    ]
                },
                "put": {
                    "summary": "Replaces a pet.",
                    "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Pet" } } } }
                }
            },
            "/upload": {
                "post": { "operationId": "upload", "requestBody": { "required": true, "content": { "multipart/form-data": {} } } }
            },
            "/session": {
                "get": { "operationId": "session", "parameters": [{ "name": "sid", "in": "cookie" }] }
            },
            "/auth": {
                "get": { "operationId": "auth", "parameters": [{ "name": "Authorization", "in": "header" }] }
            }
        },
        "components": { "schemas": {
            "Pet": { "type": "object", "properties": { "name": { "type": "string" }, "owner": { "$ref": "#/components/schemas/Owner" } }, "required": ["name"] },
            "Owner": { "type": "object", "properties": { "email": { "type": "string" } } }
        } }
    })
}

fn parse(document: &Value) -> ApiDocument {
    ApiDocument::parse(&document.to_string(), &OpenApiLimits::default()).expect("read")
}

#[test]
fn operations_become_tools_with_their_parameters_and_body_joined_in_one_schema() {
    let api = parse(&pets());
    assert_eq!(api.title, "Pets");
    assert_eq!(api.servers, ["https://pets.example.com/v1"]);
    let names: Vec<&str> = api.operations.iter().map(|o| o.tool.as_str()).collect();
    assert_eq!(names, ["getPet", "put_pets_id"]);
    let get = api.operation("getPet").expect("offered");
    assert_eq!(get.description, "Reads a pet.");
    assert_eq!(
        Value::Object(get.input_schema.clone()),
        json!({
            "type": "object",
            "properties": {
                "id": { "type": "integer", "format": "int64" },
                "fields": { "type": "array", "items": { "type": "string" } },
                "X-Request-Tag": { "type": "string", "description": "A tag." },
            },
            "required": ["id"],
            "additionalProperties": false,
        })
    );
    let put = api.operation("put_pets_id").expect("offered");
    assert_eq!(
        put.input_schema["properties"]["body"]["properties"]["owner"],
        json!({ "type": "object", "properties": { "email": { "type": "string" } } }),
        "refs inlined"
    );
    assert_eq!(put.input_schema["required"], json!(["id", "body"]));
    let skipped: Vec<String> = api.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("POST /upload") && s.contains("multipart/form-data"))
    );
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("GET /session") && s.contains("cookie"))
    );
    assert!(
        skipped
            .iter()
            .any(|s| s.starts_with("GET /auth") && s.contains("Authorization"))
    );
}

#[test]
fn arguments_become_a_request_that_stays_in_its_operation() {
    let api = parse(&pets());
    let get = api.operation("getPet").expect("offered");
    let arguments =
        json!({ "id": 9007199254740993_u64, "fields": ["name", "a b&c"], "X-Request-Tag": "t1" });
    let request = build(get, arguments.as_object().expect("object")).expect("built");
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.path_and_query, "/pets/9007199254740993?fields=name&fields=a+b%26c",
        "a 64-bit integer arrives exact"
    );
    assert_eq!(
        request.headers,
        [("X-Request-Tag".to_owned(), "t1".to_owned())]
    );
    assert_eq!(request.body, None);

    let escape = json!({ "id": "../admin?x=1#y" });
    let request = build(get, escape.as_object().expect("object")).expect("built");
    assert_eq!(request.path_and_query, "/pets/..%2Fadmin%3Fx%3D1%23y");
    for (arguments, said) in [
        (json!({ "id": ".." }), "may not be"),
        (json!({}), "missing required argument `id`"),
        (
            json!({ "id": 1, "admin": true }),
            "unknown argument `admin`",
        ),
        (
            json!({ "id": 1, "X-Request-Tag": "a\r\nInjected: 1" }),
            "not a valid header value",
        ),
        (json!({ "id": { "nested": 1 } }), "must be a string"),
        (json!({ "id": 1, "body": {} }), "unknown argument `body`"),
    ] {
        let refused = build(get, arguments.as_object().expect("object")).expect_err("refused");
        assert!(refused.contains(said), "{arguments}: {refused}");
    }
    let put = api.operation("put_pets_id").expect("offered");
    let refused = build(put, json!({ "id": 1 }).as_object().expect("object")).expect_err("refused");
    assert_eq!(refused, "missing required argument `body`");
    assert_eq!(put.parameters[0].location, Location::Path);
}

#[test]
fn a_ref_cycle_is_refused_naming_its_path() {
    let mut document = pets();
    document["components"]["schemas"]["Owner"]["properties"]["pet"] =
        json!({ "$ref": "#/components/schemas/Pet" });
    let error =
        ApiDocument::parse(&document.to_string(), &OpenApiLimits::default()).expect_err("refused");
    assert_eq!(error.at, "PUT /pets/{id}");
    assert!(
        error.message.contains(
            "#/components/schemas/Pet → #/components/schemas/Owner → #/components/schemas/Pet"
        ) && error.message.contains("recursive"),
        "{error}"
    );
}

#[test]
fn a_ref_bomb_is_refused_at_the_node_bound() {
    // Each level refers to the one below four times: 4^15 nodes once
    // inlined, within the depth bound.
    let mut schemas = serde_json::Map::new();
    for level in 0..15 {
        let below = json!({ "$ref": format!("#/components/schemas/L{}", level + 1) });
        schemas.insert(
            format!("L{level}"),
            json!({ "properties": { "a": below, "b": below, "c": below, "d": below } }),
        );
    }
    schemas.insert("L15".into(), json!({ "type": "string" }));
    let document = json!({
        "openapi": "3.0.3",
        "paths": { "/bomb": { "post": { "requestBody": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/L0" } } } } } } },
        "components": { "schemas": schemas },
    });
    let error =
        ApiDocument::parse(&document.to_string(), &OpenApiLimits::default()).expect_err("refused");
    assert!(error.message.contains("past 10000 nodes"), "{error}");
}

#[test]
fn a_document_past_its_size_or_its_operations_is_refused() {
    let huge = format!(
        "{{\"openapi\":\"3.1.0\",\"x\":\"{}\"}}",
        "x".repeat(100 * 1024 * 1024)
    );
    let error = ApiDocument::parse(&huge, &OpenApiLimits::default()).expect_err("refused");
    assert!(error.message.contains("more than 4194304"), "{error}");

    let paths: serde_json::Map<String, Value> = (0..100_000)
        .map(|i| (format!("/p{i}"), json!({ "get": {} })))
        .collect();
    let many = json!({ "openapi": "3.1.0", "paths": paths }).to_string();
    let error = ApiDocument::parse(&many, &OpenApiLimits::default()).expect_err("refused");
    assert_eq!(error.message, "has 100000 operations, more than 1000");

    let old = json!({ "swagger": "2.0", "paths": {} }).to_string();
    assert!(ApiDocument::parse(&old, &OpenApiLimits::default()).is_err());
}

#[test]
fn a_yaml_document_reads_as_its_json_does() {
    let json = parse(&pets());
    let yaml = ApiDocument::parse(&format!("---\n{}", pets()), &OpenApiLimits::default())
        .expect("YAML read");
    assert_eq!(yaml, json);
    let block = "openapi: 3.0.3\ninfo: {title: Block}\npaths:\n  /pets/{id}:\n    get:\n      \
                 operationId: getPet\n      parameters:\n        - &id {name: id, in: path, \
                 required: true, schema: {type: integer}}\n    delete:\n      operationId: \
                 deletePet\n      parameters: [*id]\n";
    let api = ApiDocument::parse(block, &OpenApiLimits::default()).expect("block YAML read");
    assert_eq!(api.title, "Block");
    let delete = api.operation("deletePet").expect("offered");
    assert_eq!(delete.input_schema["required"], json!(["id"]));
}

#[test]
fn a_yaml_alias_bomb_is_refused_before_it_expands() {
    let mut bomb = String::from("openapi: 3.1.0\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let previous = format!("*l{}", level - 1);
        let row = [previous.as_str(); 10].join(", ");
        bomb.push_str(&format!("l{level}: &l{level} [{row}]\n"));
    }
    bomb.push_str("paths: {}\n");
    let error = ApiDocument::parse(&bomb, &OpenApiLimits::default()).expect_err("a bomb");
    assert!(error.message.starts_with("is not YAML"), "{error}");
}

/// A YAML document whose `x` nests `levels` mappings, the document itself
/// the first.
fn nested_yaml(levels: usize) -> String {
    let mut nested = String::from("openapi: 3.1.0\npaths: {}\nx:\n");
    for level in 1..levels {
        nested.push_str(&format!("{}a:\n", "  ".repeat(level)));
    }
    nested
}

#[test]
fn a_yaml_document_nests_64_levels_not_65() {
    let limits = OpenApiLimits::default();
    ApiDocument::parse(&nested_yaml(64), &limits).expect("64 levels read");
    for levels in [65, 1_000] {
        let error = ApiDocument::parse(&nested_yaml(levels), &limits).expect_err("too deep");
        assert!(error.message.contains("budget breached: Depth"), "{error}");
    }
    let flow = format!(
        "openapi: 3.1.0\npaths: {{}}\nx: {}1{}\n",
        "[".repeat(300),
        "]".repeat(300)
    );
    let error = ApiDocument::parse(&flow, &limits).expect_err("too deep");
    assert!(error.message.starts_with("is not YAML"), "{error}");
}
