//! An organization's compiled policies, and the one decision they make for
//! a call: each matching rule proposes its effect, the strongest wins (DENY
//! over REQUIRE_APPROVAL over ALLOW), and the first matching rule of that
//! effect (policies by name, rules in order) decides.

use std::sync::Arc;

use cel::Env;

use crate::domain::guardrails::GuardrailSettings;

use super::{
    Gate,
    condition::{Condition, ConditionError, Outcome},
    facts::CallFacts,
    model::{Effect, PolicyVersion, Rule},
};

/// A policy version with its conditions compiled.
#[derive(Debug)]
pub struct CompiledPolicy {
    /// The version compiled.
    pub version: PolicyVersion,
    conditions: Vec<Condition>,
}

impl CompiledPolicy {
    /// Compiles every rule; the first that does not compile is returned
    /// with its index.
    pub fn compile(
        version: PolicyVersion,
        env: &Arc<Env>,
    ) -> Result<Self, (usize, ConditionError)> {
        let conditions = version
            .body
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| Condition::compile(&rule.condition, env).map_err(|e| (i, e)))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            version,
            conditions,
        })
    }
}

/// A rule of a policy version, as named in a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    /// The policy's name.
    pub policy: String,
    /// Its version.
    pub version: i64,
    /// The rule.
    pub rule: Rule,
}

impl RuleRef {
    /// `policy@version/rule`, as denials and approvals name it.
    pub fn qualified(&self) -> String {
        format!("{}@{}/{}", self.policy, self.version, self.rule.name)
    }
}

/// What a call gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It goes ahead.
    Allow,
    /// It is refused.
    Deny {
        /// The deciding rule, `policy@version/rule`, or
        /// `policy@version/(default)` when a policy's default decided.
        rule: String,
        /// Why, for the caller and the model.
        reason: String,
    },
    /// It waits for an approver.
    RequireApproval(Gate),
}

/// Every rule's say about a call, for `ExplainPolicy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The effect of the call.
    pub effect: Effect,
    /// The deciding rule; `None` when the default decided.
    pub deciding: Option<RuleRef>,
    /// Every rule that matched (errors of DENY and REQUIRE_APPROVAL rules
    /// included, as they fail closed), in evaluation order.
    pub matched: Vec<RuleRef>,
    /// Rules that could not be evaluated, with why.
    pub errors: Vec<(RuleRef, String)>,
}

/// An organization's compiled policies, current versions by name.
pub struct PolicySet {
    policies: Vec<Arc<CompiledPolicy>>,
    env: Arc<Env>,
    guardrails: GuardrailSettings,
    reads_content: bool,
    reads_findings: bool,
}

impl std::fmt::Debug for PolicySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicySet")
            .field("policies", &self.policies.len())
            .finish_non_exhaustive()
    }
}

impl PolicySet {
    /// The set of `policies`, ordered by name.
    pub fn new(mut policies: Vec<Arc<CompiledPolicy>>, env: Arc<Env>) -> Self {
        policies.sort_by(|a, b| a.version.name.cmp(&b.version.name));
        let conditions = || policies.iter().flat_map(|p| &p.conditions);
        let reads_content = conditions().any(Condition::reads_content);
        let reads_findings = conditions().any(Condition::reads_findings);
        let guardrails =
            GuardrailSettings::strongest(policies.iter().map(|p| &p.version.body.guardrails));
        Self {
            policies,
            env,
            guardrails,
            reads_content,
            reads_findings,
        }
    }

    /// The guardrail settings of the organization's policies as one.
    pub fn guardrails(&self) -> &GuardrailSettings {
        &self.guardrails
    }

    /// Whether any rule reads what a call carries (`arguments` or
    /// `findings`), so that a call's content must be gathered.
    pub fn reads_content(&self) -> bool {
        self.reads_content
    }

    /// Whether any rule reads the guardrails' findings, so that a tool's
    /// result is decided on again once it is back.
    pub fn reads_findings(&self) -> bool {
        self.reads_findings
    }

    /// The policies, by name.
    pub fn policies(&self) -> &[Arc<CompiledPolicy>] {
        &self.policies
    }

