//! Multi-round-trip requests (SEP-2322): a server of 2026-07-28 may answer
//! `tools/call`, `prompts/get` or `resources/read` with an `input_required`
//! result, asking for input (an elicitation, a sampling, the roots) and
//! giving an opaque `requestState`; the client makes the request again with
//! the answers and that state, unchanged, as a new JSON-RPC request.
//!
//! The MCP client connected to the endpoint whose call it is answers the
//! elicitations when there is one; otherwise mcp-service answers what its
//! operator's elicitation policy lets it answer. Either way mcp-service
//! makes the request again itself. When any request is not its to
//! answer (the policy passes elicitations to the caller, or the server asks
//! for a sampling or the roots, which only the caller can give), the whole
//! `input_required` result goes back to the caller, who resumes with a later
//! call carrying the answers ([`InputAnswers`]).

use std::{future::Future, time::Duration};

use rmcp::{
    RoleClient, ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
        DEFAULT_MRTR_MAX_ROUNDS, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
        InputRequest, InputRequiredResult, InputResponses, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult, ServerResult, Task,
    },
    service::Peer,
};
use serde_json::{Map, Value};

use crate::domain::ports::{InputAnswers, ToolCall};
use crate::{
    domain::elicitation::ElicitationPolicy,
    outbound::{
        mcp::{
            elicitation::{self, Answerer},
            progress::ProgressRoutes,
        },
        telemetry::with_trace,
    },
};

/// One answer of the server to a request that may take several rounds.
#[derive(Debug)]
pub enum Round<T> {
    /// The request is complete.
    Complete(T),
    /// The server asks for input that only the caller can give.
    InputRequired(InputRequiredResult),
}

/// Makes a request with `send` until it completes or needs the caller:
/// the first round carries the caller's `answers` (empty for a new
/// request), each later one the answers of the endpoint's client (when
/// one is connected and takes them) or the policy's, and the server's
/// state.
///
/// Rounds are bounded by the SDK's cap ([`DEFAULT_MRTR_MAX_ROUNDS`]) and,
/// by the caller, by the call's time limit.
pub async fn drive<T, F, Fut>(
    answerer: &Answerer,
    answers: InputAnswers,
    send: F,
) -> Result<Round<T>, ServiceError>
where
    F: Fn(Option<InputResponses>, Option<String>) -> Fut,
    Fut: Future<Output = Result<Round<T>, ServiceError>>,
{
    let mut responses = (!answers.responses.is_empty()).then_some(answers.responses);
    let mut state = answers.request_state;
    let mut state_only_rounds = 0u32;
    for _ in 0..DEFAULT_MRTR_MAX_ROUNDS {
        let result = match send(responses.take(), state.take()).await? {
            Round::Complete(value) => return Ok(Round::Complete(value)),
            Round::InputRequired(result) => result,
        };
        let requests = result.input_requests.as_ref();
        let answered = if answerer.has_client() {
            answerer.answer_all(requests).await
        } else {
            answer_by_policy(answerer.policy(), requests)
        };
        let Some(answered) = answered else {
            return Ok(Round::InputRequired(result));
        };
        if answered.is_empty() {
            // State alone (a server shedding load, say): asked again after
            // a pause that grows with each such round.
            let pause = 50u64 << state_only_rounds.min(2);
            tokio::time::sleep(Duration::from_millis(pause)).await;
            state_only_rounds += 1;
        } else {
            state_only_rounds = 0;
        }
        responses = (!answered.is_empty()).then_some(answered);
        state = result.request_state;
    }
    Err(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: DEFAULT_MRTR_MAX_ROUNDS,
    })
}

/// What a server answers a `tools/call` with, in the end.
#[derive(Debug)]
pub enum ToolAnswer {
    /// The tool's result.
    Result(CallToolResult),
    /// A task that runs the tool (see [`super::tasks`]).
    Task(Task),
}

