//! An HTTP API described by an OpenAPI 3.1 document, for the tests of
//! OpenAPI integrations: `GET /v1/pets/{id}` echoes what it received (the
//! path segment as sent, the query, a header, the credential),
//! `POST /v1/pets` answers 201 with the body it was given, `GET
//! /v1/missing` answers 404, `GET /openapi.json` serves the document
//! (`/openapi.yaml` the same in YAML). The last requests' echoes are kept
//! for the test, and served at `GET /seen` (to a test running the API as a
//! process). For the fetch of a document by URL: `GET /moved` redirects to
//! the document, `GET /slow` answers after a minute.

use std::sync::{Arc, Mutex};

use axum::{
    Router,
    extract::{Path, RawQuery},
    http::{
        HeaderMap, HeaderName, StatusCode,
        header::{CONTENT_TYPE, LOCATION},
    },
    routing::{get, post},
};
use serde_json::{Value, json};

/// A running pets API.
#[derive(Debug, Clone)]
pub struct RunningApi {
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// What `GET /v1/pets/{id}` was sent, in order.
    pub seen: Arc<Mutex<Vec<Value>>>,
}

/// How many requests' echoes are kept.
const SEEN_KEPT: usize = 64;

impl RunningApi {
    /// The API's OpenAPI 3.1 document, listing `base_url` as its server.
    pub fn document(&self) -> Value {
        document(&self.base_url)
    }

    /// What `GET /v1/pets/{id}` was sent last.
    pub fn last_seen(&self) -> Option<Value> {
        self.seen.lock().ok()?.last().cloned()
    }
}

/// The API's OpenAPI 3.1 document, with `base_url` as its server.
fn document(base_url: &str) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": { "title": "Pets" },
        "servers": [{ "url": base_url }],
        "paths": {
            "/pets/{id}": { "get": {
                "operationId": "getPet",
                "summary": "Reads a pet.",
                "parameters": [
                    { "name": "id", "in": "path", "required": true, "schema": { "type": "integer", "format": "int64" } },
                    { "name": "fields", "in": "query", "schema": { "type": "array", "items": { "type": "string" } } },
                    { "name": "X-Request-Tag", "in": "header", "schema": { "type": "string" } }
                ]
            } },
            "/pets": { "post": {
                "operationId": "createPet",
                "summary": "Registers a pet.",
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Pet" } } } }
            } },
            "/missing": { "get": { "operationId": "missing", "summary": "Answers 404." } }
        },
        "components": { "schemas": { "Pet": { "type": "object", "properties": { "name": { "type": "string" } } } } }
    })
}

/// The same document in YAML, block style, with an anchor and its alias.
fn yaml_document(base_url: &str) -> String {
    format!(
        "openapi: 3.1.0
info:
  title: Pets
servers:
  - url: {base_url}
paths:
  /pets/{{id}}:
    get:
      operationId: getPet
      summary: Reads a pet.
      parameters:
        - {{name: id, in: path, required: true, schema: {{type: integer, format: int64}}}}
        - name: fields
          in: query
          schema: {{type: array, items: &text {{type: string}}}}
        - {{name: X-Request-Tag, in: header, schema: *text}}
  /pets:
    post:
      operationId: createPet
      summary: Registers a pet.
      requestBody:
        required: true
        content:
          application/json:
            schema: {{$ref: '#/components/schemas/Pet'}}
  /missing:
    get: {{operationId: missing, summary: Answers 404.}}
components:
  schemas:
    Pet:
      type: object
      properties:
        name: {{type: string}}
"
    )
}

type Answer = (StatusCode, [(HeaderName, &'static str); 1], String);

fn answer(status: StatusCode, body: &Value) -> Answer {
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}

/// The routes around the API: its document in JSON and YAML, what it was
/// sent, and a redirect and a slow answer for fetches of the document.
fn documents(base_url: &str, seen: Arc<Mutex<Vec<Value>>>) -> Router {
    let served = document(base_url).to_string();
    let yaml = yaml_document(base_url);
    Router::new()
        .route("/openapi.json", get(move || async move { served }))
        .route("/openapi.yaml", get(move || async move { yaml }))
        .route(
            "/seen",
            get(move || async move {
                let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
                answer(StatusCode::OK, &Value::Array(seen))
            }),
        )
        .route(
            "/moved",
            get(|| async { (StatusCode::FOUND, [(LOCATION, "/openapi.json")]) }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                "{}"
            }),
        )
}

/// Starts the API on a free loopback port.
pub async fn spawn_api() -> std::io::Result<RunningApi> {
    spawn_api_on("127.0.0.1:0".parse().map_err(std::io::Error::other)?).await
}

/// Starts the API on `addr`.
pub async fn spawn_api_on(addr: std::net::SocketAddr) -> std::io::Result<RunningApi> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let base_url = format!("http://{}/v1", listener.local_addr()?);
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let echo = {
        let seen = seen.clone();
        move |Path(id): Path<String>, RawQuery(query): RawQuery, headers: HeaderMap| {
            let seen = seen.clone();
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                let got = json!({
                    "id": id,
                    "query": query.unwrap_or_default(),
                    "tag": header("x-request-tag"),
                    "authorization": header("authorization"),
                    "traceparent": header("traceparent"),
                });
                if let Ok(mut seen) = seen.lock() {
                    if seen.len() == SEEN_KEPT {
                        seen.remove(0);
                    }
                    seen.push(got.clone());
                }
                answer(StatusCode::OK, &got)
            }
        }
    };
    let app = documents(&base_url, seen.clone())
        .route("/v1/pets/{id}", get(echo))
        .route(
            "/v1/pets",
            post(|body: String| async move {
                let body: Value = serde_json::from_str(&body).unwrap_or_default();
                answer(StatusCode::CREATED, &json!({ "created": body }))
            }),
        )
        .route(
            "/v1/missing",
            get(|| async { answer(StatusCode::NOT_FOUND, &json!({ "error": "no such pet" })) }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(RunningApi { base_url, seen })
}
