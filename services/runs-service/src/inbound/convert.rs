//! Conversions between the `switchboard.runs.v1` messages and the domain.

use switchboard_proto::{common::v1::TokenUsage, json::json_to_struct, runs::v1 as pb};
use switchboard_server::{FieldViolation, paging};

use crate::domain::{
    entities::{
        Agent, InputRequest, Message, ModelChoice, Part, PendingApproval, PendingCall, Role, Run,
        RunStatus, Thread, ToolTarget, Usage,
    },
    events::{Envelope, RunEvent, ToolCallStatus, ToolKind},
    ids::IntegrationId,
    model::ToolCall,
    pins::{ToolDefinitionChanged, ToolDriftPolicy},
    ports::Cursor,
    recovery::{Continuation, RunRecovery},
};

pub(crate) use switchboard_server::paging::{page_size, timestamp};

/// The token of the page after `cursor`.
pub(crate) fn encode_cursor(cursor: Cursor) -> String {
    paging::encode_page_token(cursor.as_ref().map(|(time, id)| (*time, id.as_str())))
}

/// The cursor a page token names.
pub(crate) fn decode_cursor(field: &str, token: &str) -> Result<Cursor, FieldViolation> {
    paging::decode_page_token(field, token)
}

pub(crate) fn decode_seq(field: &str, token: &str) -> Result<i64, FieldViolation> {
    if token.is_empty() {
        return Ok(0);
    }
    token
        .parse()
        .map_err(|_| FieldViolation::new(field, "is not a page token this service issued"))
}

fn model_ref(choice: &ModelChoice) -> pb::ModelRef {
    pb::ModelRef {
        provider: choice.provider.clone(),
        model: choice.model.clone(),
    }
}

pub(crate) fn proto_agent(agent: &Agent) -> pb::Agent {
    let config = &agent.config;
    pb::Agent {
        id: agent.id.to_string(),
        organization_id: agent.org_id.clone(),
        name: agent.name.clone(),
        instructions: config.instructions.clone(),
        model: Some(model_ref(&config.model_choice())),
        mcp_integration_ids: config
            .mcp_integration_ids
            .iter()
            .map(ToString::to_string)
            .collect(),
        tool_filters: config
            .tool_filters
            .iter()
            .map(|(id, tools)| pb::IntegrationToolFilter {
                integration_id: id.to_string(),
                allowed_tools: tools.clone(),
            })
            .collect(),
        client_tools: config
            .client_tools
            .iter()
            .map(|t| pb::ClientTool {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters_schema: json_to_struct(&t.parameters),
            })
            .collect(),
        max_steps: i32::try_from(config.max_steps).unwrap_or(i32::MAX),
        disable_resource_tools: config.disable_resource_tools,
        tool_drift: drift_policy(config.tool_drift).into(),
        recovery: run_recovery(config.recovery).into(),
        idempotent_tools: config.idempotent_tools.clone(),
        fallback_models: config.fallback_models.iter().map(model_ref).collect(),
        tool_overrides: config
            .tool_overrides
            .iter()
            .map(|o| pb::ToolOverride {
                integration_id: o.integration_id.to_string(),
                tool: o.tool.clone(),
                name: o.name.clone().unwrap_or_default(),
                description: o.description.clone().unwrap_or_default(),
                hidden: o.hidden,
            })
            .collect(),
        tool_search: config.tool_search,
        create_time: Some(timestamp(agent.created_at)),
        update_time: Some(timestamp(agent.updated_at)),
    }
}

pub(crate) fn proto_thread(thread: &Thread) -> pb::Thread {
    pb::Thread {
        id: thread.id.to_string(),
        organization_id: thread.org_id.clone(),
        user_id: thread.user_id.clone(),
        agent_id: thread.agent_id.to_string(),
        title: thread.title.clone(),
        create_time: Some(timestamp(thread.created_at)),
        update_time: Some(timestamp(thread.updated_at)),
    }
}

fn arguments_struct(raw: &str) -> Option<prost_types::Struct> {
    serde_json::from_str::<serde_json::Value>(raw)
        .ok()
        .and_then(|v| json_to_struct(&v))
}

