//! What a policy rule that gates a call asks of an approval: a value the
//! policy decides, an approval carries and an error reports.

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
