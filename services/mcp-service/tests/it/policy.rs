//! Tool policies over real gRPC against the example MCP server: rules
//! written through PolicyService, enforced on Discover, ExecuteTool,
//! RetrieveResource and GetPrompt.

use std::sync::atomic::Ordering;

use serde_json::json;
use switchboard_example_mcp_server::{HttpServerOptions, RunningHttpServer, spawn_http};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{self as pb, policy_service_client::PolicyServiceClient},
};
use switchboard_test_support::{DbKind, db_tests, minter, token};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt as _;

use crate::support::{Harness, admin, bad_fields, create, http_integration, member, req, start};

struct Setup {
    h: Harness,
    policies: PolicyServiceClient<Channel>,
    upstream: RunningHttpServer,
    id: String,
}

async fn setup(kind: DbKind) -> Setup {
    let upstream = spawn_http(HttpServerOptions::default())
        .await
        .expect("upstream");
    let mut h = start(kind).await;
    let id = create(
        &mut h,
        &admin("org-a"),
        http_integration("example", &upstream.url()),
    )
    .await
    .id;
    let policies = PolicyServiceClient::connect(h.server.url())
        .await
        .expect("connects");
    Setup {
        h,
        policies,
        upstream,
        id,
    }
}

fn rule(name: &str, condition: &str, effect: pb::PolicyEffect) -> pb::PolicyRule {
    pb::PolicyRule {
        name: name.into(),
        condition: condition.into(),
        effect: effect.into(),
        reason: format!("{name} says no"),
        approver_role: if effect == pb::PolicyEffect::RequireApproval {
            "approver".into()
        } else {
            String::new()
        },
        caller_may_approve: false,
    }
}

fn policy(name: &str, rules: Vec<pb::PolicyRule>) -> pb::Policy {
    pb::Policy {
        name: name.into(),
        rules,
        ..Default::default()
    }
}

impl Setup {
    async fn put(
        &mut self,
        policy: pb::Policy,
        expected_version: i64,
    ) -> Result<pb::Policy, Status> {
        self.policies
            .put_policy(req(
                pb::PutPolicyRequest {
                    policy: Some(policy),
                    expected_version,
                },
                &admin("org-a"),
            ))
            .await
            .map(|r| r.into_inner().policy.expect("a policy"))
    }

    async fn execute(
        &mut self,
        token: &str,
        tool: &str,
    ) -> Result<pb::ExecuteToolResponse, Status> {
        self.execute_with(token, tool, None).await
    }

    async fn execute_with(
        &mut self,
        token: &str,
        tool: &str,
        allowed_tools: Option<&[&str]>,
    ) -> Result<pb::ExecuteToolResponse, Status> {
        let arguments = match tool {
            "echo" => json!({"text": "hi"}),
            "add" => json!({"a": 1, "b": 2}),
            "fail" => json!({"message": "no"}),
            "sleep" => json!({"ms": 1}),
            _ => json!({}),
        };
        self.h
            .client
            .execute_tool(req(
                pb::ExecuteToolRequest {
                    integration_id: self.id.clone(),
                    tool_name: tool.into(),
                    arguments: json_to_struct(&arguments),
                    allowed_tools: allowed_tools.map(|tools| pb::ToolAllowList {
                        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
                    }),
                    ..Default::default()
                },
                token,
            ))
            .await
            .map(tonic::Response::into_inner)
    }

    async fn tools(&mut self, token: &str, allowed_tools: Option<&[&str]>) -> Vec<String> {
        let mut names: Vec<String> = self
            .h
            .client
            .discover(req(
                pb::DiscoverRequest {
                    integration_id: self.id.clone(),
                    bypass_cache: false,
                    allowed_tools: allowed_tools.map(|tools| pb::ToolAllowList {
                        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
                    }),
                },
                token,
            ))
            .await
            .expect("Discover answers")
            .into_inner()
            .tools
            .into_iter()
            .map(|t| t.name)
            .collect();
        names.sort();
        names
    }

    fn upstream_calls(&self) -> u64 {
        self.upstream.stats.tool_calls.load(Ordering::Relaxed)
    }
}