fn proto_part(part: &Part) -> pb::ContentPart {
    use pb::content_part::Part as P;
    let part = match part {
        Part::Text { text } => P::Text(pb::TextPart { text: text.clone() }),
        Part::ToolCall {
            id,
            name,
            arguments,
        } => P::ToolCall(pb::ToolCallPart {
            id: id.clone(),
            name: name.clone(),
            arguments: arguments_struct(arguments),
            arguments_json: arguments.clone(),
        }),
        Part::ToolResult {
            tool_call_id,
            name,
            content,
            is_error,
        } => P::ToolResult(pb::ToolResultPart {
            tool_call_id: tool_call_id.clone(),
            name: name.clone(),
            content: content.clone(),
            is_error: *is_error,
        }),
    };
    pb::ContentPart { part: Some(part) }
}

pub(crate) fn proto_message(message: &Message) -> pb::Message {
    pb::Message {
        id: message.id.to_string(),
        thread_id: message.thread_id.to_string(),
        run_id: message.run_id.map(String::from).unwrap_or_default(),
        role: match message.role {
            Role::User => pb::MessageRole::User,
            Role::Assistant => pb::MessageRole::Assistant,
            Role::Tool => pb::MessageRole::Tool,
        }
        .into(),
        content: message.parts.iter().map(proto_part).collect(),
        create_time: Some(timestamp(message.created_at)),
    }
}

fn usage(usage: Usage) -> TokenUsage {
    TokenUsage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: 0,
    }
}

pub(crate) fn proto_run(run: &Run) -> pb::Run {
    pb::Run {
        id: run.id.to_string(),
        thread_id: run.thread_id.to_string(),
        agent_id: run.agent_id.to_string(),
        status: match run.status {
            RunStatus::Running => pb::RunStatus::Running,
            RunStatus::Completed => pb::RunStatus::Completed,
            RunStatus::RequiresAction => pb::RunStatus::RequiresAction,
            RunStatus::MaxSteps => pb::RunStatus::MaxSteps,
            RunStatus::Failed => pb::RunStatus::Failed,
            RunStatus::Cancelled => pb::RunStatus::Cancelled,
            RunStatus::Interrupted => pb::RunStatus::Interrupted,
        }
        .into(),
        steps: i32::try_from(run.steps).unwrap_or(i32::MAX),
        usage: Some(usage(run.usage)),
        error: run.error.clone().unwrap_or_default(),
        tool_bindings: run
            .bindings
            .iter()
            .map(|b| {
                let (kind, integration_id, server_tool_name) = match &b.target {
                    ToolTarget::Mcp {
                        integration_id,
                        server_tool_name,
                    } => (
                        pb::ToolKind::Mcp,
                        integration_id.to_string(),
                        server_tool_name.clone(),
                    ),
                    ToolTarget::Client => (pb::ToolKind::Client, String::new(), String::new()),
                    ToolTarget::Builtin => (pb::ToolKind::Builtin, String::new(), String::new()),
                };
                pb::ToolBinding {
                    tool_name: b.name.clone(),
                    kind: kind.into(),
                    integration_id,
                    server_tool_name,
                }
            })
            .collect(),
        create_time: Some(timestamp(run.created_at)),
        update_time: Some(timestamp(run.updated_at)),
    }
}

fn tool_kind(kind: ToolKind) -> pb::ToolKind {
    match kind {
        ToolKind::Mcp => pb::ToolKind::Mcp,
        ToolKind::Client => pb::ToolKind::Client,
        ToolKind::Builtin => pb::ToolKind::Builtin,
    }
}

fn tool_status(status: ToolCallStatus) -> pb::ToolCallStatus {
    match status {
        ToolCallStatus::Succeeded => pb::ToolCallStatus::Succeeded,
        ToolCallStatus::Failed => pb::ToolCallStatus::Failed,
        ToolCallStatus::TimedOut => pb::ToolCallStatus::TimedOut,
        ToolCallStatus::NotFound => pb::ToolCallStatus::NotFound,
        ToolCallStatus::InputRequired => pb::ToolCallStatus::InputRequired,
        ToolCallStatus::ApprovalRequired => pb::ToolCallStatus::ApprovalRequired,
        ToolCallStatus::MayHaveRun => pb::ToolCallStatus::MayHaveRun,
    }
}

fn pending_call(call: PendingCall) -> pb::ToolCallPart {
    pb::ToolCallPart {
        arguments: arguments_struct(&call.arguments),
        arguments_json: call.arguments,
        id: call.id,
        name: call.name,
    }
}

