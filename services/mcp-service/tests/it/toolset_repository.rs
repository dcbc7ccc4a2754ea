//! The toolset repository's conformance suite and the resolver the MCP
//! endpoint serves toolsets through, on SQLite and PostgreSQL.

use std::sync::Arc;

use base64::Engine as _;
use switchboard_auth::Principal;
use switchboard_db::DatabaseArgs;
use switchboard_mcp_service::{
    domain::{
        error::McpError,
        integration::{
            AuthConfig, DisplayName, Integration, IntegrationId, IntegrationKind, OrgId, Secrets,
            Slug, Timeouts,
        },
        ports::IntegrationRepository,
        toolset::{
            model::{Member, ToolOverride, Toolset, ToolsetBody, ToolsetName},
            ports::{ToolsetRepository, ToolsetStoreError},
            serve::ToolsetResolver,
        },
        transport::{StreamableHttp, Transport},
    },
    outbound::storage::{
        secret_box::KeyRing,
        sql::{MIGRATIONS, SqlIntegrationRepository},
        toolsets::SqlToolsetRepository,
    },
};
use switchboard_test_support::{DbKind, TestDb, db_tests};

struct Stores {
    _db: TestDb,
    integrations: Arc<SqlIntegrationRepository>,
    toolsets: Arc<SqlToolsetRepository>,
}

async fn stores(kind: DbKind) -> Stores {
    let db = TestDb::new(kind).await.expect("db");
    let database = DatabaseArgs::for_url(&db.url)
        .open("mcp", MIGRATIONS)
        .await
        .expect("migrated");
    let key = format!(
        "k1:{}",
        base64::engine::general_purpose::STANDARD.encode([1u8; 32])
    );
    let keys = Arc::new(KeyRing::parse(&key).expect("keys"));
    Stores {
        _db: db,
        integrations: Arc::new(SqlIntegrationRepository::new(database.pool.clone(), keys)),
        toolsets: Arc::new(SqlToolsetRepository::new(database.pool)),
    }
}

fn integration(org: &str, slug: &str) -> Integration {
    Integration {
        id: IntegrationId::new(),
        org_id: OrgId(org.into()),
        display_name: DisplayName::parse("n", "Name").expect("valid"),
        slug: Slug::parse("s", slug).expect("valid"),
        kind: IntegrationKind::Custom,
        transport: Transport::StreamableHttp(StreamableHttp {
            url: "https://mcp.example.com/mcp".into(),
        }),
        auth: AuthConfig::None,
        enabled: true,
        timeouts: Timeouts::default(),
        guardrails: Default::default(),
        secrets: Secrets::default(),
        created_at: 1,
        updated_at: 1,
    }
}

fn name(text: &str) -> ToolsetName {
    ToolsetName::parse(text).expect("valid")
}

fn toolset(text: &str, members: Vec<Member>) -> Toolset {
    Toolset {
        name: name(text),
        body: ToolsetBody {
            description: format!("{text} described"),
            members,
        },
        created_by: "creator".into(),
        created_at: 10,
        updated_by: "creator".into(),
        updated_at: 10,
    }
}

fn member(id: IntegrationId, tools: Option<&[&str]>, resources: Option<&[&str]>) -> Member {
    let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
    Member {
        integration_id: id,
        tools: tools.map(owned),
        resources: resources.map(owned),
        overrides: Vec::new(),
    }
}

fn org(text: &str) -> OrgId {
    OrgId(text.into())
}

