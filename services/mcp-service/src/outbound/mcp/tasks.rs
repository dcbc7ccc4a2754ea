//! Tasks (the Tasks extension of 2026-07-28, SEP-2663): a server may answer
//! `tools/call` with a task handle instead of the result, and runs the tool
//! on its own; the client polls `tasks/get` until the task ends, answers
//! the task's requests for input with `tasks/update`, and asks it to stop
//! with `tasks/cancel`.
//!
//! mcp-service follows a task within the call's time limit and hands on its
//! outcome as the call's: the result of a completed task, a tool error for
//! a failed or cancelled one. A task's requests for input are answered by
//! the elicitation policy, as those of a multi-round-trip request are; what
//! the policy cannot answer goes to the caller with the task's id, and the
//! caller's later call delivers the answers to that task and follows it
//! again. The tool is started once: a task is never made again.
//!
//! When the call ends before its task does (its time limit, the caller
//! leaving, a failed poll), mcp-service sends `tasks/cancel`.

use std::time::Duration;

use rmcp::{
    RoleClient, ServiceError,
    model::{
        CallToolResult, CancelTaskParams, ContentBlock, DEFAULT_MRTR_MAX_ROUNDS, GetTaskParams,
        InputRequests, InputResponses, JsonObject, Task, TaskPayload, UpdateTaskParams,
    },
    service::Peer,
};
use serde_json::Value;

use crate::{
    domain::elicitation::ElicitationPolicy,
    outbound::{mcp::input_required::answer_by_policy, telemetry::with_trace},
};

/// How often a task is polled: the server's suggested interval, within
/// these bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskPolling {
    /// Shortest pause between two polls of one task, whatever the server
    /// suggests.
    pub min_interval: Duration,
    /// Longest pause between two polls of one task, whatever the server
    /// suggests.
    pub max_interval: Duration,
}

impl TaskPolling {
    /// The pause when the server suggests none (within the bounds).
    pub const UNHINTED_INTERVAL: Duration = Duration::from_millis(500);

    /// The pause before the next poll when the server suggests `hint_ms`.
    pub fn interval(&self, hint_ms: Option<u64>) -> Duration {
        hint_ms
            .map_or(Self::UNHINTED_INTERVAL, Duration::from_millis)
            .clamp(self.min_interval, self.max_interval.max(self.min_interval))
    }

    /// The most polls of one task within `timeout`: as many as the shortest
    /// pause fits, and two more. The time limit ends the call first; this
    /// bounds the loop on its own.
    pub fn max_polls(&self, timeout: Duration) -> u64 {
        let min = self.min_interval.as_millis().max(1);
        let polls = timeout.as_millis() / min;
        u64::try_from(polls).unwrap_or(u64::MAX).saturating_add(2)
    }
}

impl Default for TaskPolling {
    fn default() -> Self {
        Self {
            min_interval: Duration::from_millis(100),
            max_interval: Duration::from_secs(5),
        }
    }
}

/// A task to follow: one the server just created, or one the caller
/// resumes with its answers.
#[derive(Debug, Clone)]
pub struct TaskStart {
    task_id: String,
    poll_interval_ms: Option<u64>,
    answers: Option<InputResponses>,
}

impl TaskStart {
    /// The task the server created for a call.
    pub fn created(task: Task) -> Self {
        Self {
            task_id: task.task_id,
            poll_interval_ms: task.poll_interval_ms,
            answers: None,
        }
    }

    /// A task the caller resumes with `answers` to its requests for input.
    pub fn resumed(task_id: String, answers: InputResponses) -> Self {
        Self {
            task_id,
            poll_interval_ms: None,
            answers: (!answers.is_empty()).then_some(answers),
        }
    }
}

/// How a followed task ended for this call.
#[derive(Debug)]
pub enum TaskEnd {
    /// The task ended; its outcome as the call's result.
    Complete(CallToolResult),
    /// The task waits for input only the caller can give.
    InputRequired {
        /// The task, to resume.
        task_id: String,
        /// What it asks.
        requests: InputRequests,
    },
}

/// Follows a task until it ends or needs the caller, polling at most
/// `polling.max_polls(timeout)` times; `timeout` is the call's limit, which
/// also bounds the whole. The task is cancelled when this returns an error
/// or is dropped before the task ended.
pub async fn follow(
    peer: &Peer<RoleClient>,
    policy: ElicitationPolicy,
    (polling, timeout): (TaskPolling, Duration),
    start: TaskStart,
) -> Result<TaskEnd, ServiceError> {
    let TaskStart {
        task_id,
        mut poll_interval_ms,
        answers,
    } = start;
    let mut guard = CancelOnDrop::new(peer, &task_id);
    // Within the call's span: its polls are part of the `tools/call`.
    tracing::debug!(
        task_id,
        resumed = answers.is_some(),
        "following the server's task"
    );
    if let Some(answers) = answers {
        update(peer, &task_id, answers).await?;
    }
    let mut answered_rounds = 0usize;
    for _ in 0..polling.max_polls(timeout) {
        tokio::time::sleep(polling.interval(poll_interval_ms)).await;
        let detailed = peer
            .get_task(with_trace(GetTaskParams::new(task_id.clone())))
            .await?
            .task;
        poll_interval_ms = detailed.task.poll_interval_ms.or(poll_interval_ms);
        let requests = match detailed.payload {
            TaskPayload::Working => continue,
            TaskPayload::InputRequired { input_requests } => input_requests,
            ended => {
                guard.disarm();
                return ended_result(ended).map(TaskEnd::Complete);
            }
        };
        match answer_by_policy(policy, Some(&requests)) {
            Some(answers) if answers.is_empty() => {}
            Some(answers) => {
                answered_rounds += 1;
                if answered_rounds > DEFAULT_MRTR_MAX_ROUNDS {
                    return Err(ServiceError::InputRequiredRoundsExceeded {
                        max_rounds: DEFAULT_MRTR_MAX_ROUNDS,
                    });
                }
                update(peer, &task_id, answers).await?;
            }
            None => {
                // The task waits for the caller, who resumes it later.
                guard.disarm();
                return Ok(TaskEnd::InputRequired { task_id, requests });
            }
        }
    }
    Err(ServiceError::Timeout { timeout })
}

