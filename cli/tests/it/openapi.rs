//! `integrations create --openapi FILE --base-url URL`: an HTTP API's
//! document read from a file, its chosen operations listed as tools.

use crate::world::World;

#[tokio::test]
async fn an_openapi_integration_is_created_from_a_file_and_lists_its_operations() {
    let world = World::start(Vec::new()).await;
    let document = serde_json::json!({
        "openapi": "3.1.0",
        "info": { "title": "Pets" },
        "servers": [{ "url": "http://127.0.0.1:9/v1" }],
        "paths": {
            "/pets/{id}": { "get": { "operationId": "getPet", "parameters": [{ "name": "id", "in": "path", "required": true }] } },
            "/pets": { "post": { "operationId": "createPet" } }
        }
    });
    let dir = tempfile::tempdir().expect("a directory");
    let path = dir.path().join("pets.json");
    std::fs::write(&path, document.to_string()).expect("written");
    let path = path.to_string_lossy().into_owned();
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "pets",
            "--openapi",
            &path,
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--operation",
            "getPet",
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "pets"]).await;
    assert!(shown.contains("openapi: http://127.0.0.1:9/v1"), "{shown}");
    let listed = world.ok(&["integrations", "discover", "pets"]).await;
    assert!(
        listed.contains("getPet") && !listed.contains("createPet"),
        "{listed}"
    );
}

#[tokio::test]
async fn an_openapi_integration_is_created_from_a_url_with_a_query_key() {
    let world = World::start(Vec::new()).await;
    let api = switchboard_test_support::spawn_example_api();
    let url = format!("{}/openapi.yaml", api.origin());
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "pets",
            "--openapi",
            &url,
            "--base-url",
            &api.base_url,
            "--query-key",
            "api_key=k3y",
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "pets"]).await;
    assert!(
        shown.contains("query parameter api_key (set: yes)"),
        "{shown}"
    );
    assert!(!shown.contains("k3y"), "the key is write-only: {shown}");
    let listed = world.ok(&["integrations", "discover", "pets"]).await;
    assert!(
        listed.contains("getPet") && listed.contains("createPet"),
        "the fetched YAML document's operations: {listed}"
    );
}
