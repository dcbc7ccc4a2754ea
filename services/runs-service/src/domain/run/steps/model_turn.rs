//! One model turn: the agent's model asked, or the next of its fallbacks
//! when one fails before it produced any output; the answer streamed to the
//! client as it comes.

use futures::{StreamExt as _, stream};

use super::{Running, Stop, Turn};
use crate::domain::{
    entities::{ModelChoice, Usage},
    error::RunsError,
    events::RunEvent,
    model::{ChatRequest, ModelError, ModelEvent},
    ports::{ModelProvider, ModelStream},
    run::{
        history::{keep_window, to_chat},
        models::moves_on,
    },
    tools::Toolset,
};

/// How one model's attempt at a turn ended.
pub(super) enum Attempt {
    /// It answered, or the run stopped.
    Ended(Result<Turn, Stop>),
    /// It failed before any output, and another model follows.
    MovedOn(ModelError),
}

fn model_failed(error: ModelError) -> RunsError {
    RunsError::FailedPrecondition(format!("the model call failed: {error}"))
}

impl Running<'_> {
    /// One model turn, by the first of the agent's models that does not
    /// fail before its output; each move to the next is told. A run stays
    /// with the model that answered: its later steps start there.
    pub(super) async fn chat(&mut self, toolset: &Toolset) -> Result<Turn, Stop> {
        let models = self.models;
        for (i, (choice, provider)) in models.iter().enumerate().skip(self.answering) {
            let next = models.after(i);
            let attempt = self
                .chat_with(toolset, choice, &**provider, next.is_some())
                .await;
            let error = match attempt {
                Attempt::Ended(turn) => {
                    self.answering = i;
                    return turn;
                }
                Attempt::MovedOn(error) => error,
            };
            let Some(next) = next else {
                return Err(model_failed(error).into());
            };
            tracing::warn!(
                provider = choice.provider,
                model = choice.model,
                next_provider = next.provider,
                next_model = next.model,
                error = %error,
                "the model failed before any output; the step goes on with the next"
            );
            self.emitter
                .emit(RunEvent::ModelFallback {
                    failed: choice.clone(),
                    error: error.to_string(),
                    next: next.clone(),
                })
                .await?;
        }
        Err(Stop::Failed(RunsError::Internal(anyhow::anyhow!(
            "an agent with no model"
        ))))
    }

    /// Asks `choice` (through `provider`) for the turn: its text is sent as
    /// it arrives, tool calls and usage are collected. With `may_move_on`,
    /// a failure before any output that another model may not share
    /// ([`moves_on`]) is given back instead of failing the run.
    pub(super) async fn model_turn(
        &mut self,
        toolset: &Toolset,
        choice: &ModelChoice,
        provider: &dyn ModelProvider,
        may_move_on: bool,
    ) -> Attempt {
        // The history grows with every step; only its newest part is sent,
        // and kept.
        if let Err(error) = keep_window(&mut self.history, self.steps.settings.history) {
            return Attempt::Ended(Err(error.into()));
        }
        let request = ChatRequest {
            model: choice.model.clone(),
            system: self.system.clone(),
            messages: to_chat(&self.history),
            tools: toolset.for_model(),
            max_tokens: self.steps.settings.max_output_tokens,
        };
        if switchboard_telemetry::capture_content() {
            let input = super::telemetry::input_messages(&request.messages);
            tracing::Span::current().record("gen_ai.input.messages", input.as_str());
        }
        let mut answer = match provider.stream(request).await {
            Ok(answer) => answer,
            Err(error) if may_move_on && moves_on(&error) => return Attempt::MovedOn(error),
            Err(error) => return Attempt::Ended(Err(model_failed(error).into())),
        };
        let first = match answer.next().await {
            Some(Err(error)) if may_move_on && moves_on(&error) => {
                return Attempt::MovedOn(error);
            }
            first => first,
        };
        let answer: ModelStream = stream::iter(first).chain(answer).boxed();
        Attempt::Ended(self.read_turn(answer, choice).await)
    }

    /// Reads `choice`'s answer to its end.
    async fn read_turn(
        &mut self,
        mut answer: ModelStream,
        choice: &ModelChoice,
    ) -> Result<Turn, Stop> {
        let mut turn = Turn {
            text: String::new(),
            calls: Vec::new(),
        };
        while let Some(event) = answer.next().await {
            match event.map_err(model_failed)? {
                ModelEvent::TextDelta(delta) => {
                    turn.text.push_str(&delta);
                    self.emitter.emit(RunEvent::TextDelta(delta)).await?;
                }
                ModelEvent::ToolCall(call) => turn.calls.push(call),
                ModelEvent::Usage(usage) => {
                    let call = Usage {
                        input_tokens: i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
                        output_tokens: i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
                    };
                    self.run.usage.input_tokens += call.input_tokens;
                    self.run.usage.output_tokens += call.output_tokens;
                    let total = self.run.usage;
                    self.emitter
                        .emit(RunEvent::Usage {
                            call,
                            total,
                            model: choice.clone(),
                        })
                        .await?;
                }
                ModelEvent::Finished { .. } => {}
            }
        }
        Ok(turn)
    }
}
