//! A conversation with an agent: one run per user message, streamed as it
//! arrives, paused for client tools and resumed with their results.

mod approving;
mod asking;
mod echo;
mod lines;
pub(crate) mod render;

pub use lines::LineReader;
use switchboard_proto::runs::v1::{
    self as runs, ClientToolResult, ClientToolResultsInput, ExecuteRunRequest, UserMessageInput,
    execute_run_request::Input,
};

use self::render::{End, Renderer};
use crate::{
    client::{Clients, RunsClient},
    error::{CliError, Service},
    output::Output,
};

/// What the chat tells the agent once the user connected an integration.
const CONNECTED: &str = "I have connected the integration. Please go on.";

/// One thread's conversation.
#[derive(Debug)]
pub struct Session {
    clients: Clients,
    client: RunsClient,
    thread_id: String,
    out: Output,
    /// The idempotency key of the next user message's run, used once.
    request_id: String,
}

impl Session {
    /// A conversation on `thread_id`.
    /// The first user message's run carries `request_id` (empty: none).
    pub fn new(
        clients: &Clients,
        thread_id: String,
        out: Output,
        request_id: String,
    ) -> Result<Self, CliError> {
        Ok(Self {
            clients: clients.clone(),
            client: clients.runs()?,
            thread_id,
            out,
            request_id,
        })
    }

    /// Sends `text`, streams the answer, asks `lines` for the results of
    /// client tools and the answers to servers' questions whenever the run
    /// pauses, and returns once the run ends. When the run said an
    /// integration needs the user's authorization, asks them to connect it
    /// and, once they did, asks the agent to go on.
    pub async fn say(&mut self, text: String, lines: &mut LineReader) -> Result<(), CliError> {
        let mut input = Input::UserMessage(UserMessageInput { text });
        let mut request_id = std::mem::take(&mut self.request_id);
        // The calls the run waits for an approval of, while the person's
        // word on them is on its way.
        let mut gated = Vec::new();
        loop {
            let ended = match self
                .execute(input.clone(), std::mem::take(&mut request_id))
                .await
            {
                Err(refused) if !gated.is_empty() && not_theirs_to_decide(&refused) => {
                    // The run stays paused: ask again, so that the person
                    // can go on once an approver decided.
                    asking::say(self.out, format!("✗ {refused}"))?;
                    let decisions = approving::decisions(&gated, self.out, lines).await?;
                    if let Input::ClientToolResults(resume) = &mut input {
                        resume.approval_decisions = decisions;
                    }
                    continue;
                }
                ended => ended?,
            };
            gated.clear();
            match ended {
                End::Completed { authorize } => {
                    if authorize.is_empty()
                        || !asking::authorize(&self.clients, &authorize, self.out, lines).await?
                    {
                        return Ok(());
                    }
                    input = Input::UserMessage(UserMessageInput {
                        text: CONNECTED.to_owned(),
                    });
                }
                End::Paused {
                    run_id,
                    calls,
                    asked,
                    approvals,
                } => {
                    let results = self.ask_results(&calls, lines).await?;
                    let input_answers = asking::answers(&asked, self.out, lines).await?;
                    let approval_decisions =
                        approving::decisions(&approvals, self.out, lines).await?;
                    gated = approvals;
                    input = Input::ClientToolResults(ClientToolResultsInput {
                        run_id,
                        results,
                        input_answers,
                        approval_decisions,
                    });
                }
            }
        }
    }

    /// One ExecuteRun: its events rendered until the run ends. Ctrl-C closes
    /// the stream, which cancels the run.
    async fn execute(&mut self, input: Input, request_id: String) -> Result<End, CliError> {
        let request = ExecuteRunRequest {
            thread_id: self.thread_id.clone(),
            input: Some(input),
            request_id,
            // Ctrl-C ends the chat's run: no one is left to read it.
            detach_on_disconnect: false,
        };
        let failed = CliError::from(Service::Runs);
        let _quiet = echo::NoControlEcho::new();
        let mut renderer = Renderer::new(self.out);
        let mut stream = tokio::select! {
            response = self.client.execute_run(request) => response.map_err(&failed)?.into_inner(),
            _ = tokio::signal::ctrl_c() => return Err(CliError::Interrupted),
        };
        loop {
            let event = tokio::select! {
                event = stream.message() => event.map_err(&failed)?,
                _ = tokio::signal::ctrl_c() => {
                    renderer.interrupted()?;
                    return Err(CliError::Interrupted);
                }
            };
            let Some(event) = event else {
                return Err(CliError::Failed(
                    "the run's stream ended before the run did".into(),
                ));
            };
            if let Some(end) = renderer.event(&event)? {
                return end;
            }
        }
    }

    /// Asks for each client tool call's result: a line of text, or `!text`
    /// for an error.
    async fn ask_results(
        &self,
        calls: &[runs::ToolCallPart],
        lines: &mut LineReader,
    ) -> Result<Vec<ClientToolResult>, CliError> {
        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            let arguments = render::arguments_text(&call.arguments_json, call.arguments.as_ref());
            let question = format!(
                "⏸ the agent asks you to run client tool `{}` with {arguments}\n  type its result (start with ! to report an error):",
                call.name
            );
            asking::say(self.out, question)?;
            let Some(line) = lines.read("result> ").await? else {
                return Err(CliError::Failed(format!(
                    "the run waits for the result of client tool `{}`; none was given",
                    call.name
                )));
            };
            let (content, is_error) = match line.strip_prefix('!') {
                Some(error) => (error.trim().to_owned(), true),
                None => (line.trim().to_owned(), false),
            };
            results.push(ClientToolResult {
                tool_call_id: call.id.clone(),
                content,
                is_error,
            });
        }
        Ok(results)
    }
}

/// Whether a resume was refused because the person may not decide an
/// approval they gave a word on.
fn not_theirs_to_decide(error: &CliError) -> bool {
    matches!(error, CliError::Grpc { status, .. } if status.code() == tonic::Code::PermissionDenied)
}
