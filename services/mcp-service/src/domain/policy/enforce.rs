//! Policy on the call path: a call's facts gathered (the tool's annotations
//! from discovery), its decision enforced, and Discover's listing narrowed
//! to what the caller may call.

use std::{collections::HashSet, sync::Arc, time::Duration};

use switchboard_auth::Principal;

use rmcp::model::JsonObject;

use super::{
    decide::{Decision, PolicySet, Verdict},
    engine::PolicyEngine,
    error::PolicyError,
    facts::{CallContent, CallFacts, IntegrationFacts, Subject, Target, ToolAnnotations},
};
use crate::domain::{
    guardrails::{Finding, Place},
    integration::{Integration, OrgId},
    ports::{Discovery, McpGateway},
};

/// What a call carries, as the call path has it: its arguments (a tool's
/// or a prompt's, a resource template's parameters), and what the
/// guardrails found so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Carried<'a> {
    /// The arguments, after the guardrails; `None` for a request that
    /// has none (a subscription, a completion).
    pub arguments: Option<&'a JsonObject>,
    /// The guardrails' findings, in the arguments and (once back) the
    /// result.
    pub findings: &'a [Finding],
}

impl Carried<'_> {
    fn content(&self) -> CallContent {
        let found_in = |place: Place| {
            self.findings
                .iter()
                .filter(|f| f.place == place)
                .map(|f| f.detector.clone())
                .collect()
        };
        CallContent {
            arguments: self.arguments.cloned().unwrap_or_default(),
            found_in_arguments: found_in(Place::Arguments),
            found_in_result: found_in(Place::Result),
        }
    }
}

/// The tools an agent may call on an integration, as runs-service passes
/// them along: a further narrowing of what policies allow. `None` means no
/// narrowing (a direct call, or an agent without a filter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Option<HashSet<String>>);

impl AllowList {
    /// No narrowing.
    pub fn any() -> Self {
        Self(None)
    }

    /// Only `tools`.
    pub fn only(tools: impl IntoIterator<Item = String>) -> Self {
        Self(Some(tools.into_iter().collect()))
    }

    /// Whether `tool` is on the list.
    pub fn allows(&self, tool: &str) -> bool {
        self.0.as_ref().is_none_or(|tools| tools.contains(tool))
    }

    /// Refuses a call of `tool` when it is not on the list.
    pub fn check(&self, tool: &str) -> Result<(), PolicyError> {
        if self.allows(tool) {
            Ok(())
        } else {
            Err(PolicyError::OutsideAllowList(tool.to_owned()))
        }
    }
}

/// What the call path asks of policies.
#[derive(Clone)]
pub struct PolicyEnforcer {
    engine: Arc<PolicyEngine>,
    gateway: Arc<dyn McpGateway>,
}

impl std::fmt::Debug for PolicyEnforcer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEnforcer")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

