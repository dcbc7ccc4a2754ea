//! The requests a client session makes of its own upstream sessions
//! (`logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`),
//! passed on over them; what those sessions tell comes back through
//! [`super::passthrough`].

use futures::future::join_all;
use rmcp::{ErrorData, RoleServer, service::RequestContext};
use tracing::Instrument as _;

use super::{
    admission::{Admission, Method},
    caller::{Caller, caller_of},
    errors::{error_data, unknown},
};
use crate::domain::{audit::calls::AuditedCalls, ports::SessionRequest, surface::Member};

/// What passes a client session's requests on: the calls, under the
/// limits.
pub(super) struct SessionRequests<'a> {
    /// The calls.
    pub calls: &'a AuditedCalls,
    /// The limits.
    pub admission: &'a Admission,
}

impl SessionRequests<'_> {
    /// Makes `request` of the caller's upstream sessions with `members`,
    /// as `method`. A member that fails is skipped when others answer; when
    /// none answers, the first failure is the answer. Only a client session
    /// has upstream sessions of its own to make it of.
    pub(super) async fn on_sessions(
        &self,
        context: &RequestContext<RoleServer>,
        method: Method,
        members: impl FnOnce(&Caller) -> Result<Vec<Member>, ErrorData>,
        request: SessionRequest,
    ) -> Result<(), ErrorData> {
        let caller = caller_of(context)?;
        let span = caller.span(method.name(), None);
        let answer = async {
            if !caller.in_session() {
                return Err(ErrorData::invalid_request(
                    format!("{} needs an MCP session (initialize)", method.name()),
                    None,
                ));
            }
            let members = members(&caller)?;
            let answers = join_all(members.iter().map(|member| {
                self.calls.session_request(
                    &caller.principal,
                    member.integration,
                    request.clone(),
                    &caller.session_scope,
                )
            }))
            .await;
            let mut first_error = None;
            let mut answered = false;
            for (member, answer) in members.iter().zip(answers) {
                match answer {
                    Ok(()) => answered = true,
                    Err(error) => {
                        tracing::debug!(integration_id = %member.integration, error = %error, "a member did not take the request");
                        first_error.get_or_insert(error);
                    }
                }
            }
            match first_error {
                Some(error) if !answered => Err(error_data(error)),
                _ => Ok(()),
            }
        };
        self.admission
            .serve(&caller, method, answer)
            .instrument(span)
            .await
    }
}

/// The member of the caller's surface serving the resource `uri`.
pub(super) fn resource_owner(caller: &Caller, uri: &str) -> Result<Vec<Member>, ErrorData> {
    caller
        .surface
        .resource_member(uri)
        .map(|member| vec![member.clone()])
        .ok_or_else(|| unknown("resource", uri))
}
