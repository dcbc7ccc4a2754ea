//! The answer to a server's elicitation, in the protocol's terms: the MCP
//! client's whose call it is, when that client is connected to the
//! endpoint and answers, or else as the operator's [`ElicitationPolicy`]
//! decides it. A sampling or the roots only that client can give.

use std::sync::Arc;

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    InputResponses,
};
use serde_json::Value;

use crate::domain::{
    downstream::{ClientQuestions, QuestionKind},
    elicitation::ElicitationPolicy,
    integration::OrgId,
    ports::SessionScope,
};

/// Who answers the elicitations of one upstream session: the endpoint's
/// client whose call is on it, when one is, else the operator's policy.
#[derive(Debug, Clone)]
pub struct Answerer {
    policy: ElicitationPolicy,
    client: Option<(Arc<ClientQuestions>, OrgId, SessionScope)>,
}

impl Answerer {
    /// Answers by `policy` alone.
    pub fn by_policy(policy: ElicitationPolicy) -> Self {
        Self {
            policy,
            client: None,
        }
    }

    /// Asks the client registered in `questions` for `scope` of `org`
    /// first, when there is one; by `policy` otherwise.
    pub fn for_session(
        policy: ElicitationPolicy,
        questions: Arc<ClientQuestions>,
        org: OrgId,
        scope: SessionScope,
    ) -> Self {
        Self {
            policy,
            client: Some((questions, org, scope)),
        }
    }

    /// The operator's policy.
    pub fn policy(&self) -> ElicitationPolicy {
        self.policy
    }

    /// Whether a client answers now.
    pub fn has_client(&self) -> bool {
        self.client
            .as_ref()
            .is_some_and(|(questions, org, scope)| questions.has_client(org, scope))
    }

    /// The client's answer to a question of `kind` with `params`; `None`
    /// when there is no client, or it does not answer.
    pub async fn ask_client(&self, kind: QuestionKind, params: Value) -> Option<Value> {
        let (questions, org, scope) = self.client.as_ref()?;
        questions.ask(org, scope, kind, params).await
    }

    /// The answer to `request`: the client's, or the policy's when no
    /// client takes it or its answer is not an `ElicitResult`.
    pub async fn answer(&self, request: &ElicitRequestParams) -> ElicitResult {
        if let Ok(params) = serde_json::to_value(request)
            && let Some(reply) = self.ask_client(QuestionKind::Elicitation, params).await
        {
            match serde_json::from_value::<ElicitResult>(reply) {
                Ok(result) => {
                    tracing::debug!(action = ?result.action, "elicitation answered by the client");
                    return result;
                }
                Err(error) => {
                    tracing::debug!(error = %error, "the client's answer is no elicitation result");
                }
            }
        }
        answer(self.policy, request)
    }

    /// The answers to every input request of a round, each asked in turn:
    /// an elicitation of the client or else by the policy, a sampling or
    /// the roots of the client alone; `None` when the client does not
    /// answer one of those (only the caller can give it then).
    pub async fn answer_all(&self, requests: Option<&InputRequests>) -> Option<InputResponses> {
        let mut answers = InputResponses::new();
        for (key, request) in requests.into_iter().flatten() {
            let answer = match request {
                InputRequest::Elicitation(elicitation) => {
                    serde_json::to_value(self.answer(&elicitation.params).await).ok()?
                }
                InputRequest::CreateMessage(sampling) => {
                    let params = serde_json::to_value(&sampling.params).ok()?;
                    self.ask_client(QuestionKind::Sampling, params).await?
                }
                InputRequest::ListRoots(_) => {
                    self.ask_client(QuestionKind::Roots, Value::Null).await?
                }
                _ => return None,
            };
            answers.insert(key.clone(), answer);
        }
        Some(answers)
    }
}

/// The answer to `request` under `policy`: a form accepted with the content
/// the policy gives it, anything else declined.
pub fn answer(policy: ElicitationPolicy, request: &ElicitRequestParams) -> ElicitResult {
    let content = match request {
        ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } => serde_json::to_value(requested_schema)
            .ok()
            .and_then(|schema| policy.form_content(&schema)),
        _ => None,
    };
    match content {
        Some(content) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
        }
        None => ElicitResult::new(ElicitationAction::Decline),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "details, please",
            "requestedSchema": schema,
        }))
        .expect("a form elicitation")
    }

    #[test]
    fn defaults_fill_the_form_and_a_required_field_without_one_declines() {
        let with_defaults = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer", "default": 36},
                "ok": {"type": "boolean", "default": true},
                "note": {"type": "string"},
            },
            "required": ["name"],
        }));
        let reply = answer(ElicitationPolicy::Defaults, &with_defaults);
        assert_eq!(reply.action, ElicitationAction::Accept);
        assert_eq!(
            serde_json::to_value(reply.content).unwrap(),
            json!({"name": "Ada", "age": 36, "ok": true})
        );
        for policy in [ElicitationPolicy::Decline, ElicitationPolicy::Caller] {
            assert_eq!(
                answer(policy, &with_defaults).action,
                ElicitationAction::Decline
            );
        }

        let missing = form(json!({
            "type": "object",
            "properties": {"email": {"type": "string"}},
            "required": ["email"],
        }));
        let reply = answer(ElicitationPolicy::Defaults, &missing);
        assert_eq!(reply.action, ElicitationAction::Decline);
        assert!(reply.content.is_none());
    }
}