/// The rule a POLICY_DENIED status names, asserting its code and reason.
fn denying_rule(status: &Status) -> String {
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    let details = status.get_error_details();
    let info = details.error_info().expect("an ErrorInfo");
    assert_eq!(info.reason, "ERROR_REASON_POLICY_DENIED");
    info.metadata.get("rule").cloned().expect("the rule")
}

async fn a_rule_denies_a_members_tool_and_discover_stops_listing_it(kind: DbKind) {
    let mut s = setup(kind).await;
    // Seen before the policy exists, so the change must reach the cache.
    assert!(
        s.tools(&member("org-a"), None)
            .await
            .contains(&"fail".to_owned())
    );
    let written = s
        .put(
            policy(
                "guard",
                vec![rule(
                    "no-fail-for-members",
                    "!('admin' in caller.roles) && tool.name == 'fail'",
                    pb::PolicyEffect::Deny,
                )],
            ),
            0,
        )
        .await
        .expect("written");
    assert_eq!(written.version, 1);
    let status = s
        .execute(&member("org-a"), "fail")
        .await
        .expect_err("denied");
    assert_eq!(denying_rule(&status), "guard@1/no-fail-for-members");
    assert_eq!(
        status.message(),
        "denied by policy rule guard@1/no-fail-for-members: no-fail-for-members says no"
    );
    assert_eq!(s.upstream_calls(), 0, "the server was never called");
    assert!(
        !s.tools(&member("org-a"), None)
            .await
            .contains(&"fail".to_owned())
    );
    // The rule spares admins and other tools.
    assert!(
        s.tools(&admin("org-a"), None)
            .await
            .contains(&"fail".to_owned())
    );
    let failed = s.execute(&admin("org-a"), "fail").await.expect("runs");
    assert!(failed.is_error);
    assert!(
        !s.execute(&member("org-a"), "echo")
            .await
            .expect("runs")
            .is_error
    );
    assert_eq!(s.upstream_calls(), 2);
}

async fn members_are_read_only_by_the_tools_annotations(kind: DbKind) {
    let mut s = setup(kind).await;
    s.put(
        policy(
            "read-only-members",
            vec![rule(
                "members-read",
                "!('admin' in caller.roles) && request.kind == 'tool' && !tool.read_only",
                pb::PolicyEffect::Deny,
            )],
        ),
        0,
    )
    .await
    .expect("written");
    // `echo`, `add` and `stats` say they are read-only; `counter` says it
    // is not; the rest say nothing and get MCP's defaults.
    assert_eq!(
        s.tools(&member("org-a"), None).await,
        ["add", "echo", "stats"]
    );
    assert!(s.execute(&member("org-a"), "echo").await.is_ok());
    for tool in ["counter", "sleep", "process"] {
        let status = s.execute(&member("org-a"), tool).await.expect_err(tool);
        assert_eq!(denying_rule(&status), "read-only-members@1/members-read");
    }
    assert_eq!(s.tools(&admin("org-a"), None).await.len(), 10);
}

async fn without_policies_every_member_calls_everything(kind: DbKind) {
    let mut s = setup(kind).await;
    assert_eq!(s.tools(&member("org-a"), None).await.len(), 10);
    let failed = s.execute(&member("org-a"), "fail").await.expect("runs");
    assert!(failed.is_error);
    assert!(s.execute(&member("org-a"), "counter").await.is_ok());
    let listed = s
        .policies
        .list_policies(req(pb::ListPoliciesRequest {}, &member("org-a")))
        .await
        .expect("lists")
        .into_inner();
    assert!(listed.policies.is_empty());
}

