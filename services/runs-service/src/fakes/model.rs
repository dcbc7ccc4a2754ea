//! [`ModelProvider`] in memory: a script of turns, one per model call, and a
//! record of the requests.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::{StreamExt as _, stream};

use crate::domain::{
    model::{ChatRequest, FinishReason, ModelError, ModelEvent, TokenUsage, ToolCall},
    ports::{ModelProvider, ModelProviders, ModelStream},
};

/// One model turn.
#[derive(Debug, Clone)]
pub enum ScriptedTurn {
    /// Says this text.
    Say(String),
    /// Calls these tools: (name, arguments JSON).
    Call(Vec<(String, String)>),
    /// Never finishes (the run waits until it is cancelled).
    Hang,
}

/// A model that plays its script; past its end it says "done".
#[derive(Debug, Default)]
pub struct FakeModel {
    script: Mutex<Vec<ScriptedTurn>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl FakeModel {
    fn next(&self) -> ScriptedTurn {
        let mut script = self
            .script
            .lock()
            .expect("a test never panics holding the lock");
        if script.is_empty() {
            ScriptedTurn::Say("done".into())
        } else {
            script.remove(0)
        }
    }
}

fn turn_events(turn: ScriptedTurn, step: usize) -> Vec<Result<ModelEvent, ModelError>> {
    let usage = ModelEvent::Usage(TokenUsage {
        input_tokens: 10,
        output_tokens: 1,
    });
    match turn {
        ScriptedTurn::Say(text) => vec![
            Ok(ModelEvent::TextDelta(text)),
            Ok(usage),
            Ok(ModelEvent::Finished {
                reason: FinishReason::Stop,
            }),
        ],
        ScriptedTurn::Call(calls) => calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                Ok(ModelEvent::ToolCall(ToolCall {
                    id: format!("call-{step}-{i}"),
                    name,
                    arguments,
                }))
            })
            .chain([
                Ok(usage),
                Ok(ModelEvent::Finished {
                    reason: FinishReason::ToolCalls,
                }),
            ])
            .collect(),
        ScriptedTurn::Hang => Vec::new(),
    }
}

#[async_trait]
impl ModelProvider for FakeModel {
    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ModelError> {
        let step = {
            let mut requests = self
                .requests
                .lock()
                .expect("a test never panics holding the lock");
            requests.push(request);
            requests.len()
        };
        let turn = self.next();
        let hang = matches!(turn, ScriptedTurn::Hang);
        let events = stream::iter(turn_events(turn, step));
        Ok(if hang {
            events.chain(stream::pending()).boxed()
        } else {
            events.boxed()
        })
    }
}

/// One provider, `fake`, playing a script.
#[derive(Debug, Clone, Default)]
pub struct FakeModels(pub Arc<FakeModel>);

impl FakeModels {
    /// A model playing `script`.
    pub fn new(script: Vec<ScriptedTurn>) -> Self {
        Self(Arc::new(FakeModel {
            script: Mutex::new(script),
            requests: Mutex::default(),
        }))
    }

    /// The requests the model got, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.0
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

impl ModelProviders for FakeModels {
    fn provider(&self, name: &str) -> Option<Arc<dyn ModelProvider>> {
        (name == "fake").then(|| Arc::clone(&self.0) as Arc<dyn ModelProvider>)
    }
}
