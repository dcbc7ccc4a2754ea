//! What an admin writes: named, versioned policies of ordered rules.

use crate::domain::guardrails::GuardrailSettings;

/// What a matching rule does to a call; also a policy's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// The call goes ahead.
    Allow,
    /// The call is refused, and Discover hides its target.
    Deny,
    /// The call waits for an approver.
    RequireApproval,
}

impl Effect {
    /// How strongly the effect wins over the others: DENY over
    /// REQUIRE_APPROVAL over ALLOW.
    pub fn strength(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::RequireApproval => 1,
            Self::Deny => 2,
        }
    }
}

/// Whether `name` may name a policy or a rule: `^[a-z0-9][a-z0-9-]{0,62}$`,
/// short and lowercase, readable in a denial (`policy@3/rule`).
pub fn is_valid_name(name: &str) -> bool {
    let lower_or_digit = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match name.as_bytes() {
        [first, rest @ ..] => {
            rest.len() <= 62
                && lower_or_digit(first)
                && rest.iter().all(|b| lower_or_digit(b) || *b == b'-')
        }
        [] => false,
    }
}

/// A policy's name, unique in its organization.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PolicyName(String);

impl PolicyName {
    /// The name, when it has the shape of one.
    pub fn parse(name: &str) -> Option<Self> {
        is_valid_name(name).then(|| Self(name.to_owned()))
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PolicyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One rule: a condition over the call and its effect when it holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rule {
    /// Unique in the policy; named in denials, approvals and the audit trail.
    pub name: String,
    /// The CEL condition, as written.
    pub condition: String,
    /// What the rule does when the condition holds.
    pub effect: Effect,
    /// Shown to the caller (and the model) when the rule denies or gates.
    pub reason: String,
    /// For REQUIRE_APPROVAL: the role an approver must hold.
    pub approver_role: String,
    /// For REQUIRE_APPROVAL: whether the caller may approve their own call.
    pub caller_may_approve: bool,
}

/// A policy as written, before the service gives it a version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PolicyBody {
    /// What the policy is for, for people.
    pub description: String,
    /// The rules, in order.
    pub rules: Vec<Rule>,
    /// What a call no rule of any policy matches gets: ALLOW or DENY.
    pub default_effect: Effect,
    /// The guardrails' actions the policy sets for its organization.
    #[serde(default, skip_serializing_if = "GuardrailSettings::is_empty")]
    pub guardrails: GuardrailSettings,
}

/// A stored version of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVersion {
    /// The policy's name.
    pub name: PolicyName,
    /// The version, from 1.
    pub version: i64,
    /// What was written.
    pub body: PolicyBody,
    /// Who wrote this version.
    pub updated_by: String,
    /// When, Unix milliseconds.
    pub updated_at: i64,
}

impl PolicyVersion {
    /// How a rule of this version is named in denials and approvals.
    pub fn rule_ref(&self, rule: &str) -> String {
        format!("{}@{}/{rule}", self.name, self.version)
    }
}

/// The bounds of an organization's policies, set per deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyLimits {
    /// Most rules in one policy.
    pub max_rules_per_policy: usize,
    /// Most policies in one organization.
    pub max_policies_per_org: usize,
}

impl Default for PolicyLimits {
    /// 1,000 rules per policy, 100 policies per organization.
    fn default() -> Self {
        Self {
            max_rules_per_policy: 1000,
            max_policies_per_org: 100,
        }
    }
}