async fn a_rule_that_does_not_compile_is_invalid_argument_with_its_position(kind: DbKind) {
    let mut s = setup(kind).await;
    let bad = policy(
        "bad",
        vec![
            rule("fine", "true", pb::PolicyEffect::Allow),
            rule("broken", "caller.user ==", pb::PolicyEffect::Deny),
            rule("not-a-bool", "tool.name", pb::PolicyEffect::Deny),
        ],
    );
    let status = s.put(bad, 0).await.expect_err("refused");
    assert_eq!(
        bad_fields(&status),
        ["policy.rules[1].condition", "policy.rules[2].condition"]
    );
    let details = status.get_error_details();
    let violations = &details
        .bad_request()
        .expect("a BadRequest")
        .field_violations;
    assert!(
        violations[0].description.starts_with("line 1, column 15: "),
        "{violations:?}"
    );
    assert!(
        violations[1].description.contains("not a bool"),
        "{violations:?}"
    );
    // Nothing was written; members may not write.
    let denied = s
        .policies
        .put_policy(req(
            pb::PutPolicyRequest {
                policy: Some(policy(
                    "mine",
                    vec![rule("r", "true", pb::PolicyEffect::Allow)],
                )),
                expected_version: 0,
            },
            &member("org-a"),
        ))
        .await
        .expect_err("members may not write");
    assert_eq!(denied.code(), Code::PermissionDenied);
    let deep = policy(
        "deep",
        vec![rule(
            "deep",
            &format!("{}true{}", "(".repeat(2000), ")".repeat(2000)),
            pb::PolicyEffect::Deny,
        )],
    );
    let status = s.put(deep, 0).await.expect_err("refused");
    assert_eq!(bad_fields(&status), ["policy.rules[0].condition"]);
}

async fn every_write_is_a_version_and_a_stale_one_is_refused(kind: DbKind) {
    let mut s = setup(kind).await;
    let v1 = policy("p", vec![rule("a", "true", pb::PolicyEffect::Allow)]);
    assert_eq!(s.put(v1.clone(), 0).await.expect("v1").version, 1);
    let exists = s.put(v1.clone(), 0).await.expect_err("exists");
    assert_eq!(exists.code(), Code::AlreadyExists);
    let v2 = policy("p", vec![rule("b", "false", pb::PolicyEffect::Deny)]);
    let written = s.put(v2.clone(), 1).await.expect("v2");
    assert_eq!(
        (written.version, written.updated_by.as_str()),
        (2, "admin-user")
    );
    let stale = s.put(v2.clone(), 1).await.expect_err("stale");
    assert_eq!(stale.code(), Code::FailedPrecondition);
    assert!(stale.message().contains("version 2"), "{stale:?}");
    let get = |version| pb::GetPolicyRequest {
        name: "p".into(),
        version,
    };
    let old = s
        .policies
        .get_policy(req(get(1), &member("org-a")))
        .await
        .expect("old versions stay readable")
        .into_inner()
        .policy
        .expect("a policy");
    assert_eq!(old.rules[0].name, "a");
    let page = s
        .policies
        .list_policy_versions(req(
            pb::ListPolicyVersionsRequest {
                name: "p".into(),
                page_size: 1,
                page_token: String::new(),
            },
            &admin("org-a"),
        ))
        .await
        .expect("lists")
        .into_inner();
    assert_eq!(
        page.versions.iter().map(|v| v.version).collect::<Vec<_>>(),
        [2]
    );
    let next = s
        .policies
        .list_policy_versions(req(
            pb::ListPolicyVersionsRequest {
                name: "p".into(),
                page_size: 1,
                page_token: page.next_page_token,
            },
            &admin("org-a"),
        ))
        .await
        .expect("lists")
        .into_inner();
    assert_eq!(
        next.versions.iter().map(|v| v.version).collect::<Vec<_>>(),
        [1]
    );
    assert!(next.next_page_token.is_empty());
    let delete = |expected_version| pb::DeletePolicyRequest {
        name: "p".into(),
        expected_version,
    };
    let stale = s
        .policies
        .delete_policy(req(delete(1), &admin("org-a")))
        .await
        .expect_err("stale");
    assert_eq!(stale.code(), Code::FailedPrecondition);
    s.policies
        .delete_policy(req(delete(2), &admin("org-a")))
        .await
        .expect("deleted");
    let gone = s
        .policies
        .get_policy(req(get(0), &admin("org-a")))
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
    assert!(
        s.policies
            .get_policy(req(get(2), &admin("org-a")))
            .await
            .is_ok()
    );
    // Written again, it goes on from the deleted version.
    assert_eq!(s.put(v1, 0).await.expect("again").version, 4);
    let other_org = s
        .policies
        .get_policy(req(get(0), &admin("org-b")))
        .await
        .expect_err("another organization's");
    assert_eq!(other_org.code(), Code::NotFound);
}

