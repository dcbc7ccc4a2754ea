//! The `switchboard.mcp.v1.AuditService` handlers: proto in, domain call,
//! proto out.

use switchboard_proto::mcp::v1::{self as pb, audit_service_server::AuditService};
use switchboard_server::{
    FieldViolation,
    paging::{decode_page_token, encode_page_token, timestamp},
    principal,
};
use tonic::{Request, Response, Status};

use crate::domain::{
    audit::{
        AuditAction, AuditEvent, AuditOutcome, AuditQuery,
        trail::{AuditTrail, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE},
    },
    error::McpError,
};

/// What a page token of this service names after its position.
const TOKEN_KIND: &str = "audit";
/// Longest filter text accepted, in bytes.
const MAX_FILTER_BYTES: usize = 2048;

/// The AuditService API.
#[derive(Debug, Clone)]
pub(crate) struct AuditApi {
    trail: AuditTrail,
    max_page_bytes: usize,
}

impl AuditApi {
    /// Reads `trail`; a page stops short of `max_page_bytes` (half the
    /// largest message), whatever its size says, since recorded arguments
    /// can make an event large.
    pub(crate) fn new(trail: AuditTrail, max_message_bytes: usize) -> Self {
        Self {
            trail,
            max_page_bytes: max_message_bytes / 2,
        }
    }
}

/// About how many bytes an event takes on the wire: its texts plus room
/// for the numbers, times and tags.
fn wire_size(event: &AuditEvent) -> usize {
    let r = &event.record;
    256 + r.subject.len()
        + r.roles.iter().map(|role| role.len() + 2).sum::<usize>()
        + r.service.len()
        + r.integration_id.len()
        + r.target.len()
        + r.arguments_digest.len()
        + r.arguments_json.len()
        + r.reason.len()
        + r.rule.len()
        + r.trace_id.len()
        + r.approval_id.len()
        + event.previous_hash.len()
        + event.hash.len()
}

/// The events that fit in `max_bytes` (at least one), and whether some
/// were left for the next page.
fn fit(mut events: Vec<AuditEvent>, max_bytes: usize) -> (Vec<AuditEvent>, bool) {
    let mut total = 0;
    let keep = events
        .iter()
        .position(|event| {
            total += wire_size(event);
            total > max_bytes
        })
        .map_or(events.len(), |cut| cut.max(1));
    let cut = keep < events.len();
    events.truncate(keep);
    (events, cut)
}

fn millis(
    field: &str,
    time: Option<&prost_types::Timestamp>,
) -> Result<Option<i64>, FieldViolation> {
    let Some(time) = time else {
        return Ok(None);
    };
    if !(0..1_000_000_000).contains(&time.nanos) {
        return Err(FieldViolation::new(field, "nanos must be within 0..1e9"));
    }
    time.seconds
        .checked_mul(1000)
        .and_then(|ms| ms.checked_add(i64::from(time.nanos / 1_000_000)))
        .map(Some)
        .ok_or_else(|| FieldViolation::new(field, "is out of range"))
}

fn text(field: &str, value: &str) -> Result<Option<String>, FieldViolation> {
    if value.len() > MAX_FILTER_BYTES {
        return Err(FieldViolation::new(
            field,
            format!("at most {MAX_FILTER_BYTES} bytes"),
        ));
    }
    Ok((!value.is_empty()).then(|| value.to_owned()))
}

fn outcome(value: i32) -> Option<AuditOutcome> {
    match pb::AuditOutcome::try_from(value).ok()? {
        pb::AuditOutcome::Ok => Some(AuditOutcome::Ok),
        pb::AuditOutcome::Failed => Some(AuditOutcome::Failed),
        pb::AuditOutcome::Denied => Some(AuditOutcome::Denied),
        pb::AuditOutcome::PendingApproval => Some(AuditOutcome::PendingApproval),
        pb::AuditOutcome::Unspecified => None,
    }
}

