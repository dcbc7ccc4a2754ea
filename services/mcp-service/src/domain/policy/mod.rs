//! An organization's tool policy: rules in CEL over the caller and what they
//! call, deciding whether a call goes ahead, is refused, or waits for an
//! approver.

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