/// A `tools/call`, resumed with the caller's answers when it has any. A
/// task the server answers with ends the rounds: it is followed apart.
/// The progress of each round goes to the call's sink, when its caller
/// asked for progress, through the session's `routes`.
pub async fn call_tool(
    peer: &Peer<RoleClient>,
    answerer: &Answerer,
    routes: &ProgressRoutes,
    call: ToolCall,
) -> Result<Round<ToolAnswer>, ServiceError> {
    let params = with_trace(
        CallToolRequestParams::new(call.name.into_string()).with_arguments(call.arguments),
    );
    let sink = call.progress.as_ref();
    drive(answerer, call.answers, |responses, state| {
        let mut params = params.clone();
        params.input_responses = responses;
        params.request_state = state;
        async move {
            let response = match sink {
                Some(sink) => {
                    tool_response(routes.send(peer, tool_request(params), Some(sink)).await?)?
                }
                None => peer.call_tool_once(params).await?,
            };
            match response {
                CallToolResponse::Complete(result) => {
                    Ok(Round::Complete(ToolAnswer::Result(result)))
                }
                CallToolResponse::InputRequired(result) => Ok(Round::InputRequired(result)),
                CallToolResponse::Task(created) => {
                    Ok(Round::Complete(ToolAnswer::Task(created.task)))
                }
                _ => Err(ServiceError::UnexpectedResponse),
            }
        }
    })
    .await
}

fn tool_request(params: CallToolRequestParams) -> ClientRequest {
    ClientRequest::CallToolRequest(CallToolRequest::new(params))
}

