//! Secrets are write-only: sealed at rest, absent from responses, logs and
//! error messages.

use sqlx::Row as _;
use switchboard_proto::mcp::v1::{self as pb, auth_config::Method};
use switchboard_test_support::{DbKind, db_tests, logs};

use crate::support::{admin, create, http_integration_with_auth, req, start_with};

async fn a_canary_secret_appears_in_no_row_response_or_log(kind: DbKind) {
    logs::capture();
    let canary = format!("canary-{}", uuid::Uuid::now_v7().simple());
    let mut h = start_with(kind, |config| {
        config.stdio_allow = "/opt/mcp/server env=API_KEY".into()
    })
    .await;
    let token = admin("org-canary");
    let url = "http://127.0.0.1:9/mcp";

    let methods = [
        Method::BearerToken(pb::BearerTokenAuth {
            token: format!("{canary}-bearer"),
            token_set: false,
        }),
        Method::Header(pb::HeaderAuth {
            header_name: "X-Api-Key".into(),
            value: format!("{canary}-header"),
            value_set: false,
        }),
        Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
            token_url: "http://127.0.0.1:9/token".into(),
            client_id: "client".into(),
            client_secret: format!("{canary}-oauth"),
            client_secret_set: false,
            scopes: vec!["read".into()],
            ..Default::default()
        }),
    ];
    let mut responses = Vec::new();
    let mut ids = Vec::new();
    for (i, method) in methods.into_iter().enumerate() {
        let created = create(
            &mut h,
            &token,
            http_integration_with_auth(&format!("s{i}"), url, Some(method)),
        )
        .await;
        responses.push(format!("{created:?}"));
        ids.push(created.id);
    }
    let mut stdio = http_integration_with_auth("stdio", url, None);
    stdio.source = Some(pb::create_integration_request::Source::Custom(
        pb::CustomIntegrationSpec {
            transport: Some(pb::Transport {
                kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                    command: "/opt/mcp/server".into(),
                    secret_env: [("API_KEY".to_owned(), format!("{canary}-env"))].into(),
                    ..Default::default()
                })),
            }),
            auth: None,
        },
    ));
    let created = create(&mut h, &token, stdio).await;
    match created.transport.as_ref().and_then(|t| t.kind.as_ref()) {
        Some(pb::transport::Kind::Stdio(stdio)) => {
            assert_eq!(stdio.secret_env_names, ["API_KEY"]);
            assert!(stdio.secret_env.is_empty());
        }
        other => panic!("expected stdio, got {other:?}"),
    }
    responses.push(format!("{created:?}"));
    ids.push(created.id);

    // An update that leaves the secret out keeps it, still unreadable.
    let mut first = h
        .client
        .get_integration(req(
            pb::GetIntegrationRequest { id: ids[0].clone() },
            &token,
        ))
        .await
        .expect("found")
        .into_inner()
        .integration
        .expect("an integration");
    first.display_name = "renamed".into();
    let updated = h
        .client
        .update_integration(req(
            pb::UpdateIntegrationRequest {
                integration: Some(first),
                update_mask: Some(prost_types::FieldMask {
                    paths: vec!["display_name".into(), "auth".into()],
                }),
            },
            &token,
        ))
        .await
        .expect("updated")
        .into_inner();
    match updated
        .integration
        .as_ref()
        .and_then(|i| i.auth.as_ref())
        .and_then(|a| a.method.as_ref())
    {
        Some(Method::BearerToken(bearer)) => assert!(bearer.token_set, "the token is kept"),
        other => panic!("expected bearer auth, got {other:?}"),
    }
    responses.push(format!("{updated:?}"));
    let listed = h
        .client
        .list_integrations(req(pb::ListIntegrationsRequest::default(), &token))
        .await
        .expect("listed")
        .into_inner();
    responses.push(format!("{listed:?}"));
    for id in &ids {
        // Connecting fails (nothing listens), and the reason must not carry the secret.
        let validation = h
            .client
            .validate_integration(req(
                pb::ValidateIntegrationRequest { id: id.clone() },
                &token,
            ))
            .await
            .expect("validation answers")
            .into_inner();
        assert!(!validation.ok);
        responses.push(format!("{validation:?}"));
    }
    for response in &responses {
        assert!(!response.contains(&canary), "a response leaked: {response}");
    }

    let pool = sqlx::AnyPool::connect(&h.db.url).await.expect("raw access");
    let rows = sqlx::query(
        "SELECT id, org_id, slug, display_name, kind, config_json, secrets_key_id, secrets_ciphertext FROM integrations",
    )
    .fetch_all(&pool)
    .await
    .expect("rows");
    assert_eq!(rows.len(), 4);
    for row in &rows {
        for column in [
            "id",
            "org_id",
            "slug",
            "display_name",
            "kind",
            "config_json",
            "secrets_key_id",
        ] {
            let text: Option<String> = row.try_get(column).expect("a text column");
            assert!(
                !text.unwrap_or_default().contains(&canary),
                "{column} leaked"
            );
        }
        let sealed: Vec<u8> = row.try_get("secrets_ciphertext").expect("sealed secrets");
        assert!(
            !sealed.windows(canary.len()).any(|w| w == canary.as_bytes()),
            "ciphertext holds plaintext"
        );
    }
    pool.close().await;

    let logs = logs::captured();
    assert!(logs.contains("integration created"), "logs were captured");
    assert!(!logs.contains(&canary), "a log line leaked the secret");
}

db_tests!(a_canary_secret_appears_in_no_row_response_or_log);
