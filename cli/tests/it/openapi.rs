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