/// What is called, before its annotations are looked up.
#[derive(Debug, Clone, Copy)]
pub enum Called<'a> {
    /// A tool, by name.
    Tool(&'a str),
    /// A resource, by URI.
    Resource(&'a str),
    /// A prompt, by name.
    Prompt(&'a str),
}

fn integration_facts(integration: &Integration) -> IntegrationFacts {
    IntegrationFacts {
        id: integration.id.to_string(),
        slug: integration.slug.as_str().to_owned(),
        name: integration.display_name.as_str().to_owned(),
    }
}

/// The denial of a call policy refused.
fn denied(rule: String, reason: String) -> PolicyError {
    PolicyError::Denied { rule, reason }
}

impl PolicyEnforcer {
    /// Decisions by `engine`, tool annotations from `gateway`'s discovery.
    pub fn new(engine: Arc<PolicyEngine>, gateway: Arc<dyn McpGateway>) -> Self {
        Self { engine, gateway }
    }

    /// A tool's annotations, from discovery (cached by the gateway); the
    /// MCP defaults, which fail closed, when discovery fails or does not
    /// list the tool.
    async fn annotations(
        &self,
        integration: &Integration,
        user: &str,
        tool: &str,
        timeout: Duration,
    ) -> ToolAnnotations {
        match self
            .gateway
            .discover(integration, user, false, timeout)
            .await
        {
            Ok(discovery) => discovery
                .tools
                .iter()
                .find(|t| t.name == tool)
                .map(ToolAnnotations::of_tool)
                .unwrap_or_default(),
            Err(error) => {
                tracing::info!(integration_id = %integration.id, error = %error, "tool annotations unavailable, assuming the MCP defaults");
                ToolAnnotations::default()
            }
        }
    }

    /// The facts of a call of `called` by `subject`, the tool's annotations
    /// looked up only when a rule reads them.
    async fn facts(
        &self,
        set: &PolicySet,
        subject: Subject,
        integration: &Integration,
        called: Called<'_>,
        content: Option<CallContent>,
        timeout: Duration,
    ) -> CallFacts {
        let target = match called {
            Called::Tool(name) => {
                let annotations = if set.uses_tool() {
                    self.annotations(integration, &subject.user, name, timeout)
                        .await
                } else {
                    ToolAnnotations::default()
                };
                Target::Tool {
                    name: name.to_owned(),
                    annotations,
                }
            }
            Called::Resource(uri) => Target::Resource {
                uri: uri.to_owned(),
            },
            Called::Prompt(name) => Target::Prompt {
                name: name.to_owned(),
            },
        };
        CallFacts {
            subject,
            integration: integration_facts(integration),
            target,
            content,
        }
    }

    /// The guardrail settings of `org`'s policies, and whether a rule of
    /// them reads the guardrails' findings (so that tools' results are
    /// decided on again): one look at the organization's policies.
    pub async fn guardrails(
        &self,
        org: &OrgId,
    ) -> Result<(crate::domain::guardrails::GuardrailSettings, bool), PolicyError> {
        let set = self.engine.set_for(org).await?;
        Ok((set.guardrails().clone(), set.reads_findings()))
    }

    /// Refuses a call the policies deny (PERMISSION_DENIED naming the
    /// rule), and gates a tool call they put behind an approval. Only a
    /// tool call can be approved: a resource read or a prompt that needs an
    /// approval is refused.
    pub async fn authorize(
        &self,
        caller: &Principal,
        integration: &Integration,
        called: Called<'_>,
        carried: Carried<'_>,
        timeout: Duration,
    ) -> Result<(), PolicyError> {
        let set = self.engine.set_for(&integration.org_id).await?;
        if set.is_empty() {
            return Ok(());
        }
        // Empty where no rule reads it, and never `None` for a call: a
        // rule that reads what a call carries is decided on every call.
        let content = if set.reads_content() {
            carried.content()
        } else {
            CallContent::default()
        };
        let facts = self
            .facts(
                &set,
                caller.into(),
                integration,
                called,
                Some(content),
                timeout,
            )
            .await;
        match (set.decide(&facts), called) {
            (Decision::Allow, _) => Ok(()),
            (Decision::Deny { rule, reason }, _) => Err(denied(rule, reason)),
            (Decision::RequireApproval(gate), Called::Tool(_)) => {
                Err(PolicyError::ApprovalRequired(Box::new(gate)))
            }
            (Decision::RequireApproval(gate), _) => Err(denied(
                gate.rule,
                format!(
                    "{} (this needs an approval, and only tool calls can be approved)",
                    gate.reason
                ),
            )),
        }
    }

    /// Refuses a tool's result that a rule denies for what the guardrails
    /// found in it (a rule reading `findings`), once the server has
    /// answered: the call has run, and its result is withheld. Rules that
    /// would gate the call on an approval were decided before it left.
    pub async fn review_result(
        &self,
        caller: &Principal,
        integration: &Integration,
        tool: &str,
        carried: Carried<'_>,
        timeout: Duration,
    ) -> Result<(), PolicyError> {
        let set = self.engine.set_for(&integration.org_id).await?;
        if !set.reads_findings() {
            return Ok(());
        }
        let called = Called::Tool(tool);
        let facts = self
            .facts(
                &set,
                caller.into(),
                integration,
                called,
                Some(carried.content()),
                timeout,
            )
            .await;
        match set.decide(&facts) {
            Decision::Deny { rule, reason } => Err(denied(rule, reason)),
            Decision::Allow | Decision::RequireApproval(_) => Ok(()),
        }
    }

    /// `discovery` without what policies deny `caller` (tools off the allow
    /// list included). What needs an approval stays listed.
    pub async fn visible(
        &self,
        caller: &Principal,
        integration: &Integration,
        discovery: Arc<Discovery>,
        allowed: &AllowList,
    ) -> Result<Arc<Discovery>, PolicyError> {
        let set = self.engine.set_for(&integration.org_id).await?;
        if set.is_empty() && allowed.0.is_none() {
            return Ok(discovery);
        }
        let facts = |target| CallFacts {
            subject: caller.into(),
            integration: integration_facts(integration),
            target,
            content: None,
        };
        let listed = |target: Target| !matches!(set.decide(&facts(target)), Decision::Deny { .. });
        let mut narrowed = (*discovery).clone();
        narrowed.tools.retain(|tool| {
            let name = tool.name.to_string();
            allowed.allows(&name)
                && listed(Target::Tool {
                    name,
                    annotations: ToolAnnotations::of_tool(tool),
                })
        });
        narrowed
            .resources
            .retain(|r| listed(Target::Resource { uri: r.uri.clone() }));
        narrowed.resource_templates.retain(|r| {
            listed(Target::Resource {
                uri: r.uri_template.clone(),
            })
        });
        narrowed.prompts.retain(|p| {
            listed(Target::Prompt {
                name: p.name.clone(),
            })
        });
        Ok(Arc::new(narrowed))
    }

    /// Every rule's say about `subject` calling `called` on `integration`;
    /// `user` is whose view of the server's tools gives the annotations.
    pub async fn explain(
        &self,
        subject: Subject,
        integration: &Integration,
        called: Called<'_>,
        timeout: Duration,
    ) -> Result<Verdict, PolicyError> {
        let set = self
            .engine
            .set_for(&OrgId(subject.organization.clone()))
            .await?;
        let facts = self
            .facts(&set, subject, integration, called, None, timeout)
            .await;
        Ok(set.explain(&facts))
    }
}