/// A server's answer to a `tools/call`, as the SDK's `call_tool_once`
/// reads it.
fn tool_response(result: ServerResult) -> Result<CallToolResponse, ServiceError> {
    match result {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A `resources/read` of `uri`, resumed with the caller's answers when it
/// has any.
pub async fn read_resource(
    peer: &Peer<RoleClient>,
    answerer: &Answerer,
    uri: &str,
    answers: InputAnswers,
) -> Result<Round<ReadResourceResult>, ServiceError> {
    drive(answerer, answers, |responses, state| {
        let mut params = with_trace(ReadResourceRequestParams::new(uri.to_owned()));
        params.input_responses = responses;
        params.request_state = state;
        async move {
            match peer.read_resource_once(params).await? {
                ReadResourceResponse::Complete(result) => Ok(Round::Complete(result)),
                ReadResourceResponse::InputRequired(result) => Ok(Round::InputRequired(result)),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        }
    })
    .await
}

/// A `prompts/get` of a prompt (its name and arguments), resumed with the
/// caller's answers when it has any.
pub async fn get_prompt(
    peer: &Peer<RoleClient>,
    answerer: &Answerer,
    (name, arguments): (&str, &Map<String, Value>),
    answers: InputAnswers,
) -> Result<Round<GetPromptResult>, ServiceError> {
    drive(answerer, answers, |responses, state| {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        params.arguments = Some(arguments.clone());
        let mut params = with_trace(params);
        params.input_responses = responses;
        params.request_state = state;
        async move {
            match peer.get_prompt_once(params).await? {
                GetPromptResponse::Complete(result) => Ok(Round::Complete(result)),
                GetPromptResponse::InputRequired(result) => Ok(Round::InputRequired(result)),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        }
    })
    .await
}

/// The policy's answers to every request, or `None` when one of them is
/// the caller's to answer.
pub(super) fn answer_by_policy(
    policy: ElicitationPolicy,
    requests: Option<&rmcp::model::InputRequests>,
) -> Option<InputResponses> {
    let mut answers = InputResponses::new();
    for (key, request) in requests.into_iter().flatten() {
        let InputRequest::Elicitation(elicitation) = request else {
            return None;
        };
        if !policy.answers_itself() {
            return None;
        }
        let answer = elicitation::answer(policy, &elicitation.params);
        tracing::debug!(key, action = ?answer.action, "input request answered by policy");
        answers.insert(key.clone(), serde_json::to_value(answer).ok()?);
    }
    Some(answers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    fn input_required(requests: Value, state: Option<&str>) -> InputRequiredResult {
        let mut result = json!({"resultType": "input_required", "inputRequests": requests});
        if let Some(state) = state {
            result["requestState"] = json!(state);
        }
        serde_json::from_value(result).expect("an input_required result")
    }

    fn elicitation() -> Value {
        json!({"ask": {"method": "elicitation/create", "params": {
            "message": "sure?",
            "requestedSchema": {"type": "object", "properties": {
                "ok": {"type": "boolean", "default": true}
            }}
        }}})
    }

    type Sent = Mutex<Vec<(Option<InputResponses>, Option<String>)>>;

    /// Answers `rounds` in turn, recording what each request carried.
    async fn run(
        policy: ElicitationPolicy,
        answers: InputAnswers,
        rounds: Vec<Round<&'static str>>,
    ) -> (Result<Round<&'static str>, ServiceError>, Sent) {
        let sent = Sent::default();
        let rounds = Mutex::new(rounds.into_iter());
        let outcome = drive(&Answerer::by_policy(policy), answers, |responses, state| {
            sent.lock().unwrap().push((responses, state));
            let next = rounds.lock().unwrap().next().expect("another round");
            async move { Ok(next) }
        })
        .await;
        (outcome, sent)
    }

    #[tokio::test]
    async fn the_policy_answers_an_elicitation_and_the_state_is_echoed() {
        let (outcome, sent) = run(
            ElicitationPolicy::Defaults,
            InputAnswers::default(),
            vec![
                Round::InputRequired(input_required(elicitation(), Some("s-1"))),
                Round::Complete("done"),
            ],
        )
        .await;
        assert!(matches!(outcome, Ok(Round::Complete("done"))));
        let sent = sent.into_inner().unwrap();
        assert_eq!(sent[0], (None, None), "a new request carries nothing");
        let (responses, state) = &sent[1];
        assert_eq!(state.as_deref(), Some("s-1"));
        assert_eq!(
            serde_json::to_value(responses).unwrap(),
            json!({"ask": {"action": "accept", "content": {"ok": true}}})
        );
    }

    #[tokio::test]
    async fn the_caller_policy_and_a_sampling_go_back_to_the_caller() {
        let (outcome, _) = run(
            ElicitationPolicy::Caller,
            InputAnswers::default(),
            vec![Round::InputRequired(input_required(elicitation(), None))],
        )
        .await;
        assert!(matches!(outcome, Ok(Round::InputRequired(_))));

        let sampling = json!({"think": {"method": "sampling/createMessage", "params": {
            "messages": [], "maxTokens": 10
        }}});
        let (outcome, _) = run(
            ElicitationPolicy::Defaults,
            InputAnswers::default(),
            vec![Round::InputRequired(input_required(sampling, Some("s")))],
        )
        .await;
        let Ok(Round::InputRequired(result)) = outcome else {
            panic!("the sampling is the caller's to answer");
        };
        assert_eq!(result.request_state.as_deref(), Some("s"));
    }

    #[tokio::test]
    async fn the_callers_answers_go_in_the_first_round_and_rounds_are_bounded() {
        let answers = InputAnswers {
            responses: InputResponses::from([("ask".to_owned(), json!({"action": "decline"}))]),
            request_state: Some("from-caller".to_owned()),
        };
        let again = || Round::InputRequired(input_required(elicitation(), None));
        let (outcome, sent) = run(
            ElicitationPolicy::Decline,
            answers,
            (0..DEFAULT_MRTR_MAX_ROUNDS).map(|_| again()).collect(),
        )
        .await;
        assert!(matches!(
            outcome,
            Err(ServiceError::InputRequiredRoundsExceeded { .. })
        ));
        let sent = sent.into_inner().unwrap();
        assert_eq!(sent.len(), DEFAULT_MRTR_MAX_ROUNDS);
        assert_eq!(sent[0].1.as_deref(), Some("from-caller"));
        assert!(
            sent[1].1.is_none(),
            "no state is sent when the server gave none"
        );
    }
}
