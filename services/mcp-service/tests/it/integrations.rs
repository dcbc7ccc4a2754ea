//! The integration admin RPCs over real gRPC: lifecycle, tenancy, roles,
//! validation of input, the predefined catalog.

use std::io::Write as _;

use switchboard_proto::mcp::v1::{self as pb, auth_config::Method};
use switchboard_test_support::{DbKind, db_tests};
use tonic::Code;

use crate::support::{
    Harness, admin, bad_fields, create, http_integration, http_integration_with_auth, member, req,
    start, start_with,
};

const URL: &str = "http://127.0.0.1:9/mcp";

fn mask(paths: &[&str]) -> Option<prost_types::FieldMask> {
    Some(prost_types::FieldMask {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    })
}

async fn list(harness: &mut Harness, token: &str, enabled_only: bool) -> Vec<pb::Integration> {
    harness
        .client
        .list_integrations(req(
            pb::ListIntegrationsRequest {
                enabled_only,
                ..Default::default()
            },
            token,
        ))
        .await
        .expect("listed")
        .into_inner()
        .integrations
}

async fn an_admin_manages_an_integration_through_its_lifecycle(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    let created = create(&mut h, &token, http_integration("github", URL)).await;
    assert_eq!(created.slug, "github");
    assert_eq!(created.organization_id, "org-a");
    assert!(created.enabled);
    assert_eq!(created.kind(), pb::IntegrationKind::Custom);

    let fetched = h
        .client
        .get_integration(req(
            pb::GetIntegrationRequest {
                id: created.id.clone(),
            },
            &token,
        ))
        .await
        .expect("found")
        .into_inner()
        .integration
        .expect("an integration");
    assert_eq!(fetched, created);

    let mut changed = created.clone();
    changed.display_name = "GitHub (work)".into();
    changed.slug = "gh".into();
    let updated = h
        .client
        .update_integration(req(
            pb::UpdateIntegrationRequest {
                integration: Some(changed),
                update_mask: mask(&["display_name", "slug"]),
            },
            &token,
        ))
        .await
        .expect("updated")
        .into_inner()
        .integration
        .expect("an integration");
    assert_eq!(
        (updated.display_name.as_str(), updated.slug.as_str()),
        ("GitHub (work)", "gh")
    );
    assert_eq!(updated.transport, created.transport, "unmasked fields stay");

    let disabled = h
        .client
        .disable_integration(req(
            pb::DisableIntegrationRequest {
                id: created.id.clone(),
            },
            &token,
        ))
        .await
        .expect("disabled")
        .into_inner()
        .integration
        .expect("an integration");
    assert!(!disabled.enabled);
    let listed = list(&mut h, &token, false).await;
    assert_eq!(listed.len(), 1, "disabled integrations are listed");
    assert!(!listed[0].enabled, "and marked");
    assert!(list(&mut h, &token, true).await.is_empty());

    h.client
        .enable_integration(req(
            pb::EnableIntegrationRequest {
                id: created.id.clone(),
            },
            &token,
        ))
        .await
        .expect("enabled");
    assert_eq!(list(&mut h, &token, true).await.len(), 1);

    h.client
        .delete_integration(req(
            pb::DeleteIntegrationRequest {
                id: created.id.clone(),
            },
            &token,
        ))
        .await
        .expect("deleted");
    let gone = h
        .client
        .get_integration(req(pb::GetIntegrationRequest { id: created.id }, &token))
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
}

