//! [`AuditedCalls`]: the calls of [`CallService`], each recorded where it
//! ends, with its outcome, reason, deciding rule and duration.

use std::{ops::Deref, time::Duration, time::Instant};

use serde_json::Value;
use switchboard_auth::Principal;

use crate::domain::{
    approvals::{ApprovalError, MAX_ID_BYTES},
    audit::{
        record::{AuditAction, AuditOutcome, AuditRecord},
        recorder::{Auditor, micros_since},
    },
    call_input::{check_input, check_tool_call},
    calls::{CallService, Grants, PromptAnswer, PromptCall, ResourceQuery, ToolAnswer},
    error::{McpError, refusal},
    guardrails,
    integration::IntegrationId,
    ports::{AuthorizationAnswer, CallError, ToolCall},
    resource::ResourceRead,
};

/// [`CallService`] with every tool call, resource read, prompt and
/// completed authorization recorded; without an auditor, the calls alone.
/// Other methods reach the inner service through `Deref`.
#[derive(Debug, Clone)]
pub struct AuditedCalls {
    calls: CallService,
    auditor: Option<Auditor>,
}

impl Deref for AuditedCalls {
    type Target = CallService;

    fn deref(&self) -> &CallService {
        &self.calls
    }
}

/// What a call's record starts with: who, which integration, what.
struct Started {
    at: Instant,
    record: AuditRecord,
}

impl AuditedCalls {
    /// `calls`, recorded by `auditor` when there is one.
    pub fn new(calls: CallService, auditor: Option<Auditor>) -> Self {
        Self { calls, auditor }
    }

    fn start(
        &self,
        caller: &Principal,
        action: AuditAction,
        id: IntegrationId,
        target: &str,
        arguments: Value,
    ) -> Option<Started> {
        let auditor = self.auditor.as_ref()?;
        // The trail never holds what the guardrails find, whatever they do
        // with it on the call: every finding is redacted in its copy.
        let mut arguments = arguments;
        guardrails::redact_value(&mut arguments, &mut |_| true);
        let record = AuditRecord::by(caller, action, AuditOutcome::Ok)
            .on(id)
            .target(target);
        Some(Started {
            at: Instant::now(),
            record: auditor.with_arguments(record, &arguments),
        })
    }

    async fn finish<T>(
        &self,
        started: Option<Started>,
        outcome: &Result<T, McpError>,
        verdict: impl FnOnce(&T) -> Option<Verdict>,
    ) {
        let (Some(auditor), Some(started)) = (&self.auditor, started) else {
            return;
        };
        let mut record = started.record;
        record.duration_micros = Some(micros_since(started.at));
        match outcome {
            Ok(value) => {
                if let Some(verdict) = verdict(value) {
                    record.outcome = verdict.outcome;
                    record.reason = verdict.reason;
                    if let Some(rule) = verdict.rule {
                        record.rule = rule;
                    }
                }
            }
            Err(error) => {
                (record.outcome, record.reason, record.rule) = refusal(error);
                // A gated call names the approval it now waits for, so that
                // the trail links the call to its decision.
                if let McpError::Approval(
                    ApprovalError::Pending(approval) | ApprovalError::Denied(approval),
                ) = error
                    && record.approval_id.is_empty()
                {
                    record.approval_id.clone_from(&approval.id);
                }
            }
        }
        auditor.record(record).await;
    }

    /// [`CallService::execute_tool`], recorded: OK, FAILED with the
    /// server's error or the tool's error result, DENIED or
    /// PENDING_APPROVAL with the deciding rule.
    pub async fn execute_tool(
        &self,
        caller: &Principal,
        id: IntegrationId,
        call: ToolCall,
        session_scope: &str,
        grants: Grants<'_>,
        deadline: Option<Duration>,
    ) -> Result<Result<ToolAnswer, CallError>, McpError> {
        // Past a bound, refused before anything of it is recorded.
        check_tool_call(self.calls.bounds(), &call, session_scope)?;
        let mut started = self.start(
            caller,
            AuditAction::ToolCall,
            id,
            &call.name,
            Value::Object(call.arguments.clone()),
        );
        // The approval the call presents, when it is one that can exist (an
        // id past the bound is refused as the call goes on).
        if let (Some(started), Some(approval_id)) = (&mut started, grants.approval_id)
            && approval_id.len() <= MAX_ID_BYTES
        {
            approval_id.clone_into(&mut started.record.approval_id);
        }
        let outcome = self
            .calls
            .execute_tool(caller, id, call, session_scope, grants, deadline)
            .await;
        self.finish(started, &outcome, tool_verdict).await;
        outcome
    }