async fn stored_toolsets_round_trip_page_by_name_and_stay_in_their_organization(kind: DbKind) {
    let s = stores(kind).await;
    let id = IntegrationId::new();
    let written = toolset(
        "dev",
        vec![
            Member {
                overrides: vec![
                    ToolOverride {
                        tool: "echo".into(),
                        name: Some("say".into()),
                        description: Some("Says it back.".into()),
                        hidden: false,
                    },
                    ToolOverride {
                        tool: "add".into(),
                        hidden: true,
                        ..ToolOverride::default()
                    },
                ],
                ..member(id, Some(&["echo"]), Some(&["file:///{path}"]))
            },
            member(IntegrationId::new(), Some(&[]), None),
        ],
    );
    s.toolsets
        .insert(&org("org-a"), &written)
        .await
        .expect("inserted");
    let read = s
        .toolsets
        .get(&org("org-a"), &name("dev"))
        .await
        .expect("read");
    assert_eq!(
        read.as_ref(),
        Some(&written),
        "selections, empty and unset, and overrides survive"
    );
    assert!(
        s.toolsets
            .get(&org("org-b"), &name("dev"))
            .await
            .expect("read")
            .is_none()
    );
    let taken = s
        .toolsets
        .insert(&org("org-a"), &written)
        .await
        .expect_err("taken");
    assert!(
        matches!(taken, ToolsetStoreError::Exists(ref n) if n == "dev"),
        "{taken:?}"
    );
    s.toolsets
        .insert(&org("org-b"), &written)
        .await
        .expect("names are per organization");

    for text in ["b-one", "a-one", "c-one"] {
        s.toolsets
            .insert(&org("org-a"), &toolset(text, vec![]))
            .await
            .expect("inserted");
    }
    assert_eq!(s.toolsets.count(&org("org-a")).await.expect("counted"), 4);
    let names = |page: Vec<Toolset>| {
        page.into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    let first = s
        .toolsets
        .list(&org("org-a"), None, 2)
        .await
        .expect("listed");
    assert_eq!(names(first), ["a-one", "b-one"]);
    let rest = s
        .toolsets
        .list(&org("org-a"), Some(&name("b-one")), 10)
        .await
        .expect("listed");
    assert_eq!(names(rest), ["c-one", "dev"]);

    let mut changed = written.clone();
    changed.body.members.truncate(1);
    changed.updated_by = "editor".into();
    changed.updated_at = 20;
    assert!(
        s.toolsets
            .update(&org("org-a"), &changed)
            .await
            .expect("updated")
    );
    assert_eq!(
        s.toolsets
            .get(&org("org-a"), &name("dev"))
            .await
            .expect("read"),
        Some(changed.clone())
    );
    assert!(
        !s.toolsets
            .update(&org("org-c"), &changed)
            .await
            .expect("nothing to update")
    );
    assert!(
        s.toolsets
            .delete(&org("org-a"), &name("dev"))
            .await
            .expect("deleted")
    );
    assert!(
        !s.toolsets
            .delete(&org("org-a"), &name("dev"))
            .await
            .expect("gone")
    );
    assert!(
        s.toolsets
            .get(&org("org-b"), &name("dev"))
            .await
            .expect("read")
            .is_some(),
        "org-b's stays"
    );
}

async fn a_toolset_resolves_to_its_integrations_as_they_are_now(kind: DbKind) {
    let s = stores(kind).await;
    let mut alpha = integration("org-a", "alpha");
    let beta = integration("org-a", "beta");
    let gone = integration("org-a", "gone");
    for i in [&alpha, &beta, &gone] {
        s.integrations.insert(i).await.expect("inserted");
    }
    s.toolsets
        .insert(
            &org("org-a"),
            &toolset(
                "dev",
                vec![
                    member(alpha.id, Some(&["echo"]), None),
                    member(gone.id, None, None),
                    member(beta.id, None, Some(&["file:///readme"])),
                ],
            ),
        )
        .await
        .expect("inserted");
    // Renamed and disabled after the toolset was written; one deleted.
    alpha.slug = Slug::parse("s", "renamed").expect("valid");
    alpha.enabled = false;
    assert!(s.integrations.update(&alpha).await.expect("updated"));
    assert!(
        s.integrations
            .delete(&org("org-a"), gone.id)
            .await
            .expect("deleted")
    );

    let resolver = ToolsetResolver::new(s.toolsets.clone(), s.integrations.clone());
    let caller = Principal::new("org-a", "user", vec![]);
    let resolved = resolver.resolve(&caller, "dev").await.expect("resolved");
    assert_eq!(resolved.description, "dev described");
    let members: Vec<_> = resolved
        .members
        .iter()
        .map(|m| {
            (
                m.integration_id,
                m.slug.as_str(),
                m.prefix.as_str(),
                m.enabled,
            )
        })
        .collect();
    assert_eq!(
        members,
        [
            (alpha.id, "renamed", "renamed", false),
            (beta.id, "beta", "beta", true)
        ]
    );
    // A disabled member is not on the surface; enabled, its tools are
    // reached by its new slug, as selected.
    let surface = resolved.clone().surface();
    assert!(surface.route_tool("renamed__echo").is_none(), "disabled");
    assert!(surface.members()[0].shows_resource("file:///readme"));
    let mut enabled = resolved.clone();
    enabled.members[0].enabled = true;
    let surface = enabled.surface();
    let (routed, tool) = surface.route_tool("renamed__echo").expect("served");
    assert_eq!((routed.integration, tool), (alpha.id, "echo"));
    assert_eq!(routed.exposed("echo"), "renamed__echo");
    assert!(surface.route_tool("renamed__add").is_none(), "not selected");

    for (org_id, name) in [("org-b", "dev"), ("org-a", "nope"), ("org-a", "Not A Name")] {
        let caller = Principal::new(org_id, "user", vec![]);
        let missing = resolver
            .resolve(&caller, name)
            .await
            .expect_err("not found");
        assert!(
            matches!(missing, McpError::ToolsetNotFound),
            "{org_id}/{name}: {missing:?}"
        );
    }
}

/// A toolset's members are read in one query, as many as a toolset may
/// hold: only the organization's own, with their slug and state.
async fn the_heads_of_a_full_toolset_are_read_at_once_and_only_the_organizations(kind: DbKind) {
    let stores = stores(kind).await;
    let repo = &stores.integrations;
    let org = OrgId("org-heads".into());
    let mut ids = Vec::new();
    for n in 0..30 {
        let mut own = integration("org-heads", &format!("member_{n}"));
        own.enabled = n % 3 != 0;
        repo.insert(&own).await.expect("stored");
        ids.push(own.id);
    }
    let other = integration("org-other", "member_x");
    repo.insert(&other).await.expect("stored");
    ids.push(other.id);
    ids.push(IntegrationId::new());
    assert_eq!(ids.len(), 32, "the default member limit");

    let mut heads = repo.heads(&org, &ids).await.expect("read");
    heads.sort_by_key(|h| {
        h.slug
            .as_str()
            .trim_start_matches("member_")
            .parse::<u32>()
            .unwrap_or(u32::MAX)
    });
    assert_eq!(
        heads.len(),
        30,
        "another organization's and a missing one are left out"
    );
    for (n, head) in heads.iter().enumerate() {
        assert_eq!(head.id, ids[n]);
        assert_eq!(head.slug.as_str(), format!("member_{n}"));
        assert_eq!(head.enabled, n % 3 != 0, "{}", head.slug.as_str());
    }
    assert!(repo.heads(&org, &[]).await.expect("read").is_empty());
    assert!(
        repo.heads(&OrgId("org-other".into()), &ids[..30])
            .await
            .expect("read")
            .is_empty()
    );
}

db_tests!(
    stored_toolsets_round_trip_page_by_name_and_stay_in_their_organization,
    a_toolset_resolves_to_its_integrations_as_they_are_now,
    the_heads_of_a_full_toolset_are_read_at_once_and_only_the_organizations,
);