async fn update(
    peer: &Peer<RoleClient>,
    task_id: &str,
    answers: InputResponses,
) -> Result<(), ServiceError> {
    peer.update_task(with_trace(UpdateTaskParams::new(task_id, answers)))
        .await
}

/// The call's result for a task that ended: the tool's result, or a tool
/// error saying why there is none.
fn ended_result(payload: TaskPayload) -> Result<CallToolResult, ServiceError> {
    match payload {
        TaskPayload::Completed { result } => serde_json::from_value(Value::Object(result))
            .map_err(|_| ServiceError::UnexpectedResponse),
        TaskPayload::Failed { error } => Ok(CallToolResult::error(vec![ContentBlock::text(
            format!("the tool's task failed: {}", error_message(&error)),
        )])),
        TaskPayload::Cancelled => Ok(CallToolResult::error(vec![ContentBlock::text(
            "the server cancelled the tool's task before it finished",
        )])),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// The message of a task's JSON-RPC error.
fn error_message(error: &JsonObject) -> &str {
    error
        .get("message")
        .and_then(Value::as_str)
        .filter(|message| !message.is_empty())
        .unwrap_or("no reason given")
}

/// How long a `tasks/cancel` sent for a call that ended may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `tasks/cancel` when dropped armed: the call ended (its time limit,
/// its caller gone, an error) while the task still ran.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    task_id: Option<String>,
}

impl CancelOnDrop {
    fn new(peer: &Peer<RoleClient>, task_id: &str) -> Self {
        Self {
            peer: peer.clone(),
            task_id: Some(task_id.to_owned()),
        }
    }

    /// The task ended, or waits for the caller: it is not cancelled.
    fn disarm(&mut self) {
        self.task_id = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(task_id) = self.task_id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Within the call's span still, so the cancellation carries its trace.
        let params = with_trace(CancelTaskParams::new(task_id.clone()));
        let peer = self.peer.clone();
        runtime.spawn(async move {
            match tokio::time::timeout(CANCEL_TIMEOUT, peer.cancel_task(params)).await {
                Ok(Ok(())) => tracing::debug!(task_id, "task cancelled"),
                Ok(Err(error)) => tracing::debug!(task_id, %error, "cancelling the task failed"),
                Err(_) => tracing::debug!(task_id, "cancelling the task timed out"),
            }
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn polling() -> TaskPolling {
        TaskPolling {
            min_interval: Duration::from_millis(100),
            max_interval: Duration::from_secs(5),
        }
    }

    #[test]
    fn the_servers_hint_is_held_within_the_floor_and_the_cap() {
        let polling = polling();
        assert_eq!(polling.interval(Some(0)), Duration::from_millis(100));
        assert_eq!(polling.interval(Some(99)), Duration::from_millis(100));
        assert_eq!(polling.interval(Some(100)), Duration::from_millis(100));
        assert_eq!(polling.interval(Some(1_234)), Duration::from_millis(1_234));
        assert_eq!(polling.interval(Some(5_000)), Duration::from_secs(5));
        assert_eq!(polling.interval(Some(u64::MAX)), Duration::from_secs(5));
        assert_eq!(polling.interval(None), TaskPolling::UNHINTED_INTERVAL);
        let slow = TaskPolling {
            min_interval: Duration::from_secs(1),
            ..polling
        };
        assert_eq!(slow.interval(None), Duration::from_secs(1));
    }

    #[test]
    fn polls_are_bounded_by_what_the_time_limit_fits() {
        let polling = polling();
        assert_eq!(polling.max_polls(Duration::from_secs(10)), 102);
        assert_eq!(polling.max_polls(Duration::ZERO), 2);
        let unbounded_floor = TaskPolling {
            min_interval: Duration::ZERO,
            ..polling
        };
        assert_eq!(unbounded_floor.max_polls(Duration::from_secs(1)), 1_002);
        assert_eq!(
            polling.max_polls(Duration::MAX),
            u64::MAX,
            "no overflow at the largest limit"
        );
    }

    #[test]
    fn a_task_that_ended_becomes_the_calls_result() {
        let result: JsonObject = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "done"}],
            "isError": false
        }))
        .unwrap();
        let done = ended_result(TaskPayload::Completed { result }).unwrap();
        assert_eq!(done.is_error, Some(false));

        let error =
            serde_json::from_value(json!({"code": -32603, "message": "disk full"})).unwrap();
        let failed = ended_result(TaskPayload::Failed { error }).unwrap();
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(
            serde_json::to_value(&failed.content).unwrap()[0]["text"],
            "the tool's task failed: disk full"
        );

        let cancelled = ended_result(TaskPayload::Cancelled).unwrap();
        assert_eq!(cancelled.is_error, Some(true));
        assert!(ended_result(TaskPayload::Working).is_err());

        let unreadable: JsonObject = serde_json::from_value(json!({"content": 3})).unwrap();
        assert!(ended_result(TaskPayload::Completed { result: unreadable }).is_err());
    }
}
