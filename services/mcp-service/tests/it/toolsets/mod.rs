//! Toolsets over real gRPC: written by admins through ToolsetsService, read
//! by members, bounded, audited, and never naming another organization's
//! integrations.

mod bounds;

use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_mcp_service::Config;
use switchboard_proto::mcp::v1::{self as pb, toolsets_service_client::ToolsetsServiceClient};
use switchboard_test_support::{DbKind, db_tests};
use tonic::{Code, Status, transport::Channel};

use crate::support::{
    Harness, admin, bad_fields, create, http_integration, member, req, start_with,
};

pub(super) struct Setup {
    pub(super) h: Harness,
    pub(super) toolsets: ToolsetsServiceClient<Channel>,
    _upstream: RunningHttpServer,
    /// Integrations of org-a: `alpha` and `beta`.
    pub(super) alpha: String,
    pub(super) beta: String,
    /// An integration of org-b.
    pub(super) foreign: String,
}

pub(super) async fn setup(kind: DbKind, configure: impl FnOnce(&mut Config)) -> Setup {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start_with(kind, configure).await;
    let url = upstream.url();
    let alpha = create(&mut h, &admin("org-a"), http_integration("alpha", &url))
        .await
        .id;
    let beta = create(&mut h, &admin("org-a"), http_integration("beta", &url))
        .await
        .id;
    let foreign = create(&mut h, &admin("org-b"), http_integration("alpha", &url))
        .await
        .id;
    let toolsets = ToolsetsServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    Setup {
        h,
        toolsets,
        _upstream: upstream,
        alpha,
        beta,
        foreign,
    }
}

pub(super) fn member_of(id: &str, tools: Option<&[&str]>) -> pb::ToolsetMember {
    pb::ToolsetMember {
        integration_id: id.into(),
        tools: tools.map(|t| pb::ToolsetSelection {
            names: t.iter().map(|s| (*s).to_owned()).collect(),
        }),
        ..Default::default()
    }
}

pub(super) fn toolset(name: &str, members: Vec<pb::ToolsetMember>) -> pb::Toolset {
    pb::Toolset {
        name: name.into(),
        description: format!("{name} for tests"),
        members,
        ..Default::default()
    }
}

impl Setup {
    pub(super) async fn create(
        &mut self,
        token: &str,
        toolset: pb::Toolset,
    ) -> Result<pb::Toolset, Status> {
        self.toolsets
            .create_toolset(req(
                pb::CreateToolsetRequest {
                    toolset: Some(toolset),
                },
                token,
            ))
            .await
            .map(|r| r.into_inner().toolset.expect("a toolset"))
    }

    pub(super) async fn get(&mut self, token: &str, name: &str) -> Result<pb::Toolset, Status> {
        self.toolsets
            .get_toolset(req(pb::GetToolsetRequest { name: name.into() }, token))
            .await
            .map(|r| r.into_inner().toolset.expect("a toolset"))
    }

    pub(super) async fn list(
        &mut self,
        page_size: i32,
        page_token: String,
    ) -> pb::ListToolsetsResponse {
        self.toolsets
            .list_toolsets(req(
                pb::ListToolsetsRequest {
                    page_size,
                    page_token,
                },
                &member("org-a"),
            ))
            .await
            .expect("listed")
            .into_inner()
    }

    pub(super) async fn update(
        &mut self,
        token: &str,
        toolset: pb::Toolset,
        paths: &[&str],
    ) -> Result<pb::Toolset, Status> {
        self.toolsets
            .update_toolset(req(
                pb::UpdateToolsetRequest {
                    toolset: Some(toolset),
                    update_mask: Some(prost_types::FieldMask {
                        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
                    }),
                },
                token,
            ))
            .await
            .map(|r| r.into_inner().toolset.expect("a toolset"))
    }

    pub(super) async fn delete(&mut self, token: &str, name: &str) -> Result<(), Status> {
        self.toolsets
            .delete_toolset(req(pb::DeleteToolsetRequest { name: name.into() }, token))
            .await
            .map(|_| ())
    }
}

