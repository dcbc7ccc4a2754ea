//! The `switchboard.mcp.v1.PolicyService` handlers: proto in, domain call,
//! proto out.

use switchboard_auth::Principal;
use switchboard_proto::mcp::v1::{self as pb, policy_service_server::PolicyService};
use switchboard_server::principal;
use tonic::{Request, Response, Status};

use super::parse::parse_id;
use crate::domain::{
    calls::CallService,
    error::McpError,
    policy::{
        decide::{RuleRef, Verdict},
        enforce::{AllowList, Called},
        facts::Subject,
        model::{Effect, PolicyName, PolicyVersion, Rule},
        service::PolicyAdmin,
        validate::{PolicyInput, RuleInput},
    },
    service::IntegrationService,
};

/// Most tools an allow-list may name.
pub(crate) const MAX_ALLOWED_TOOLS: usize = 1024;
/// Longest tool name an allow-list may hold, in bytes.
pub(crate) const MAX_ALLOWED_TOOL_BYTES: usize = 256;
/// Default page of `ListPolicyVersions`.
const DEFAULT_VERSIONS_PAGE: usize = 50;

/// The tools an agent may call, from a request: unset is no narrowing.
pub(crate) fn allow_list(list: Option<&pb::ToolAllowList>) -> Result<AllowList, McpError> {
    let Some(list) = list else {
        return Ok(AllowList::any());
    };
    if list.tools.len() > MAX_ALLOWED_TOOLS {
        return Err(McpError::invalid(
            "allowed_tools.tools",
            format!("at most {MAX_ALLOWED_TOOLS} tools"),
        ));
    }
    if list.tools.iter().any(|t| t.len() > MAX_ALLOWED_TOOL_BYTES) {
        return Err(McpError::invalid(
            "allowed_tools.tools",
            format!("each at most {MAX_ALLOWED_TOOL_BYTES} bytes"),
        ));
    }
    Ok(AllowList::only(list.tools.iter().cloned()))
}

/// The PolicyService API.
#[derive(Debug, Clone)]
pub(crate) struct PolicyApi {
    admin: PolicyAdmin,
    integrations: IntegrationService,
    calls: CallService,
}