fn token_usage(call: Usage, total: Usage, model: &ModelChoice) -> pb::TokenUsageReported {
    pb::TokenUsageReported {
        usage: Some(usage(call)),
        total: Some(usage(total)),
        model: Some(model_ref(model)),
    }
}

fn tool_started(call: ToolCall, kind: ToolKind) -> pb::ToolCallStarted {
    pb::ToolCallStarted {
        tool_call_id: call.id,
        tool_name: call.name,
        kind: tool_kind(kind).into(),
        arguments: arguments_struct(&call.arguments),
        arguments_json: call.arguments,
    }
}

fn input_required(id: String, name: String, requests: Vec<InputRequest>) -> pb::ToolInputRequired {
    pb::ToolInputRequired {
        tool_call_id: id,
        tool_name: name,
        requests: requests
            .into_iter()
            .map(|r| pb::ToolInputRequest {
                key: r.key,
                method: r.method,
                params_json: r.params_json,
            })
            .collect(),
    }
}

fn tool_finished(
    id: String,
    name: String,
    status: ToolCallStatus,
    result: String,
) -> pb::ToolCallFinished {
    pb::ToolCallFinished {
        tool_call_id: id,
        tool_name: name,
        status: tool_status(status).into(),
        result,
    }
}

fn approval_required(
    id: String,
    name: String,
    arguments: String,
    approval: PendingApproval,
) -> pb::ToolApprovalRequired {
    let asked = approval.asked;
    pb::ToolApprovalRequired {
        tool_call_id: id,
        tool_name: name,
        arguments_json: arguments,
        integration_id: approval.integration_id.to_string(),
        approval_id: asked.id,
        rule: asked.rule,
        reason: asked.reason,
        approver_role: asked.approver_role,
        requester_may_approve: asked.requester_may_approve,
        expire_time: Some(timestamp(asked.expires_at)),
    }
}

fn discovery_failed(
    integration_id: IntegrationId,
    error: String,
) -> pb::IntegrationDiscoveryFailed {
    pb::IntegrationDiscoveryFailed {
        integration_id: integration_id.to_string(),
        error,
    }
}

fn client_calls(calls: Vec<PendingCall>) -> pb::ClientToolCallsRequired {
    pb::ClientToolCallsRequired {
        tool_calls: calls.into_iter().map(pending_call).collect(),
    }
}

fn authorization_required(
    integration_id: IntegrationId,
    url: String,
    tool_call_id: String,
) -> pb::AuthorizationRequired {
    pb::AuthorizationRequired {
        integration_id: integration_id.to_string(),
        authorization_url: url,
        tool_call_id,
    }
}

fn run_continued(run: &Run, continuation: Continuation) -> pb::RunContinued {
    pb::RunContinued {
        run: Some(proto_run(run)),
        after_sequence: continuation.after_sequence,
        takeovers: i32::try_from(continuation.takeovers).unwrap_or(i32::MAX),
        recovered_tool_call_ids: continuation.recovered,
        repeated_tool_call_ids: continuation.repeated,
        unresolved_tool_call_ids: continuation.unresolved,
    }
}

fn run_recovery(recovery: RunRecovery) -> pb::RunRecovery {
    match recovery {
        RunRecovery::Unspecified => pb::RunRecovery::Unspecified,
        RunRecovery::Interrupt => pb::RunRecovery::Interrupt,
        RunRecovery::Continue => pb::RunRecovery::Continue,
    }
}

fn drift_policy(policy: ToolDriftPolicy) -> pb::ToolDriftPolicy {
    match policy {
        ToolDriftPolicy::Unspecified => pb::ToolDriftPolicy::Unspecified,
        ToolDriftPolicy::Refuse => pb::ToolDriftPolicy::Refuse,
        ToolDriftPolicy::Ask => pb::ToolDriftPolicy::Ask,
        ToolDriftPolicy::Accept => pb::ToolDriftPolicy::Accept,
    }
}

fn definition_changed(change: ToolDefinitionChanged) -> pb::ToolDefinitionChanged {
    pb::ToolDefinitionChanged {
        tool_name: change.name,
        integration_id: change.integration_id.to_string(),
        description_changed: change.description_changed,
        input_schema_changed: change.input_schema_changed,
        old_description: change.old_description,
        new_description: change.new_description,
        old_input_schema_json: change.old_input_schema,
        new_input_schema_json: change.new_input_schema,
        applied: drift_policy(change.applied).into(),
        new_digest: change.new_digest,
        thread_id: change
            .thread_id
            .map(|id| id.to_string())
            .unwrap_or_default(),
    }
}