async fn an_admin_creates_reads_pages_updates_and_deletes_a_toolset(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let (alpha, beta) = (s.alpha.clone(), s.beta.clone());
    let created = s
        .create(
            &admin("org-a"),
            toolset(
                "dev-tools",
                vec![member_of(&alpha, Some(&["echo"])), member_of(&beta, None)],
            ),
        )
        .await
        .expect("created");
    assert_eq!(created.created_by, "admin-user");
    assert!(created.create_time.is_some());
    let slugs: Vec<&str> = created
        .members
        .iter()
        .map(|m| m.integration_slug.as_str())
        .collect();
    assert_eq!(slugs, ["alpha", "beta"]);
    assert_eq!(
        created.members[0]
            .tools
            .as_ref()
            .expect("a selection")
            .names,
        ["echo"]
    );
    assert!(
        created.members[1].tools.is_none(),
        "unset stays unset: every tool"
    );

    let read = s
        .get(&member("org-a"), "dev-tools")
        .await
        .expect("members read");
    assert_eq!(read, created);

    s.create(&admin("org-a"), toolset("a-first", vec![]))
        .await
        .expect("created");
    let first = s.list(1, String::new()).await;
    assert_eq!(first.toolsets.len(), 1);
    assert_eq!(first.toolsets[0].name, "a-first");
    let second = s.list(1, first.next_page_token).await;
    assert_eq!(second.toolsets[0].name, "dev-tools");
    assert!(second.next_page_token.is_empty(), "the last page");

    let mut change = toolset("dev-tools", vec![member_of(&beta, Some(&[]))]);
    change.description = "ignored: not in the mask".into();
    let updated = s
        .update(&admin("org-a"), change, &["members"])
        .await
        .expect("updated");
    assert_eq!(updated.description, "dev-tools for tests");
    assert_eq!(updated.members.len(), 1);
    assert_eq!(updated.members[0].integration_slug, "beta");
    assert!(
        updated.members[0]
            .tools
            .as_ref()
            .expect("a selection")
            .names
            .is_empty()
    );
    assert_eq!(
        s.get(&admin("org-a"), "dev-tools").await.expect("read"),
        updated
    );

    s.delete(&admin("org-a"), "dev-tools")
        .await
        .expect("deleted");
    let gone = s.get(&admin("org-a"), "dev-tools").await.expect_err("gone");
    assert_eq!(gone.code(), Code::NotFound);
    assert_eq!(gone.message(), "toolset not found");
    let again = s
        .delete(&admin("org-a"), "dev-tools")
        .await
        .expect_err("gone");
    assert_eq!(again.code(), Code::NotFound);
}

async fn members_read_toolsets_and_only_admins_write_them(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let alpha = s.alpha.clone();
    let refused = s
        .create(
            &member("org-a"),
            toolset("mine", vec![member_of(&alpha, None)]),
        )
        .await
        .expect_err("members may not write");
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert_eq!(refused.message(), "managing toolsets needs the admin role");
    s.create(&admin("org-a"), toolset("ours", vec![]))
        .await
        .expect("created");
    let update = s
        .update(&member("org-a"), toolset("ours", vec![]), &[])
        .await
        .expect_err("members may not write");
    assert_eq!(update.code(), Code::PermissionDenied);
    let delete = s.delete(&member("org-a"), "ours").await.expect_err("no");
    assert_eq!(delete.code(), Code::PermissionDenied);
    s.get(&member("org-a"), "ours").await.expect("members read");
}

async fn another_organizations_integrations_and_toolsets_do_not_exist(kind: DbKind) {
    let mut s = setup(kind, |_| {}).await;
    let (alpha, foreign) = (s.alpha.clone(), s.foreign.clone());
    let refused = s
        .create(
            &admin("org-a"),
            toolset(
                "mixed",
                vec![member_of(&alpha, None), member_of(&foreign, None)],
            ),
        )
        .await
        .expect_err("org-b's integration is not org-a's");
    assert_eq!(bad_fields(&refused), ["toolset.members[1].integration_id"]);
    let missing = uuid::Uuid::now_v7().to_string();
    let refused = s
        .create(
            &admin("org-a"),
            toolset("mixed", vec![member_of(&missing, None)]),
        )
        .await
        .expect_err("no such integration");
    assert_eq!(bad_fields(&refused), ["toolset.members[0].integration_id"]);
    // Both refusals read the same: nothing tells an id of another
    // organization from one that never existed.
    let message = |status: &Status| {
        use tonic_types::StatusExt as _;
        status
            .get_error_details()
            .bad_request()
            .expect("details")
            .field_violations[0]
            .description
            .replace(&foreign, "ID")
            .replace(&missing, "ID")
    };
    let foreign_refusal = s
        .create(
            &admin("org-a"),
            toolset("mixed", vec![member_of(&foreign, None)]),
        )
        .await
        .expect_err("refused");
    assert_eq!(message(&refused), message(&foreign_refusal));
    assert_eq!(message(&refused), "no integration ID in this organization");

    s.create(
        &admin("org-b"),
        toolset("theirs", vec![member_of(&foreign, None)]),
    )
    .await
    .expect("org-b's own");
    let hidden = s.get(&admin("org-a"), "theirs").await.expect_err("hidden");
    assert_eq!(hidden.code(), Code::NotFound);
    let update = s
        .update(&admin("org-a"), toolset("theirs", vec![]), &[])
        .await
        .expect_err("hidden");
    assert_eq!(update.code(), Code::NotFound);
    assert_eq!(s.list(0, String::new()).await.toolsets.len(), 0);
    // The same name is free in org-a.
    s.create(&admin("org-a"), toolset("theirs", vec![]))
        .await
        .expect("names are per organization");
}

db_tests!(
    an_admin_creates_reads_pages_updates_and_deletes_a_toolset,
    members_read_toolsets_and_only_admins_write_them,
    another_organizations_integrations_and_toolsets_do_not_exist,
);