/// The query a request asks for, every invalid field named at once.
fn query(request: &pb::ListAuditEventsRequest) -> Result<AuditQuery, McpError> {
    let mut violations = Vec::new();
    let mut keep = |result: Result<Option<String>, FieldViolation>| {
        result.unwrap_or_else(|violation| {
            violations.push(violation);
            None
        })
    };
    let subject = keep(text("subject", &request.subject));
    let integration_id = keep(text("integration_id", &request.integration_id));
    let target = keep(text("target", &request.target));
    let start_millis = millis("start_time", request.start_time.as_ref()).unwrap_or_else(|v| {
        violations.push(v);
        None
    });
    let end_millis = millis("end_time", request.end_time.as_ref()).unwrap_or_else(|v| {
        violations.push(v);
        None
    });
    let outcomes: Option<Vec<AuditOutcome>> =
        request.outcomes.iter().map(|o| outcome(*o)).collect();
    if outcomes.is_none() || request.outcomes.len() > AuditOutcome::ALL.len() * 2 {
        violations.push(FieldViolation::new("outcomes", "holds an unknown outcome"));
    }
    let limit = match usize::try_from(request.page_size) {
        Ok(0) => DEFAULT_PAGE_SIZE,
        Ok(size) => size.min(MAX_PAGE_SIZE),
        Err(_) => {
            violations.push(FieldViolation::new("page_size", "must not be negative"));
            0
        }
    };
    let before_sequence = match decode_page_token("page_token", &request.page_token) {
        Ok(None) => None,
        Ok(Some((sequence, kind))) if kind == TOKEN_KIND => Some(sequence),
        Ok(Some(_)) => {
            violations.push(FieldViolation::new(
                "page_token",
                "is not a page token this service issued",
            ));
            None
        }
        Err(violation) => {
            violations.push(violation);
            None
        }
    };
    if !violations.is_empty() {
        return Err(McpError::Invalid(violations));
    }
    Ok(AuditQuery {
        start_millis,
        end_millis,
        subject,
        integration_id,
        target,
        outcomes: outcomes.unwrap_or_default(),
        before_sequence,
        limit,
    })
}

fn proto_action(action: AuditAction) -> pb::AuditAction {
    match action {
        AuditAction::ToolCall => pb::AuditAction::ToolCall,
        AuditAction::ResourceRead => pb::AuditAction::ResourceRead,
        AuditAction::PromptGet => pb::AuditAction::PromptGet,
        AuditAction::PolicyDecision => pb::AuditAction::PolicyDecision,
        AuditAction::ApprovalRequested => pb::AuditAction::ApprovalRequested,
        AuditAction::ApprovalDecided => pb::AuditAction::ApprovalDecided,
        AuditAction::IntegrationChange => pb::AuditAction::IntegrationChange,
        AuditAction::PolicyChange => pb::AuditAction::PolicyChange,
        AuditAction::AuthorizationCompleted => pb::AuditAction::AuthorizationCompleted,
        AuditAction::ToolsetChange => pb::AuditAction::ToolsetChange,
    }
}

fn proto_outcome(outcome: AuditOutcome) -> pb::AuditOutcome {
    match outcome {
        AuditOutcome::Ok => pb::AuditOutcome::Ok,
        AuditOutcome::Failed => pb::AuditOutcome::Failed,
        AuditOutcome::Denied => pb::AuditOutcome::Denied,
        AuditOutcome::PendingApproval => pb::AuditOutcome::PendingApproval,
    }
}

fn proto_event(event: AuditEvent) -> pb::AuditEvent {
    let record = event.record;
    pb::AuditEvent {
        sequence: event.sequence,
        time: Some(timestamp(record.time_millis)),
        action: proto_action(record.action).into(),
        outcome: proto_outcome(record.outcome).into(),
        subject: record.subject,
        roles: record.roles,
        service: record.service,
        integration_id: record.integration_id,
        target: record.target,
        arguments_digest: record.arguments_digest,
        arguments_json: record.arguments_json,
        reason: record.reason,
        rule: record.rule,
        duration: record.duration_micros.map(|micros| prost_types::Duration {
            seconds: micros / 1_000_000,
            nanos: i32::try_from((micros % 1_000_000) * 1000).unwrap_or(0),
        }),
        trace_id: record.trace_id,
        approval_id: record.approval_id,
        previous_hash: event.previous_hash,
        hash: event.hash,
    }
}

