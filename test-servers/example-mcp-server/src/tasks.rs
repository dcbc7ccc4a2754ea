//! Tools that answer as tasks (the Tasks extension of 2026-07-28,
//! SEP-2663): a `tools/call` answered with a task handle; the client polls
//! `tasks/get` for the outcome, answers the task's questions with
//! `tasks/update` and may ask for it to stop with `tasks/cancel`.
//!
//! The tools are unlisted, so that listings stay as they are, and answer
//! only a client that declares the extension. Tasks outlive the session
//! that started them: every session of one server shares its tasks.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData as McpError, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult,
        InputRequest,
    },
    service::RequestContext,
    task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions},
};
use serde_json::Value;

use crate::{
    MAX_BIG_BYTES,
    confirm::{self, CONFIRM_KEY},
    stats::Stats,
};

/// Name of an unlisted tool that answers as a task, which completes after
/// `ms` milliseconds with `slept <ms>ms`, or stops as `cancelled` when the
/// client cancels it first.
pub const TASK_SLEEP_TOOL: &str = "task_sleep";
/// Name of an unlisted tool that answers as a task, which completes with
/// one text block of exactly `bytes` bytes (at most [`crate::MAX_BIG_BYTES`]).
pub const TASK_BIG_TOOL: &str = "task_big";
/// Name of an unlisted tool that answers as a task, which fails with a
/// JSON-RPC error carrying its `message` argument.
pub const TASK_FAIL_TOOL: &str = "task_fail";
/// Name of an unlisted tool that answers as a task, which asks the client
/// to confirm its `action` argument (an elicitation under [`CONFIRM_KEY`],
/// answered with `tasks/update`) and then completes with the verdict, as
/// [`crate::CONFIRM_TOOL`] does.
pub const TASK_CONFIRM_TOOL: &str = "task_confirm";
/// The polling interval the tasks suggest, in milliseconds.
pub const TASK_POLL_INTERVAL_MS: u64 = 20;

/// The tasks of one server, shared by all its sessions.
#[derive(Clone, Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("running", &self.manager.running_task_count())
            .finish()
    }
}

/// Whether `name` is one of the tools that answer as tasks.
pub(crate) fn is_task_tool(name: &str) -> bool {
    [
        TASK_SLEEP_TOOL,
        TASK_BIG_TOOL,
        TASK_FAIL_TOOL,
        TASK_CONFIRM_TOOL,
    ]
    .contains(&name)
}

impl Tasks {
    /// The task store, for `tasks/get`, `tasks/update` and `tasks/cancel`.
    pub(crate) fn manager(&self) -> &TaskManager {
        &self.manager
    }

    /// Starts the task of a `tools/call` of a task tool and answers with
    /// its handle.
    pub(crate) fn call(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if !declared {
            return Err(McpError::invalid_request(
                format!(
                    "the tool {} runs only as a task: declare the tasks extension",
                    request.name
                ),
                None,
            ));
        }
        let work = work(request)?;
        let options = TaskOptions::new().with_poll_interval_ms(TASK_POLL_INTERVAL_MS);
        let task = self.manager.spawn(options, |context| work.run(context));
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }
}

/// What a task tool was asked to do.
enum Work {
    Sleep(u64),
    Big(usize),
    Fail(String),
    Confirm(String),
}

fn work(request: &CallToolRequestParams) -> Result<Work, McpError> {
    let arguments = request.arguments.as_ref();
    let argument = |name: &str| arguments.and_then(|arguments| arguments.get(name));
    let missing = |name: &str| {
        McpError::invalid_params(format!("invalid arguments: `{name}` is required"), None)
    };
    match request.name.as_ref() {
        TASK_SLEEP_TOOL => argument("ms")
            .and_then(Value::as_u64)
            .map(Work::Sleep)
            .ok_or_else(|| missing("ms")),
        TASK_BIG_TOOL => match argument("bytes").and_then(Value::as_u64) {
            Some(bytes) if bytes <= MAX_BIG_BYTES as u64 => Ok(Work::Big(bytes as usize)),
            Some(_) => Err(McpError::invalid_params(
                format!("bytes must be at most {MAX_BIG_BYTES}"),
                None,
            )),
            None => Err(missing("bytes")),
        },
        TASK_FAIL_TOOL => argument("message")
            .and_then(Value::as_str)
            .map(|message| Work::Fail(message.to_owned()))
            .ok_or_else(|| missing("message")),
        _ => confirm::action_of(arguments).map(|action| Work::Confirm(action.to_owned())),
    }
}

impl Work {
    fn run(self, context: TaskContext) -> TaskFuture {
        Box::pin(async move {
            match self {
                Self::Sleep(ms) => tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {
                        Ok(CallToolResult::success(vec![ContentBlock::text(format!("slept {ms}ms"))]))
                    }
                    () = context.cancelled() => Err(TaskExit::Cancelled),
                },
                Self::Big(bytes) => Ok(CallToolResult::success(vec![ContentBlock::text(
                    "x".repeat(bytes),
                )])),
                Self::Fail(message) => {
                    Err(TaskExit::Error(McpError::internal_error(message, None)))
                }
                Self::Confirm(action) => {
                    let request: InputRequest =
                        serde_json::from_value(confirm::elicitation(&action)).map_err(|error| {
                            McpError::internal_error(
                                format!("invalid input request: {error}"),
                                None,
                            )
                        })?;
                    let answer = context.request_input(CONFIRM_KEY, request).await?;
                    let verdict = confirm::verdict_of(&answer)?;
                    let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
                        "{verdict} {action}"
                    ))]);
                    result.structured_content = Some(serde_json::json!({ "answer": answer }));
                    Ok(result)
                }
            }
        })
    }
}

/// Records a `tasks/cancel` and passes it to the task.
pub(crate) fn cancel(tasks: &Tasks, stats: &Arc<Stats>, task_id: &str) -> Result<(), McpError> {
    stats.record_task_cancel();
    tasks.manager.cancel_task(task_id)
}
