//! What the jobs of a run share: what a started run needs, the calls it
//! makes again on resume, and how its messages are made and numbered.

use switchboard_db::now_millis;

use super::models::Models;
use crate::domain::{
    entities::{
        Agent, InputAnswers, Message, Part, PendingApproval, PendingInput, Role, Run, Thread,
    },
    error::RunsError,
    ids::{MessageId, RunId, ThreadId},
    input::{ApprovalChoice, ClientResult, ToolAnswers},
    model::ToolCall,
    ports::{Caller, ModelProviders, RepositoryError, RunsRepository},
    usage::SoftBudgetPassed,
};

/// Everything a started run needs.
pub(super) struct RunContext {
    pub(super) caller: Caller,
    pub(super) thread: Thread,
    pub(super) agent: Agent,
    pub(super) models: Models,
    /// The stored messages the run starts from.
    pub(super) input: Vec<Message>,
    /// MCP tool calls to make again with the caller's answers, first.
    pub(super) resumed: Vec<Resumed>,
    /// Set when the organization passed its soft budget: told after the
    /// run's first event.
    pub(super) budget: Option<SoftBudgetPassed>,
    /// Set when this process took the run over from a replica that
    /// stopped: the run continues from its record.
    pub(super) takeover: Option<Takeover>,
}

/// A run this process took over.
#[derive(Debug, Clone, Copy)]
pub(super) struct Takeover {
    /// The last of its events stored before.
    pub(super) after_sequence: i64,
    /// How many times it was taken over, this one included.
    pub(super) takeovers: u32,
}

/// The run an input starts: its first messages, the calls to make again,
/// and the budget warning to tell.
pub(super) struct Opened {
    pub(super) run: Run,
    pub(super) input: Vec<Message>,
    pub(super) resumed: Vec<Resumed>,
    pub(super) budget: Option<SoftBudgetPassed>,
}

/// A new message of `run`'s thread.
pub(super) fn message(run: &Run, role: Role, parts: Vec<Part>, created_at: i64) -> Message {
    Message {
        id: MessageId::new(),
        thread_id: run.thread_id,
        run_id: Some(run.id),
        seq: 0,
        role,
        parts,
        created_at,
    }
}

/// Gives `messages` their stored `seq`s.
pub(super) fn numbered(messages: &mut [Message], seqs: Vec<i64>) {
    for (message, seq) in messages.iter_mut().zip(seqs) {
        message.seq = seq;
    }
}

/// What the caller sent to resume a run.
pub(super) struct Resumption {
    pub(super) run_id: RunId,
    pub(super) results: Vec<ClientResult>,
    pub(super) answers: Vec<ToolAnswers>,
    pub(super) approvals: Vec<ApprovalChoice>,
}

/// An MCP tool call made again when its run resumes.
pub(super) struct Resumed {
    /// The call as the model made it.
    pub(super) call: ToolCall,
    /// What it is made again with.
    pub(super) with: ResumedWith,
}

/// What a resumed MCP tool call is made again with.
pub(super) enum ResumedWith {
    /// The caller's answers to what its server asked.
    Answers {
        /// What its server asked.
        input: PendingInput,
        /// The caller's answers.
        answers: InputAnswers,
    },
    /// The approval a policy rule gated it by.
    Approval(PendingApproval),
}

/// `caller`'s thread `thread_id`, its agent and the agent's models: what
/// starting, resuming and continuing a run all read.
pub(super) async fn load(
    repo: &dyn RunsRepository,
    models: &dyn ModelProviders,
    caller: &Caller,
    thread_id: ThreadId,
) -> Result<(Thread, Agent, Models), RunsError> {
    let principal = &caller.principal;
    let (thread, agent) = repo
        .get_thread_with_agent(&principal.org_id, &principal.user_id, thread_id)
        .await?
        .ok_or(RunsError::NotFound("thread"))?;
    let agent = agent
        .ok_or_else(|| RunsError::FailedPrecondition("the thread's agent was deleted".into()))?;
    let models = Models::of(&agent.config, models)?;
    Ok((thread, agent, models))
}

/// The span a run's work follows (OpenTelemetry GenAI conventions), itself
/// a child of the current span: the calls the run makes to mcp-service and
/// to the model carry the caller's trace. `takeovers` is recorded on a run
/// taken over.
pub(super) fn invoke_agent_span(context: &RunContext, run_id: RunId) -> tracing::Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = %format!("invoke_agent {}", context.agent.name),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.id = %context.agent.id,
        gen_ai.agent.name = %context.agent.name,
        gen_ai.conversation.id = %context.thread.id,
        run_id = %run_id,
        takeovers = tracing::field::Empty,
    )
}

/// Saves `run`'s state, stamped now.
pub(super) async fn save(repo: &dyn RunsRepository, run: &mut Run) -> Result<(), RepositoryError> {
    run.updated_at = now_millis();
    repo.update_run(run).await
}
