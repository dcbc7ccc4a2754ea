//! An organization's tool policy: rules in CEL over the caller and what they
//! call, deciding whether a call goes ahead, is refused, or waits for an
//! approver.
//!
//! [`compile`] checks a policy on write (names, bounds, every condition
//! compiled, with the position of an error); a [`PolicySet`] of an
//! organization's compiled policies decides a call ([`PolicySet::decide`]):
//! each rule whose condition holds proposes its effect, the strongest wins
//! (deny over approval over allow), and the first matching rule with that
//! effect, policies by name and rules in order, is the deciding rule. A rule
//! whose condition cannot be evaluated fails closed.

mod compile;
mod decide;
#[cfg(test)]
mod tests;

pub use compile::{CompiledPolicy, PolicyLimits, compile};
pub use decide::{CallFacts, Explanation, PolicySet, RuleRef, Subject, Target, ToolHints};

/// What a matching rule does to a call. Ordered by strength: a stronger
/// effect of any matching rule overrides a weaker one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// The call goes ahead.
    Allow,
    /// The call waits for an approver.
    RequireApproval,
    /// The call is refused.
    Deny,
}

/// One rule: a CEL condition over the call, and its effect when it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Unique in its policy; named in denials and approvals.
    pub name: String,
    /// The CEL condition, returning a bool.
    pub condition: String,
    /// What the rule does when the condition holds.
    pub effect: Effect,
    /// For the caller (and the model) when the rule denies or gates.
    pub reason: String,
    /// For [`Effect::RequireApproval`]: the role an approver holds.
    pub approver_role: String,
    /// For [`Effect::RequireApproval`]: whether the caller may approve.
    pub caller_may_approve: bool,
}

/// A named, versioned set of rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Unique in the organization.
    pub name: String,
    /// What it is for, for people.
    pub description: String,
    /// The rules, in order.
    pub rules: Vec<Rule>,
    /// Whether a call no rule matches is refused (the organization lists
    /// what is allowed) rather than allowed.
    pub default_deny: bool,
    /// The version, from 1.
    pub version: i64,
}

/// What a policy rule that gates a call behind an approval asks for: which
/// rule it was, why, and who may approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The deciding rule, `policy@version/rule`.
    pub rule: String,
    /// The rule's reason, for the caller and the model.
    pub reason: String,
    /// The role an approver must hold.
    pub approver_role: String,
    /// Whether the caller may approve their own call.
    pub caller_may_approve: bool,
}