#[tonic::async_trait]
impl AuditService for AuditApi {
    async fn list_audit_events(
        &self,
        request: Request<pb::ListAuditEventsRequest>,
    ) -> Result<Response<pb::ListAuditEventsResponse>, Status> {
        let caller = principal(&request)?.clone();
        let query = query(request.get_ref())?;
        let (events, cut) = fit(self.trail.list(&caller, &query).await?, self.max_page_bytes);
        let next_page_token = if cut || events.len() == query.limit {
            encode_page_token(events.last().map(|e| (e.sequence, TOKEN_KIND)))
        } else {
            String::new()
        };
        Ok(Response::new(pb::ListAuditEventsResponse {
            events: events.into_iter().map(proto_event).collect(),
            next_page_token,
        }))
    }

    async fn verify_audit_chain(
        &self,
        request: Request<pb::VerifyAuditChainRequest>,
    ) -> Result<Response<pb::VerifyAuditChainResponse>, Status> {
        let caller = principal(&request)?.clone();
        let verdict = self.trail.verify(&caller).await?;
        let (first_broken_sequence, problem) = verdict.broken.unwrap_or_default();
        Ok(Response::new(pb::VerifyAuditChainResponse {
            intact: first_broken_sequence == 0 && problem.is_empty(),
            events_checked: verdict.events_checked,
            first_broken_sequence,
            problem,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::audit::AuditRecord;

    fn request() -> pb::ListAuditEventsRequest {
        pb::ListAuditEventsRequest::default()
    }

    #[test]
    fn the_page_size_has_a_default_and_a_ceiling() {
        assert_eq!(query(&request()).expect("valid").limit, DEFAULT_PAGE_SIZE);
        for (asked, got) in [
            (1000, 1000),
            (1001, MAX_PAGE_SIZE),
            (i32::MAX, MAX_PAGE_SIZE),
        ] {
            let mut r = request();
            r.page_size = asked;
            assert_eq!(query(&r).expect("valid").limit, got);
        }
    }

    #[test]
    fn every_invalid_field_is_named() {
        let r = pb::ListAuditEventsRequest {
            page_size: -1,
            page_token: "nope".into(),
            subject: "s".repeat(MAX_FILTER_BYTES + 1),
            outcomes: vec![99],
            start_time: Some(prost_types::Timestamp {
                seconds: i64::MAX,
                nanos: 0,
            }),
            ..request()
        };
        let Err(McpError::Invalid(violations)) = query(&r) else {
            panic!("invalid");
        };
        let fields: Vec<_> = violations.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "subject",
                "start_time",
                "outcomes",
                "page_size",
                "page_token"
            ]
        );
        let mut at_limit = request();
        at_limit.subject = "s".repeat(MAX_FILTER_BYTES);
        assert!(query(&at_limit).is_ok());
    }

    #[test]
    fn a_page_stops_before_its_byte_budget() {
        let caller = switchboard_auth::Principal::new("org", "u", vec![]);
        let event = |sequence| AuditEvent {
            sequence,
            record: AuditRecord {
                arguments_json: "x".repeat(1000),
                ..AuditRecord::by(&caller, AuditAction::ToolCall, AuditOutcome::Ok)
            },
            previous_hash: String::new(),
            hash: String::new(),
        };
        let events: Vec<_> = (1..=10).map(event).collect();
        let one = wire_size(&events[0]);
        let (kept, cut) = fit(events.clone(), one * 3);
        assert_eq!((kept.len(), cut), (3, true));
        let (kept, cut) = fit(events.clone(), 1);
        assert_eq!((kept.len(), cut), (1, true), "at least one event");
        let (kept, cut) = fit(events, one * 10);
        assert_eq!((kept.len(), cut), (10, false));
    }
}
