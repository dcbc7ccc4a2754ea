//! The requests a client session makes of its own upstream sessions
//! (`logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`,
//! `completion/complete`), passed on over them; what those sessions tell
//! comes back through [`super::passthrough`].

use futures::future::join_all;
use rmcp::{
    ErrorData, RoleServer,
    model::{CompleteRequestParams, CompleteResult, Reference},
    service::RequestContext,
};
use tracing::Instrument as _;

use super::{
    admission::{Admission, Method},
    caller::{Caller, caller_of},
    errors::{error_data, unknown},
};
use crate::domain::{
    audit::calls::AuditedCalls,
    bounds::{PromptName, ResourceUri},
    ports::{Completing, SessionRequest},
    surface::Member,
};

/// Which members a request goes to, each with the request in its own
/// names; or why it goes nowhere.
pub(super) type Routed = Result<Vec<(Member, SessionRequest)>, ErrorData>;

/// What passes a client session's requests on: the calls, under the
/// limits.
pub(super) struct SessionRequests<'a> {
    /// The calls.
    pub calls: &'a AuditedCalls,
    /// The limits.
    pub admission: &'a Admission,
}

impl SessionRequests<'_> {
    /// Makes the requests `route` gives of the caller's upstream sessions,
    /// as `method`, and returns the first answer. A member
    /// that fails is skipped when others answer; when none answers, the
    /// first failure is the answer. The logging level and subscriptions
    /// are a client session's (they hold for its upstream sessions, and
    /// what those tell goes to it); a completion is answered outside one
    /// too, on the caller's own upstream session.
    pub(super) async fn on_sessions(
        &self,
        context: &RequestContext<RoleServer>,
        method: Method,
        route: impl FnOnce(&Caller) -> Routed,
    ) -> Result<Option<CompleteResult>, ErrorData> {
        let caller = caller_of(context)?;
        let span = caller.span(method.name(), None);
        let answer = async {
            if !caller.in_session() && method != Method::Complete {
                return Err(ErrorData::invalid_request(
                    format!("{} needs an MCP session (initialize)", method.name()),
                    None,
                ));
            }
            let routed = route(&caller)?;
            let answers = join_all(routed.iter().map(|(member, request)| {
                self.calls.session_request(
                    &caller.principal,
                    member.integration,
                    request.clone(),
                    &caller.session_scope,
                )
            }))
            .await;
            let mut first_error = None;
            let mut first_answer = None;
            for ((member, _), answer) in routed.iter().zip(answers) {
                match answer {
                    Ok(answer) => {
                        first_answer.get_or_insert(answer);
                    }
                    Err(error) => {
                        tracing::debug!(integration_id = %member.integration, error = %error, "a member did not take the request");
                        first_error.get_or_insert(error);
                    }
                }
            }
            match (first_answer, first_error) {
                (Some(answer), _) => Ok(answer),
                (None, Some(error)) => Err(error_data(error)),
                (None, None) => Ok(None),
            }
        };
        self.admission
            .serve(&caller, method, answer)
            .instrument(span)
            .await
    }
}

/// `request` for every member of the caller's surface.
pub(super) fn every_member(caller: &Caller, request: &SessionRequest) -> Routed {
    Ok(caller
        .surface
        .members()
        .iter()
        .map(|member| (member.clone(), request.clone()))
        .collect())
}

/// `request` for the member of the caller's surface serving the resource
/// `uri`.
pub(super) fn resource_owner(caller: &Caller, uri: &str, request: SessionRequest) -> Routed {
    caller
        .surface
        .resource_member(uri)
        .map(|member| vec![(member.clone(), request)])
        .ok_or_else(|| unknown("resource", uri))
}

/// A completion for the member serving what it completes an argument of,
/// a prompt renamed to the member's own name.
pub(super) fn completion_owner(caller: &Caller, mut request: CompleteRequestParams) -> Routed {
    let (member, completing) = match &mut request.r#ref {
        Reference::Prompt(prompt) => {
            let name = PromptName::parse("ref.name", prompt.name.as_str())
                .map_err(|v| error_data(v.into()))?;
            let (member, own) = caller
                .surface
                .route(&name)
                .ok_or_else(|| unknown("prompt", &name))?;
            let (member, own) = (member.clone(), own.to_owned());
            prompt.name.clone_from(&own);
            let own = PromptName::parse("ref.name", own).map_err(|v| error_data(v.into()))?;
            (member, Completing::Prompt(own))
        }
        Reference::Resource(resource) => {
            let uri = ResourceUri::parse("ref.uri", resource.uri.as_str())
                .map_err(|v| error_data(v.into()))?;
            let member = caller
                .surface
                .resource_member(&uri)
                .ok_or_else(|| unknown("resource", &uri))?;
            (member.clone(), Completing::Resource(uri))
        }
        _ => {
            return Err(ErrorData::invalid_params(
                "a completion of something other than a prompt or a resource",
                None,
            ));
        }
    };
    Ok(vec![(
        member,
        SessionRequest::Complete(completing, request),
    )])
}
