//! One event of the trail (the fields of `audit.proto`'s `AuditEvent`), and
//! the constructors the use cases build it with.

use switchboard_auth::Principal;

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditAction {
    /// A tool call.
    ToolCall,
    /// A resource read.
    ResourceRead,
    /// A prompt rendered.
    PromptGet,
    /// A policy refused a call or gated it for approval.
    PolicyDecision,
    /// An approval was requested.
    ApprovalRequested,
    /// An approver approved or denied.
    ApprovalDecided,
    /// An integration was created, changed, enabled, disabled or deleted.
    IntegrationChange,
    /// A policy was written or deleted.
    PolicyChange,
    /// A user or the organization completed an OAuth authorization.
    AuthorizationCompleted,
    /// A toolset was created, changed or deleted.
    ToolsetChange,
}

impl AuditAction {
    /// Every action, for parsing stored names.
    pub const ALL: [Self; 10] = [
        Self::ToolCall,
        Self::ResourceRead,
        Self::PromptGet,
        Self::PolicyDecision,
        Self::ApprovalRequested,
        Self::ApprovalDecided,
        Self::IntegrationChange,
        Self::PolicyChange,
        Self::AuthorizationCompleted,
        Self::ToolsetChange,
    ];

    /// The stored and hashed name; never changes once written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool_call",
            Self::ResourceRead => "resource_read",
            Self::PromptGet => "prompt_get",
            Self::PolicyDecision => "policy_decision",
            Self::ApprovalRequested => "approval_requested",
            Self::ApprovalDecided => "approval_decided",
            Self::IntegrationChange => "integration_change",
            Self::PolicyChange => "policy_change",
            Self::AuthorizationCompleted => "authorization_completed",
            Self::ToolsetChange => "toolset_change",
        }
    }

    /// The action a stored name names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// How the recorded action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditOutcome {
    /// It succeeded.
    Ok,
    /// It ran and failed.
    Failed,
    /// It was refused before it ran (policy, access, limits).
    Denied,
    /// It waits for an approval.
    PendingApproval,
}

impl AuditOutcome {
    /// Every outcome, for parsing stored names.
    pub const ALL: [Self; 4] = [Self::Ok, Self::Failed, Self::Denied, Self::PendingApproval];

    /// The stored and hashed name; never changes once written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "failed",
            Self::Denied => "denied",
            Self::PendingApproval => "pending_approval",
        }
    }

    /// The outcome a stored name names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

/// What a use case records, before the chain gives it a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// The organization whose chain it joins.
    pub org_id: String,
    /// When it happened, Unix milliseconds.
    pub time_millis: i64,
    /// What happened.
    pub action: AuditAction,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// The user id.
    pub subject: String,
    /// Their roles at the time.
    pub roles: Vec<String>,
    /// The calling service, when known.
    pub service: String,
    /// The integration, when the event concerns one.
    pub integration_id: String,
    /// The tool name, resource URI, prompt name, policy name or change.
    pub target: String,
    /// SHA-256 hex of the canonical arguments, when there were arguments.
    pub arguments_digest: String,
    /// The arguments, only for organizations that record them.
    pub arguments_json: String,
    /// Why it ended so.
    pub reason: String,
    /// The deciding policy rule, `policy@version/rule`.
    pub rule: String,
    /// How long it took, in microseconds, for calls.
    pub duration_micros: Option<i64>,
    /// The W3C trace id (hex), when traced.
    pub trace_id: String,
    /// The approval concerned.
    pub approval_id: String,
}

impl AuditRecord {
    /// A record of `action` by `caller`, now, with every other field empty.
    pub fn by(caller: &Principal, action: AuditAction, outcome: AuditOutcome) -> Self {
        Self {
            org_id: caller.org_id.clone(),
            time_millis: switchboard_db::now_millis(),
            action,
            outcome,
            subject: caller.user_id.clone(),
            roles: caller.roles.clone(),
            service: caller.service.clone(),
            integration_id: String::new(),
            target: String::new(),
            arguments_digest: String::new(),
            arguments_json: String::new(),
            reason: String::new(),
            rule: String::new(),
            duration_micros: None,
            trace_id: current_trace_id(),
            approval_id: String::new(),
        }
    }

    /// A policy written (`deleted` false) or deleted by `caller`.
    pub fn policy_change(caller: &Principal, policy: &str, version: i64, deleted: bool) -> Self {
        let mut record = Self::by(caller, AuditAction::PolicyChange, AuditOutcome::Ok);
        record.target = policy.to_owned();
        record.reason = if deleted {
            format!("deleted after version {version}")
        } else {
            format!("wrote version {version}")
        };
        record
    }

    /// A policy's decision on a call of `target` on `integration_id`:
    /// `outcome` is `Denied` or `PendingApproval`.
    pub fn policy_decision(
        caller: &Principal,
        integration_id: &str,
        target: &str,
        outcome: AuditOutcome,
        rule: &str,
        reason: &str,
    ) -> Self {
        let mut record = Self::by(caller, AuditAction::PolicyDecision, outcome);
        record.integration_id = integration_id.to_owned();
        record.target = target.to_owned();
        record.rule = rule.to_owned();
        record.reason = reason.to_owned();
        record
    }

    /// An approval of a call of `tool` requested (`decided` false, outcome
    /// `PendingApproval`) or decided by `caller` (outcome `Ok` for approved,
    /// `Denied` for denied).
    pub fn approval(
        caller: &Principal,
        approval_id: &str,
        integration_id: &str,
        tool: &str,
        outcome: AuditOutcome,
        decided: bool,
    ) -> Self {
        let action = if decided {
            AuditAction::ApprovalDecided
        } else {
            AuditAction::ApprovalRequested
        };
        let mut record = Self::by(caller, action, outcome);
        record.approval_id = approval_id.to_owned();
        record.integration_id = integration_id.to_owned();
        record.target = tool.to_owned();
        record
    }

    /// Sets the integration.
    #[must_use]
    pub fn on(mut self, integration_id: impl ToString) -> Self {
        self.integration_id = integration_id.to_string();
        self
    }

    /// Sets the target (tool, URI, prompt, policy or change).
    #[must_use]
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    /// Sets the reason.
    #[must_use]
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }
}

/// A record with its place in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    /// Position in the organization's chain, from 1.
    pub sequence: i64,
    /// The record.
    pub record: AuditRecord,
    /// Hash (hex) of the organization's previous event; empty for the first.
    pub previous_hash: String,
    /// Hash (hex) of this event's canonical form and `previous_hash`.
    pub hash: String,
}

/// The current span's W3C trace id, hex; empty when it is not traced.
fn current_trace_id() -> String {
    let span_context = switchboard_telemetry::span_context(&tracing::Span::current());
    if span_context.is_valid() {
        span_context.trace_id().to_string()
    } else {
        String::new()
    }
}