    /// Whether the organization has no policies (everything is allowed).
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Whether any rule reads `tool`, so that a call's tool annotations
    /// must be looked up.
    pub fn uses_tool(&self) -> bool {
        self.policies
            .iter()
            .any(|p| p.conditions.iter().any(Condition::uses_tool))
    }

    /// The policy whose default denies unmatched calls, if any.
    fn denying_default(&self) -> Option<&PolicyVersion> {
        self.policies
            .iter()
            .map(|p| &p.version)
            .find(|v| v.body.default_effect == Effect::Deny)
    }

    /// The decision for a call, stopping at the first matching DENY rule.
    pub fn decide(&self, facts: &CallFacts) -> Decision {
        if self.is_empty() {
            return Decision::Allow;
        }
        let context = facts.context(&self.env);
        let mut best: Option<(&PolicyVersion, &Rule)> = None;
        for policy in &self.policies {
            for (rule, condition) in policy.version.body.rules.iter().zip(&policy.conditions) {
                // A listing has no call to read: a rule on what a call
                // carries may allow some call of the target (so it counts
                // for listing it) and denies none yet.
                let matched = if facts.content.is_none() && condition.reads_content() {
                    rule.effect == Effect::Allow
                } else {
                    matches(rule.effect, &condition.evaluate(&context))
                };
                if !matched {
                    continue;
                }
                if rule.effect == Effect::Deny {
                    return deny(&policy.version, rule);
                }
                if best.is_none_or(|(_, b)| rule.effect.strength() > b.effect.strength()) {
                    best = Some((&policy.version, rule));
                }
            }
        }
        self.outcome(best)
    }

    fn outcome(&self, best: Option<(&PolicyVersion, &Rule)>) -> Decision {
        match best {
            Some((_, rule)) if rule.effect == Effect::Allow => Decision::Allow,
            Some((version, rule)) => Decision::RequireApproval(Gate {
                rule: version.rule_ref(&rule.name),
                reason: rule.reason.clone(),
                approver_role: rule.approver_role.clone(),
                caller_may_approve: rule.caller_may_approve,
            }),
            None => match self.denying_default() {
                Some(version) => Decision::Deny {
                    rule: version.rule_ref("(default)"),
                    reason: format!(
                        "policy {} allows only what its rules allow, and none allows this",
                        version.name
                    ),
                },
                None => Decision::Allow,
            },
        }
    }

    /// Every rule's say about a call, and the decision.
    pub fn explain(&self, facts: &CallFacts) -> Verdict {
        let mut matched = Vec::new();
        let mut errors = Vec::new();
        let mut deciding: Option<RuleRef> = None;
        let context = facts.context(&self.env);
        let rules = self.policies.iter().flat_map(|policy| {
            let version = &policy.version;
            version
                .body
                .rules
                .iter()
                .zip(&policy.conditions)
                .map(move |(r, c)| (version, r, c))
        });
        for (version, rule, condition) in rules {
            if facts.content.is_none() && condition.reads_content() {
                continue;
            }
            let outcome = condition.evaluate(&context);
            let rule_ref = RuleRef {
                policy: version.name.to_string(),
                version: version.version,
                rule: rule.clone(),
            };
            if let Outcome::Error(message) = &outcome {
                errors.push((rule_ref.clone(), message.clone()));
            }
            if !matches(rule.effect, &outcome) {
                continue;
            }
            if deciding
                .as_ref()
                .is_none_or(|d| rule.effect.strength() > d.rule.effect.strength())
            {
                deciding = Some(rule_ref.clone());
            }
            matched.push(rule_ref);
        }
        let effect = match &deciding {
            Some(rule) => rule.rule.effect,
            None if self.denying_default().is_some() => Effect::Deny,
            None => Effect::Allow,
        };
        Verdict {
            effect,
            deciding,
            matched,
            errors,
        }
    }
}

/// Whether a rule of `effect` counts as matching on `outcome`.
fn matches(effect: Effect, outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Holds => true,
        Outcome::Fails => false,
        Outcome::Error(_) => effect != Effect::Allow,
    }
}

fn deny(version: &PolicyVersion, rule: &Rule) -> Decision {
    Decision::Deny {
        rule: version.rule_ref(&rule.name),
        reason: rule.reason.clone(),
    }
}
