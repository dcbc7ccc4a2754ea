//! A policy as written, checked on write: names, bounds, and every rule's
//! condition compiled.

use std::{collections::HashSet, sync::Arc};

use cel::Env;
use switchboard_server::FieldViolation;

use super::{
    super::guardrails::{GuardrailSettings, SettingInput},
    condition::Condition,
    model::{Effect, PolicyBody, PolicyLimits, PolicyName, Rule, is_valid_name},
};

/// The longest description or reason, in bytes.
pub const MAX_TEXT_BYTES: usize = 1024;
/// The longest approver role, in bytes.
pub const MAX_ROLE_BYTES: usize = 256;

/// A rule as the caller sent it.
#[derive(Debug, Clone, Default)]
pub struct RuleInput {
    /// Name.
    pub name: String,
    /// CEL condition.
    pub condition: String,
    /// Effect; `None` when unset.
    pub effect: Option<Effect>,
    /// Reason.
    pub reason: String,
    /// Approver role.
    pub approver_role: String,
    /// Whether the caller may approve.
    pub caller_may_approve: bool,
}

/// A policy as the caller sent it.
#[derive(Debug, Clone, Default)]
pub struct PolicyInput {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Rules.
    pub rules: Vec<RuleInput>,
    /// Default effect; `None` when unset (ALLOW).
    pub default_effect: Option<Effect>,
    /// Guardrail settings.
    pub guardrails: Vec<SettingInput>,
}

/// The policy's name and body, or every field that is wrong (each rule's
/// condition compiled, its error naming the line and column).
pub fn validate(
    input: PolicyInput,
    limits: PolicyLimits,
    env: &Arc<Env>,
) -> Result<(PolicyName, PolicyBody), Vec<FieldViolation>> {
    let mut violations = Vec::new();
    let name = PolicyName::parse(&input.name);
    if name.is_none() {
        violations.push(FieldViolation::new(
            "policy.name",
            "must match ^[a-z0-9][a-z0-9-]{0,62}$",
        ));
    }
    if input.description.len() > MAX_TEXT_BYTES {
        violations.push(too_long("policy.description", MAX_TEXT_BYTES));
    }
    let default_effect = match input.default_effect {
        None | Some(Effect::Allow) => Effect::Allow,
        Some(Effect::Deny) => Effect::Deny,
        Some(Effect::RequireApproval) => {
            violations.push(FieldViolation::new(
                "policy.default_effect",
                "must be ALLOW or DENY",
            ));
            Effect::Allow
        }
    };
    let guardrails = GuardrailSettings::parse("policy.guardrails", &input.guardrails)
        .map_err(|violation| violations.push(violation))
        .unwrap_or_default();
    if input.rules.len() > limits.max_rules_per_policy {
        violations.push(FieldViolation::new(
            "policy.rules",
            format!("at most {} rules", limits.max_rules_per_policy),
        ));
        return Err(violations);
    }
    let mut names = HashSet::new();
    let rules = input
        .rules
        .into_iter()
        .enumerate()
        .filter_map(|(i, rule)| validate_rule(i, rule, &mut names, env, &mut violations))
        .collect();
    match name {
        Some(name) if violations.is_empty() => Ok((
            name,
            PolicyBody {
                description: input.description,
                rules,
                default_effect,
                guardrails,
            },
        )),
        _ => Err(violations),
    }
}

fn too_long(field: &str, limit: usize) -> FieldViolation {
    FieldViolation::new(field, format!("at most {limit} bytes"))
}

fn validate_rule(
    i: usize,
    input: RuleInput,
    names: &mut HashSet<String>,
    env: &Arc<Env>,
    violations: &mut Vec<FieldViolation>,
) -> Option<Rule> {
    let field = |name: &str| format!("policy.rules[{i}].{name}");
    let before = violations.len();
    if !is_valid_name(&input.name) {
        violations.push(FieldViolation::new(
            field("name"),
            "must match ^[a-z0-9][a-z0-9-]{0,62}$",
        ));
    } else if !names.insert(input.name.clone()) {
        violations.push(FieldViolation::new(
            field("name"),
            "another rule of the policy has this name",
        ));
    }
    if let Err(error) = Condition::compile(&input.condition, env) {
        violations.push(FieldViolation::new(field("condition"), error.to_string()));
    }
    if input.reason.len() > MAX_TEXT_BYTES {
        violations.push(too_long(&field("reason"), MAX_TEXT_BYTES));
    }
    if input.approver_role.len() > MAX_ROLE_BYTES {
        violations.push(too_long(&field("approver_role"), MAX_ROLE_BYTES));
    }
    match input.effect {
        None => violations.push(FieldViolation::new(field("effect"), "must be set")),
        Some(Effect::RequireApproval) if input.approver_role.trim().is_empty() => {
            violations.push(FieldViolation::new(
                field("approver_role"),
                "a rule that requires approval names the role an approver must hold",
            ));
        }
        Some(_) => {}
    }
    let effect = input.effect?;
    (violations.len() == before).then_some(Rule {
        name: input.name,
        condition: input.condition,
        effect,
        reason: input.reason,
        approver_role: input.approver_role,
        caller_may_approve: input.caller_may_approve,
    })
}