async fn another_organization_gets_not_found_from_every_rpc(kind: DbKind) {
    let mut h = start(kind).await;
    let id = create(&mut h, &admin("org-a"), http_integration("github", URL))
        .await
        .id;
    let intruder = admin("org-b");
    let c = &mut h.client;
    let mut integration = pb::Integration {
        id: id.clone(),
        display_name: "mine now".into(),
        ..Default::default()
    };
    integration.slug = "mine".into();
    let results = [
        (
            "get",
            c.get_integration(req(pb::GetIntegrationRequest { id: id.clone() }, &intruder))
                .await
                .map(|_| ()),
        ),
        (
            "update",
            c.update_integration(req(
                pb::UpdateIntegrationRequest {
                    integration: Some(integration),
                    update_mask: mask(&["display_name"]),
                },
                &intruder,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "delete",
            c.delete_integration(req(
                pb::DeleteIntegrationRequest { id: id.clone() },
                &intruder,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "enable",
            c.enable_integration(req(
                pb::EnableIntegrationRequest { id: id.clone() },
                &intruder,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "disable",
            c.disable_integration(req(
                pb::DisableIntegrationRequest { id: id.clone() },
                &intruder,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "validate",
            c.validate_integration(req(
                pb::ValidateIntegrationRequest { id: id.clone() },
                &intruder,
            ))
            .await
            .map(|_| ()),
        ),
    ];
    for (rpc, result) in results {
        let status = result.expect_err(rpc);
        assert_eq!(status.code(), Code::NotFound, "{rpc}: {status:?}");
        assert!(
            !status.message().contains(&id),
            "{rpc} does not echo the id"
        );
    }
    assert!(list(&mut h, &intruder, false).await.is_empty());
    // The owner still has it, unchanged.
    assert_eq!(list(&mut h, &admin("org-a"), false).await[0].slug, "github");
}

async fn members_read_and_only_admins_write(kind: DbKind) {
    let mut h = start(kind).await;
    let id = create(&mut h, &admin("org-a"), http_integration("github", URL))
        .await
        .id;
    let reader = member("org-a");
    assert_eq!(list(&mut h, &reader, false).await.len(), 1);
    h.client
        .get_integration(req(pb::GetIntegrationRequest { id: id.clone() }, &reader))
        .await
        .expect("members read");
    let c = &mut h.client;
    let results = [
        (
            "create",
            c.create_integration(req(http_integration("other", URL), &reader))
                .await
                .map(|_| ()),
        ),
        (
            "update",
            c.update_integration(req(
                pb::UpdateIntegrationRequest {
                    integration: Some(pb::Integration {
                        id: id.clone(),
                        display_name: "x".into(),
                        ..Default::default()
                    }),
                    update_mask: mask(&["display_name"]),
                },
                &reader,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "delete",
            c.delete_integration(req(
                pb::DeleteIntegrationRequest { id: id.clone() },
                &reader,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "enable",
            c.enable_integration(req(
                pb::EnableIntegrationRequest { id: id.clone() },
                &reader,
            ))
            .await
            .map(|_| ()),
        ),
        (
            "disable",
            c.disable_integration(req(
                pb::DisableIntegrationRequest { id: id.clone() },
                &reader,
            ))
            .await
            .map(|_| ()),
        ),
    ];
    for (rpc, result) in results {
        let status = result.expect_err(rpc);
        assert_eq!(status.code(), Code::PermissionDenied, "{rpc}: {status:?}");
    }
}

async fn a_taken_slug_is_already_exists_within_an_organization_only(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    create(&mut h, &token, http_integration("github", URL)).await;
    let second = create(&mut h, &token, http_integration("linear", URL)).await;
    let status = h
        .client
        .create_integration(req(http_integration("github", URL), &token))
        .await
        .expect_err("duplicate");
    assert_eq!(status.code(), Code::AlreadyExists, "{status:?}");

    let mut renamed = second.clone();
    renamed.slug = "github".into();
    let status = h
        .client
        .update_integration(req(
            pb::UpdateIntegrationRequest {
                integration: Some(renamed),
                update_mask: mask(&["slug"]),
            },
            &token,
        ))
        .await
        .expect_err("duplicate by rename");
    assert_eq!(status.code(), Code::AlreadyExists, "{status:?}");

    create(&mut h, &admin("org-b"), http_integration("github", URL)).await;
}

async fn invalid_input_is_refused_naming_the_field(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    let stdio = |command: &str| {
        let mut request = http_integration("tool", URL);
        request.source = Some(pb::create_integration_request::Source::Custom(
            pb::CustomIntegrationSpec {
                transport: Some(pb::Transport {
                    kind: Some(pb::transport::Kind::Stdio(pb::StdioTransport {
                        command: command.into(),
                        ..Default::default()
                    })),
                }),
                auth: None,
            },
        ));
        request
    };
    let header = |name: &str| {
        http_integration_with_auth(
            "tool",
            URL,
            Some(Method::Header(pb::HeaderAuth {
                header_name: name.into(),
                value: "v".into(),
                value_set: false,
            })),
        )
    };
    let mut no_name = http_integration("tool", URL);
    no_name.display_name = "  ".into();
    let cases = [
        ("bad slug", http_integration("Bad-Slug", URL), "slug"),
        ("long slug", http_integration(&"a".repeat(33), URL), "slug"),
        ("no name", no_name, "display_name"),
        (
            "ftp url",
            http_integration("tool", "ftp://127.0.0.1/mcp"),
            "custom.transport.streamable_http.url",
        ),
        (
            "not a url",
            http_integration("tool", "not a url"),
            "custom.transport.streamable_http.url",
        ),
        (
            "metadata",
            http_integration("tool", "http://169.254.169.254/latest"),
            "custom.transport.streamable_http.url",
        ),
        (
            "private",
            http_integration("tool", "http://10.0.0.1/mcp"),
            "custom.transport.streamable_http.url",
        ),
        (
            "header name",
            header("bad header"),
            "custom.auth.header.header_name",
        ),
        (
            "reserved header",
            header("Host"),
            "custom.auth.header.header_name",
        ),
        ("empty command", stdio(""), "custom.transport.stdio.command"),
        (
            "not allow-listed",
            stdio("/bin/sh"),
            "custom.transport.stdio.command",
        ),
    ];
    for (case, request, field) in cases {
        let status = h
            .client
            .create_integration(req(request, &token))
            .await
            .expect_err(case);
        assert_eq!(bad_fields(&status), [field], "{case}");
    }
    assert!(
        list(&mut h, &token, false).await.is_empty(),
        "nothing was stored"
    );
}

async fn the_predefined_catalog_is_listed_and_instantiated_with_its_secrets(kind: DbKind) {
    let mut catalog = tempfile::NamedTempFile::new().expect("a temp file");
    write!(
        catalog,
        r#"
        [[integrations]]
        id = "local"
        display_name = "Local server"
        description = "A server on this machine."
        default_slug = "local"
        transport = {{ type = "streamable_http", url = "{URL}" }}
        auth = {{ type = "bearer_token", secret = "token" }}
        secrets = [{{ name = "token", description = "The token.", required = true }}]
        "#
    )
    .expect("written");
    let path = catalog.path().to_owned();
    let mut h = start_with(kind, |config| config.catalog_file = Some(path)).await;
    let token = admin("org-a");
    let listed = h
        .client
        .list_predefined_integrations(req(
            pb::ListPredefinedIntegrationsRequest::default(),
            &member("org-a"),
        ))
        .await
        .expect("listed")
        .into_inner();
    assert_eq!(listed.integrations.len(), 1);
    assert_eq!(listed.integrations[0].secrets[0].name, "token");

    let predefined = |secrets: &[(&str, &str)]| pb::CreateIntegrationRequest {
        display_name: "Local".into(),
        slug: "local".into(),
        source: Some(pb::create_integration_request::Source::Predefined(
            pb::PredefinedIntegrationSpec {
                catalog_id: "local".into(),
                secrets: secrets
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            },
        )),
        ..Default::default()
    };
    let status = h
        .client
        .create_integration(req(predefined(&[]), &token))
        .await
        .expect_err("the token is required");
    assert_eq!(bad_fields(&status), ["predefined.secrets[token]"]);

    let created = create(&mut h, &token, predefined(&[("token", "t0k3n")])).await;
    assert_eq!(created.kind(), pb::IntegrationKind::Predefined);
    assert_eq!(created.predefined_id, "local");
    match created.auth.and_then(|a| a.method) {
        Some(Method::BearerToken(bearer)) => {
            assert!(bearer.token_set);
            assert!(bearer.token.is_empty());
        }
        other => panic!("expected bearer auth, got {other:?}"),
    }
}

async fn lists_are_paginated_in_creation_order(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    for i in 0..5 {
        create(&mut h, &token, http_integration(&format!("s{i}"), URL)).await;
    }
    let mut slugs = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = h
            .client
            .list_integrations(req(
                pb::ListIntegrationsRequest {
                    page_size: 2,
                    page_token: page_token.clone(),
                    enabled_only: false,
                },
                &token,
            ))
            .await
            .expect("a page")
            .into_inner();
        assert!(page.integrations.len() <= 2);
        slugs.extend(page.integrations.into_iter().map(|i| i.slug));
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    assert_eq!(slugs, ["s0", "s1", "s2", "s3", "s4"]);
    let status = h
        .client
        .list_integrations(req(
            pb::ListIntegrationsRequest {
                page_token: "garbage".into(),
                ..Default::default()
            },
            &token,
        ))
        .await
        .expect_err("bad token");
    assert_eq!(bad_fields(&status), ["page_token"]);
}

async fn a_repeated_create_with_a_request_id_returns_the_first_integration(kind: DbKind) {
    let mut h = start(kind).await;
    let token = admin("org-a");
    let keyed = |slug: &str, key: &str| pb::CreateIntegrationRequest {
        request_id: key.into(),
        ..http_integration(slug, URL)
    };
    let first = create(&mut h, &token, keyed("github", "key-1")).await;
    let again = create(&mut h, &token, keyed("github", "key-1")).await;
    assert_eq!(
        first.id, again.id,
        "the repeat returns the first integration"
    );

    let reused = h
        .client
        .create_integration(req(keyed("linear", "key-1"), &token))
        .await
        .expect_err("the key belongs to another request");
    assert_eq!(reused.code(), Code::InvalidArgument, "{reused:?}");
    assert_eq!(
        tonic_types::StatusExt::get_error_details(&reused)
            .error_info()
            .map(|info| info.reason.clone())
            .as_deref(),
        Some("ERROR_REASON_REQUEST_ID_REUSED")
    );

    // A failed request leaves its key free: the slug is taken, so this
    // fails, and the same key then serves a request that succeeds.
    let taken = h
        .client
        .create_integration(req(keyed("github", "key-2"), &token))
        .await
        .expect_err("the slug is taken");
    assert_eq!(taken.code(), Code::AlreadyExists, "{taken:?}");
    create(&mut h, &token, keyed("notion", "key-2")).await;

    let elsewhere = create(&mut h, &admin("org-b"), keyed("github", "key-1")).await;
    assert_ne!(elsewhere.id, first.id, "keys are scoped by organization");
}

db_tests!(
    an_admin_manages_an_integration_through_its_lifecycle,
    another_organization_gets_not_found_from_every_rpc,
    members_read_and_only_admins_write,
    a_taken_slug_is_already_exists_within_an_organization_only,
    invalid_input_is_refused_naming_the_field,
    the_predefined_catalog_is_listed_and_instantiated_with_its_secrets,
    lists_are_paginated_in_creation_order,
    a_repeated_create_with_a_request_id_returns_the_first_integration,
);