async fn explain_names_the_deciding_rule_and_what_every_rule_said(kind: DbKind) {
    let mut s = setup(kind).await;
    s.put(
        policy(
            "p",
            vec![
                rule("everyone", "true", pb::PolicyEffect::Allow),
                rule(
                    "gate-destructive",
                    "tool.destructive",
                    pb::PolicyEffect::RequireApproval,
                ),
                rule(
                    "no-fail",
                    "tool.name == 'fail' && !('admin' in caller.roles)",
                    pb::PolicyEffect::Deny,
                ),
                rule(
                    "files",
                    "resource.uri.startsWith('file:')",
                    pb::PolicyEffect::Allow,
                ),
            ],
        ),
        0,
    )
    .await
    .expect("written");
    let explain = |subject, tool: &str| pb::ExplainPolicyRequest {
        subject,
        integration_id: s.id.clone(),
        target: Some(pb::explain_policy_request::Target::ToolName(tool.into())),
    };
    let fail = explain(None, "fail");
    let echo = explain(None, "echo");
    let someone = explain(
        Some(pb::PolicySubject {
            user: "someone".into(),
            roles: vec!["member".into()],
            ..Default::default()
        }),
        "fail",
    );
    let own = s
        .policies
        .explain_policy(req(fail, &member("org-a")))
        .await
        .expect("explains")
        .into_inner();
    assert_eq!(own.effect, i32::from(pb::PolicyEffect::Deny));
    assert_eq!(own.deciding_rule.expect("a rule").rule, "no-fail");
    let matched: Vec<_> = own.matched_rules.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(matched, ["everyone", "gate-destructive", "no-fail"]);
    assert_eq!(own.errors.len(), 1);
    assert_eq!(own.errors[0].rule.as_ref().expect("a rule").rule, "files");
    let read_only = s
        .policies
        .explain_policy(req(echo, &member("org-a")))
        .await
        .expect("explains")
        .into_inner();
    assert_eq!(read_only.effect, i32::from(pb::PolicyEffect::Allow));
    assert_eq!(read_only.deciding_rule.expect("a rule").rule, "everyone");
    let status = s
        .policies
        .explain_policy(req(someone.clone(), &member("org-a")))
        .await
        .expect_err("only admins explain for others");
    assert_eq!(status.code(), Code::PermissionDenied);
    let theirs = s
        .policies
        .explain_policy(req(someone, &admin("org-a")))
        .await
        .expect("explains")
        .into_inner();
    assert_eq!(theirs.deciding_rule.expect("a rule").rule, "no-fail");
}

async fn an_agents_allow_list_narrows_discover_and_execute(kind: DbKind) {
    let mut s = setup(kind).await;
    let allowed: &[&str] = &["echo", "add"];
    assert_eq!(
        s.tools(&member("org-a"), Some(allowed)).await,
        ["add", "echo"]
    );
    assert!(
        s.execute_with(&member("org-a"), "echo", Some(allowed))
            .await
            .is_ok()
    );
    let status = s
        .execute_with(&member("org-a"), "counter", Some(allowed))
        .await
        .expect_err("off the list");
    assert_eq!(status.code(), Code::PermissionDenied);
    assert!(status.message().contains("counter"), "{status:?}");
    // An empty list allows nothing; no list allows everything.
    assert!(s.tools(&member("org-a"), Some(&[])).await.is_empty());
    assert_eq!(s.tools(&member("org-a"), None).await.len(), 10);
    let too_many: Vec<String> = (0..=1024).map(|i| format!("t{i}")).collect();
    let too_many: Vec<&str> = too_many.iter().map(String::as_str).collect();
    let status = s
        .execute_with(&member("org-a"), "echo", Some(&too_many))
        .await
        .expect_err("too long");
    assert_eq!(bad_fields(&status), ["allowed_tools.tools"]);
    assert!(
        s.execute_with(&member("org-a"), "echo", Some(&too_many[..1024]))
            .await
            .is_err()
    );
}