impl PolicyApi {
    pub(crate) fn new(
        admin: PolicyAdmin,
        integrations: IntegrationService,
        calls: CallService,
    ) -> Self {
        Self {
            admin,
            integrations,
            calls,
        }
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn caller<T>(request: &Request<T>) -> Result<Principal, Status> {
    principal(request).cloned()
}

fn effect(value: i32) -> Option<Effect> {
    match pb::PolicyEffect::try_from(value).ok()? {
        pb::PolicyEffect::Allow => Some(Effect::Allow),
        pb::PolicyEffect::Deny => Some(Effect::Deny),
        pb::PolicyEffect::RequireApproval => Some(Effect::RequireApproval),
        pb::PolicyEffect::Unspecified => None,
    }
}

fn proto_effect(effect: Effect) -> i32 {
    match effect {
        Effect::Allow => pb::PolicyEffect::Allow,
        Effect::Deny => pb::PolicyEffect::Deny,
        Effect::RequireApproval => pb::PolicyEffect::RequireApproval,
    }
    .into()
}

fn policy_input(policy: pb::Policy) -> PolicyInput {
    PolicyInput {
        guardrails: super::parse::setting_inputs(&policy.guardrails),
        name: policy.name,
        description: policy.description,
        default_effect: effect(policy.default_effect),
        rules: policy
            .rules
            .into_iter()
            .map(|rule| RuleInput {
                effect: effect(rule.effect),
                name: rule.name,
                condition: rule.condition,
                reason: rule.reason,
                approver_role: rule.approver_role,
                caller_may_approve: rule.caller_may_approve,
            })
            .collect(),
    }
}

fn proto_rule(rule: &Rule) -> pb::PolicyRule {
    pb::PolicyRule {
        name: rule.name.clone(),
        condition: rule.condition.clone(),
        effect: proto_effect(rule.effect),
        reason: rule.reason.clone(),
        approver_role: rule.approver_role.clone(),
        caller_may_approve: rule.caller_may_approve,
    }
}

fn proto_policy(version: &PolicyVersion) -> pb::Policy {
    pb::Policy {
        name: version.name.to_string(),
        description: version.body.description.clone(),
        rules: version.body.rules.iter().map(proto_rule).collect(),
        default_effect: proto_effect(version.body.default_effect),
        version: version.version,
        updated_by: version.updated_by.clone(),
        update_time: Some(prost_types::Timestamp {
            seconds: version.updated_at.div_euclid(1000),
            nanos: i32::try_from(version.updated_at.rem_euclid(1000) * 1_000_000).unwrap_or(0),
        }),
        guardrails: super::convert::proto_guardrail_settings(&version.body.guardrails),
    }
}

fn proto_rule_ref(rule: &RuleRef) -> pb::PolicyRuleRef {
    pb::PolicyRuleRef {
        policy: rule.policy.clone(),
        version: rule.version,
        rule: rule.rule.name.clone(),
        effect: proto_effect(rule.rule.effect),
        reason: rule.rule.reason.clone(),
    }
}

fn proto_verdict(verdict: &Verdict) -> pb::ExplainPolicyResponse {
    pb::ExplainPolicyResponse {
        effect: proto_effect(verdict.effect),
        deciding_rule: verdict.deciding.as_ref().map(proto_rule_ref),
        matched_rules: verdict.matched.iter().map(proto_rule_ref).collect(),
        errors: verdict
            .errors
            .iter()
            .map(|(rule, message)| pb::PolicyRuleError {
                rule: Some(proto_rule_ref(rule)),
                message: message.clone(),
            })
            .collect(),
    }
}

/// A policy name from a request, or the field's error.
fn policy_name(field: &str, name: &str) -> Result<PolicyName, McpError> {
    PolicyName::parse(name)
        .ok_or_else(|| McpError::invalid(field, "must match ^[a-z0-9][a-z0-9-]{0,62}$"))
}

/// A version asked for: 0 is the current one.
fn version(field: &str, version: i64) -> Result<Option<i64>, McpError> {
    match version {
        0 => Ok(None),
        v if v > 0 => Ok(Some(v)),
        _ => Err(McpError::invalid(field, "must not be negative")),
    }
}

/// The caller to explain for: oneself, or (admins only) another subject of
/// the caller's organization.
fn subject(caller: &Principal, requested: Option<pb::PolicySubject>) -> Result<Subject, McpError> {
    let Some(requested) = requested else {
        return Ok(caller.into());
    };
    if !caller.is_admin() {
        return Err(McpError::Forbidden(
            "explaining a decision for someone else needs the admin role",
        ));
    }
    Ok(Subject {
        user: requested.user,
        organization: caller.org_id.clone(),
        roles: requested.roles,
        groups: requested.groups,
        teams: requested.teams,
        service: requested.service,
    })
}

#[tonic::async_trait]
impl PolicyService for PolicyApi {
    async fn put_policy(
        &self,
        request: Request<pb::PutPolicyRequest>,
    ) -> Reply<pb::PutPolicyResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let policy = request
            .policy
            .ok_or_else(|| McpError::invalid("policy", "must be set"))?;
        let written = self
            .admin
            .put(&caller, policy_input(policy), request.expected_version)
            .await?;
        Ok(Response::new(pb::PutPolicyResponse {
            policy: Some(proto_policy(&written)),
        }))
    }

    async fn get_policy(
        &self,
        request: Request<pb::GetPolicyRequest>,
    ) -> Reply<pb::GetPolicyResponse> {
        let caller = caller(&request)?;
        let request = request.get_ref();
        let name = policy_name("name", &request.name)?;
        let version = version("version", request.version)?;
        let policy = self.admin.get(&caller, &name, version).await?;
        Ok(Response::new(pb::GetPolicyResponse {
            policy: Some(proto_policy(&policy)),
        }))
    }

    async fn list_policies(
        &self,
        request: Request<pb::ListPoliciesRequest>,
    ) -> Reply<pb::ListPoliciesResponse> {
        let caller = caller(&request)?;
        let policies = self.admin.list(&caller).await?;
        Ok(Response::new(pb::ListPoliciesResponse {
            policies: policies.iter().map(proto_policy).collect(),
        }))
    }

    async fn list_policy_versions(
        &self,
        request: Request<pb::ListPolicyVersionsRequest>,
    ) -> Reply<pb::ListPolicyVersionsResponse> {
        let caller = caller(&request)?;
        let request = request.get_ref();
        let name = policy_name("name", &request.name)?;
        let limit = match usize::try_from(request.page_size) {
            Ok(0) => DEFAULT_VERSIONS_PAGE,
            Ok(size) => size,
            Err(_) => return Err(McpError::invalid("page_size", "must not be negative").into()),
        };
        let before = match request.page_token.as_str() {
            "" => None,
            token => Some(
                token
                    .parse::<i64>()
                    .map_err(|_| McpError::invalid("page_token", "not a token of this list"))?,
            ),
        };
        let versions = self.admin.versions(&caller, &name, before, limit).await?;
        let full = versions.len() >= limit.min(crate::domain::policy::service::MAX_VERSIONS_PAGE);
        let next_page_token = match versions.last() {
            Some(last) if full && last.version > 1 => last.version.to_string(),
            _ => String::new(),
        };
        Ok(Response::new(pb::ListPolicyVersionsResponse {
            versions: versions.iter().map(proto_policy).collect(),
            next_page_token,
        }))
    }

    async fn delete_policy(
        &self,
        request: Request<pb::DeletePolicyRequest>,
    ) -> Reply<pb::DeletePolicyResponse> {
        let caller = caller(&request)?;
        let request = request.get_ref();
        let name = policy_name("name", &request.name)?;
        if request.expected_version < 0 {
            return Err(McpError::invalid("expected_version", "must not be negative").into());
        }
        self.admin
            .delete(&caller, &name, request.expected_version)
            .await?;
        Ok(Response::new(pb::DeletePolicyResponse {}))
    }

    async fn explain_policy(
        &self,
        request: Request<pb::ExplainPolicyRequest>,
    ) -> Reply<pb::ExplainPolicyResponse> {
        let caller = caller(&request)?;
        let deadline = switchboard_server::grpc_deadline(request.metadata());
        let request = request.into_inner();
        let id = parse_id("integration_id", &request.integration_id)?;
        let subject = subject(&caller, request.subject)?;
        let target = request.target.ok_or_else(|| {
            McpError::invalid("target", "name a tool, a resource URI or a prompt")
        })?;
        let called = match &target {
            pb::explain_policy_request::Target::ToolName(name) => Called::Tool(name),
            pb::explain_policy_request::Target::ResourceUri(uri) => Called::Resource(uri),
            pb::explain_policy_request::Target::PromptName(name) => Called::Prompt(name),
        };
        let integration = self.integrations.usable(&caller, id).await?;
        let policies = self
            .calls
            .policies()
            .ok_or_else(|| McpError::Internal(anyhow::anyhow!("policies are not enforced")))?;
        let timeout = self.calls.timeout_for(&integration, deadline);
        let verdict = policies
            .explain(subject, &integration, called, timeout)
            .await?;
        Ok(Response::new(proto_verdict(&verdict)))
    }
}