/// A run event as a stream message.
pub(crate) fn proto_event(envelope: Envelope) -> pb::ExecuteRunResponse {
    pb::ExecuteRunResponse {
        run_id: envelope.run_id.to_string(),
        sequence: envelope.sequence,
        event: Some(event_of(envelope.event)),
    }
}

fn event_of(event: RunEvent) -> pb::execute_run_response::Event {
    use pb::execute_run_response::Event as E;
    match event {
        RunEvent::Started(run) => E::RunStarted(pb::RunStarted {
            run: Some(proto_run(&run)),
        }),
        RunEvent::Continued { run, continuation } => {
            E::RunContinued(run_continued(&run, continuation))
        }
        RunEvent::TextDelta(text) => E::TextDelta(pb::TextDelta { text }),
        RunEvent::MessageCreated(message) => E::MessageCreated(pb::MessageCreated {
            message: Some(proto_message(&message)),
        }),
        RunEvent::ToolCallStarted { call, kind } => E::ToolCallStarted(tool_started(call, kind)),
        RunEvent::ToolCallFinished {
            id,
            name,
            status,
            result,
        } => E::ToolCallFinished(tool_finished(id, name, status, result)),
        RunEvent::DiscoveryFailed {
            integration_id,
            error,
        } => E::IntegrationDiscoveryFailed(discovery_failed(integration_id, error)),
        RunEvent::ClientToolCallsRequired(calls) => E::ClientToolCallsRequired(client_calls(calls)),
        RunEvent::ToolInputRequired { id, name, requests } => {
            E::ToolInputRequired(input_required(id, name, requests))
        }
        RunEvent::ToolApprovalRequired {
            id,
            name,
            arguments,
            approval,
        } => E::ToolApprovalRequired(approval_required(id, name, arguments, approval)),
        RunEvent::SoftBudgetPassed(passed) => E::SoftBudgetExceeded(pb::SoftBudgetExceeded {
            used_tokens: passed.used_tokens,
            soft_budget_tokens: passed.soft_budget_tokens,
        }),
        RunEvent::ToolDefinitionChanged(change) => {
            E::ToolDefinitionChanged(definition_changed(change))
        }
        RunEvent::AuthorizationRequired {
            integration_id,
            url,
            tool_call_id,
        } => E::AuthorizationRequired(authorization_required(integration_id, url, tool_call_id)),
        RunEvent::Usage { call, total, model } => E::TokenUsage(token_usage(call, total, &model)),
        RunEvent::ModelFallback {
            failed,
            error,
            next,
        } => E::ModelFallback(model_fallback(&failed, error, &next)),
        RunEvent::Completed(run) => E::RunCompleted(pb::RunCompleted {
            run: Some(proto_run(&run)),
        }),
        RunEvent::Failed { run, error } => E::RunFailed(pb::RunFailed {
            run: Some(proto_run(&run)),
            error,
        }),
    }
}

fn model_fallback(failed: &ModelChoice, error: String, next: &ModelChoice) -> pb::ModelFallback {
    pb::ModelFallback {
        failed: Some(model_ref(failed)),
        error,
        next: Some(model_ref(next)),
    }
}

/// A data source as returned to callers.
pub(crate) fn proto_data_source(source: &crate::domain::datasource::DataSource) -> pb::DataSource {
    use crate::domain::datasource::ColumnType;
    pb::DataSource {
        id: source.id.to_string(),
        thread_id: source.thread_id.to_string(),
        table_name: source.table_name.clone(),
        origin: source.origin.clone(),
        integration_id: source.integration_id.map(String::from).unwrap_or_default(),
        columns: source
            .columns
            .iter()
            .map(|c| pb::Column {
                name: c.name.clone(),
                r#type: match c.column_type {
                    ColumnType::Text => pb::ColumnType::Text,
                    ColumnType::Integer => pb::ColumnType::Integer,
                    ColumnType::Float => pb::ColumnType::Float,
                    ColumnType::Boolean => pb::ColumnType::Boolean,
                    ColumnType::Date => pb::ColumnType::Date,
                    ColumnType::Timestamp => pb::ColumnType::Timestamp,
                }
                .into(),
            })
            .collect(),
        row_count: source.row_count,
        size_bytes: source.size_bytes,
        create_time: Some(timestamp(source.created_at)),
    }
}