/// A token carrying groups, teams and the calling service.
fn claims_token(user: &str, groups: &[&str], teams: &[&str], service: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    minter()
        .mint(&json!({
            "sub": user, "org": "org-a", "roles": ["member"], "aud": "switchboard",
            "exp": now + 600, "iat": now,
            "groups": groups, "teams": teams, "azp": service,
        }))
        .expect("mints")
}

async fn groups_teams_and_the_calling_service_reach_rules(kind: DbKind) {
    let mut s = setup(kind).await;
    s.put(
        policy(
            "team-integration",
            vec![
                rule(
                    "payments-only",
                    "integration.slug == 'example' && !('payments' in caller.teams)",
                    pb::PolicyEffect::Deny,
                ),
                rule(
                    "no-contractors",
                    "'contractors' in caller.groups",
                    pb::PolicyEffect::Deny,
                ),
                rule(
                    "no-ci",
                    "caller.service == 'ci-bot'",
                    pb::PolicyEffect::Deny,
                ),
            ],
        ),
        0,
    )
    .await
    .expect("written");
    let payments = claims_token("p", &["eng"], &["payments"], "web");
    assert!(s.execute(&payments, "echo").await.is_ok());
    for (token, rule) in [
        (
            claims_token("q", &["eng"], &["search"], "web"),
            "payments-only",
        ),
        (
            claims_token("c", &["contractors"], &["payments"], "web"),
            "no-contractors",
        ),
        (claims_token("b", &[], &["payments"], "ci-bot"), "no-ci"),
        (token("org-a", "plain", &["member"]), "payments-only"),
    ] {
        let status = s.execute(&token, "echo").await.expect_err(rule);
        assert_eq!(denying_rule(&status), format!("team-integration@1/{rule}"));
    }
}

async fn approval_gates_hold_tools_and_refuse_resources_and_prompts(kind: DbKind) {
    let mut s = setup(kind).await;
    s.put(
        policy(
            "gates",
            vec![rule("gate-all", "true", pb::PolicyEffect::RequireApproval)],
        ),
        0,
    )
    .await
    .expect("written");
    // Gated tools stay listed.
    assert_eq!(s.tools(&member("org-a"), None).await.len(), 10);
    match s.execute(&member("org-a"), "echo").await {
        Err(status) => {
            assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
            assert!(status.message().contains("gate-all says no"), "{status:?}");
        }
        Ok(response) => assert_eq!(
            response.failure_reason,
            i32::from(pb::ToolFailureReason::ApprovalRequired)
        ),
    }
    assert_eq!(s.upstream_calls(), 0, "a gated tool does not run");
    let read =
        s.h.client
            .retrieve_resource(req(
                pb::RetrieveResourceRequest {
                    integration_id: s.id.clone(),
                    uri: "docs://readme".into(),
                    ..Default::default()
                },
                &member("org-a"),
            ))
            .await
            .expect_err("only tools can be approved");
    assert_eq!(denying_rule(&read), "gates@1/gate-all");
    assert!(
        read.message().contains("only tool calls can be approved"),
        "{read:?}"
    );
}

db_tests!(
    a_rule_denies_a_members_tool_and_discover_stops_listing_it,
    members_are_read_only_by_the_tools_annotations,
    without_policies_every_member_calls_everything,
    a_rule_that_does_not_compile_is_invalid_argument_with_its_position,
    every_write_is_a_version_and_a_stale_one_is_refused,
    explain_names_the_deciding_rule_and_what_every_rule_said,
    an_agents_allow_list_narrows_discover_and_execute,
    groups_teams_and_the_calling_service_reach_rules,
    approval_gates_hold_tools_and_refuse_resources_and_prompts,
);
