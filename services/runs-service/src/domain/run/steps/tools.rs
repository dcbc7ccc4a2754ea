//! A step's tool calls: run concurrently, their outcomes told to the
//! client and stored, and the calls that wait for the run's caller (client
//! tools, servers' questions) pausing the run; on resume, the calls made
//! again with the caller's answers.

use futures::{StreamExt as _, stream};

use super::{Running, Step, telemetry::execute_tool};
use crate::domain::{
    entities::{Part, PendingCall, Role, RunStatus},
    events::{RunEvent, ToolKind},
    model::ToolCall,
    run::{
        context::{Resumed, ResumedWith},
        emitter::Stop,
    },
    tools::{ToolAction, ToolOutcome, ToolRouter, Toolset},
};

/// What a step's tool calls came to.
#[derive(Default)]
pub(super) struct Ran {
    /// Results for the model, in call order.
    pub(super) parts: Vec<Part>,
    /// Calls that wait for the run's caller.
    pub(super) waiting: Vec<PendingCall>,
    /// Whether a call changed the thread's data sources.
    pub(super) sources_changed: bool,
}

impl Running<'_> {
    /// Runs the calls concurrently (at most the parallel-tools limit at
    /// once); their results come back in call order.
    pub(super) async fn run_tools(
        &mut self,
        toolset: &Toolset,
        calls: Vec<ToolCall>,
    ) -> Result<Ran, Stop> {
        for call in &calls {
            let kind = ToolRouter::kind(toolset, &call.name).unwrap_or(ToolKind::Mcp);
            self.emitter
                .emit(RunEvent::ToolCallStarted {
                    call: call.clone(),
                    kind,
                })
                .await?;
        }
        let router = &*self.steps.tools;
        let context = &self.tools;
        let results: Vec<(ToolCall, ToolOutcome)> = stream::iter(calls)
            .map(|call| async move {
                let outcome = execute_tool(&call, router.call(context, toolset, &call)).await;
                (call, outcome)
            })
            .buffered(self.steps.settings.max_parallel_tools.max(1))
            .collect()
            .await;
        self.report_outcomes(results).await
    }

    /// Tells the client how each call ended, and sorts the outcomes into
    /// results for the model and calls that wait for the caller's answers.
    async fn report_outcomes(
        &mut self,
        results: Vec<(ToolCall, ToolOutcome)>,
    ) -> Result<Ran, Stop> {
        let mut ran = Ran::default();
        for (call, outcome) in results {
            self.emitter
                .emit(RunEvent::ToolCallFinished {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    status: outcome.status,
                    result: outcome.text.clone(),
                })
                .await?;
            ran.sources_changed |= outcome.sources_changed;
            match outcome.action {
                Some(ToolAction::Input(input)) => {
                    ran.waiting.push(PendingCall {
                        id: call.id,
                        name: call.name,
                        arguments: call.arguments,
                        input: Some(*input),
                        approval: None,
                    });
                    continue;
                }
                Some(ToolAction::Approval(approval)) => {
                    ran.waiting.push(PendingCall {
                        id: call.id,
                        name: call.name,
                        arguments: call.arguments,
                        input: None,
                        approval: Some(*approval),
                    });
                    continue;
                }
                Some(ToolAction::Authorize {
                    integration_id,
                    url,
                }) => {
                    self.emitter
                        .emit(RunEvent::AuthorizationRequired {
                            integration_id,
                            url,
                            tool_call_id: call.id.clone(),
                        })
                        .await?;
                }
                None => {}
            }
            ran.parts.push(Part::ToolResult {
                tool_call_id: call.id,
                name: call.name,
                content: outcome.text,
                is_error: outcome.is_error,
            });
        }
        Ok(ran)
    }

    /// Makes again the MCP tool calls whose servers asked the caller
    /// something, now with the caller's answers; the run goes on with their
    /// results, or pauses again for what the servers ask next.
    pub(super) async fn resume_calls(&mut self, resumed: Vec<Resumed>) -> Result<Step, Stop> {
        if resumed.is_empty() {
            return Ok(Step::Continue);
        }
        for Resumed { call, .. } in &resumed {
            self.emitter
                .emit(RunEvent::ToolCallStarted {
                    call: call.clone(),
                    kind: ToolKind::Mcp,
                })
                .await?;
        }
        let router = &*self.steps.tools;
        let context = &self.tools;
        let results: Vec<(ToolCall, ToolOutcome)> = stream::iter(resumed)
            .map(|Resumed { call, with }| async move {
                let outcome = match &with {
                    ResumedWith::Answers { input, answers } => {
                        execute_tool(&call, router.resume(context, &call, input, answers)).await
                    }
                    ResumedWith::Approval(approval) => {
                        execute_tool(&call, router.resume_approved(context, &call, approval)).await
                    }
                };
                (call, outcome)
            })
            .buffered(self.steps.settings.max_parallel_tools.max(1))
            .collect()
            .await;
        let ran = self.report_outcomes(results).await?;
        self.store_results(ran).await
    }

    /// Stores the results of the calls this service ran with the run's
    /// state, in one write. Calls waiting for the caller (client tools,
    /// servers' questions) pause the run.
    pub(super) async fn store_results(&mut self, ran: Ran) -> Result<Step, Stop> {
        let Ran {
            parts,
            waiting,
            sources_changed,
        } = ran;
        let mut turn = Vec::new();
        if !parts.is_empty() {
            turn.push((Role::Tool, parts));
        }
        let paused = !waiting.is_empty();
        if paused {
            self.run.status = RunStatus::RequiresAction;
            self.run.pending = waiting;
        }
        self.store(turn).await?;
        if sources_changed {
            self.sources = self.steps.tools.sources(self.tools.thread_id).await;
            self.offered = None;
        }
        if !paused {
            return Ok(Step::Continue);
        }
        self.record_pause().await?;
        Ok(Step::Done)
    }

    /// Tells the client what the paused run waits for, then that it paused.
    async fn record_pause(&mut self) -> Result<(), Stop> {
        let (client, held): (Vec<_>, Vec<_>) = self
            .run
            .pending
            .iter()
            .cloned()
            .partition(PendingCall::is_client);
        if !client.is_empty() {
            self.emitter
                .emit(RunEvent::ClientToolCallsRequired(client))
                .await?;
        }
        for call in held {
            let event = match (call.input, call.approval) {
                (Some(input), _) => RunEvent::ToolInputRequired {
                    id: call.id,
                    name: call.name,
                    requests: input.asked.requests,
                },
                (None, Some(approval)) => RunEvent::ToolApprovalRequired {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                    approval,
                },
                (None, None) => continue,
            };
            self.emitter.emit(event).await?;
        }
        self.emitter
            .emit(RunEvent::Completed(self.run.clone()))
            .await?;
        Ok(())
    }
}