    /// [`CallService::read_resource`], recorded with the URI as written.
    pub async fn read_resource(
        &self,
        caller: &Principal,
        id: IntegrationId,
        query: ResourceQuery<'_>,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<ResourceRead, McpError> {
        check_input(
            self.calls.bounds(),
            session_scope,
            query.parameters,
            &query.answers,
        )?;
        let started = self.start(
            caller,
            AuditAction::ResourceRead,
            id,
            query.uri,
            Value::Object(query.parameters.clone()),
        );
        let outcome = self
            .calls
            .read_resource(caller, id, query, session_scope, deadline)
            .await;
        self.finish(started, &outcome, |read| found_verdict(&read.findings))
            .await;
        outcome
    }

    /// [`CallService::get_prompt`], recorded.
    pub async fn get_prompt(
        &self,
        caller: &Principal,
        id: IntegrationId,
        prompt: PromptCall,
        session_scope: &str,
        deadline: Option<Duration>,
    ) -> Result<PromptAnswer, McpError> {
        check_input(
            self.calls.bounds(),
            session_scope,
            &prompt.arguments,
            &prompt.answers,
        )?;
        let started = self.start(
            caller,
            AuditAction::PromptGet,
            id,
            &prompt.name,
            Value::Object(prompt.arguments.clone()),
        );
        let outcome = self
            .calls
            .get_prompt(caller, id, prompt, session_scope, deadline)
            .await;
        self.finish(started, &outcome, |answer| found_verdict(&answer.findings))
            .await;
        outcome
    }

    /// [`CallService::complete_authorization`], recorded when it completes.
    pub async fn complete_authorization(
        &self,
        caller: &Principal,
        answer: AuthorizationAnswer,
    ) -> Result<IntegrationId, McpError> {
        let id = self.calls.complete_authorization(caller, answer).await?;
        if let Some(auditor) = &self.auditor {
            let record = AuditRecord::by(
                caller,
                AuditAction::AuthorizationCompleted,
                AuditOutcome::Ok,
            )
            .on(id);
            auditor.record(record).await;
        }
        Ok(id)
    }
}

/// How a call that returned ended, when not plainly: its outcome, reason
/// and the deciding rule, if any.
struct Verdict {
    outcome: AuditOutcome,
    reason: String,
    rule: Option<String>,
}

impl Verdict {
    fn of(outcome: AuditOutcome, reason: String) -> Self {
        Self {
            outcome,
            reason,
            rule: None,
        }
    }
}

/// How a tool call that returned ended, when not plainly: failed with the
/// server's error or the tool's own error result, denied where a policy
/// withheld its result, or with what the guardrails found (never the text
/// they found), succeeded or not.
fn tool_verdict(result: &Result<ToolAnswer, CallError>) -> Option<Verdict> {
    let answer = match result {
        Err(error) => return Some(Verdict::of(AuditOutcome::Failed, error.to_string())),
        Ok(answer) => answer,
    };
    let found = guardrails::summary(&answer.findings);
    if let Some(rule) = &answer.withheld_by {
        let reason = match found {
            Some(found) => format!("the result was withheld by policy; {found}"),
            None => "the result was withheld by policy".to_owned(),
        };
        return Some(Verdict {
            outcome: AuditOutcome::Denied,
            reason,
            rule: Some(rule.clone()),
        });
    }
    match (answer.value.is_error(), found) {
        (true, Some(found)) => Some(Verdict::of(AuditOutcome::Failed, found)),
        (true, None) => Some(Verdict::of(
            AuditOutcome::Failed,
            "the tool returned an error result".to_owned(),
        )),
        (false, found) => found.map(|found| Verdict::of(AuditOutcome::Ok, found)),
    }
}

/// What the guardrails found in a resource's or a prompt's text, if
/// anything.
fn found_verdict(findings: &[guardrails::Finding]) -> Option<Verdict> {
    guardrails::summary(findings).map(|found| Verdict::of(AuditOutcome::Ok, found))
}
