//! A server's `request_state` and `task_id` leave mcp-service sealed to the
//! call that received them.
//!
//! Both are the server's handles on a paused request: whoever sends one back
//! resumes that request, with the integration's credentials and in the
//! receiver's upstream session. Handed out raw, a value another user read (a
//! shared log, a leaked thread) or guessed would resume their request. So the
//! value travels inside an envelope sealed (AES-256-GCM, the integration
//! sealing keys) with the organization, user, integration, session scope,
//! operation and field bound as associated data, and an expiry inside. A
//! resume by anyone else, for another call, after the expiry or with a
//! changed envelope does not open, is refused with INVALID_ARGUMENT, and never
//! reaches the server. The wire contract stays a string: callers already
//! treat it as opaque and send it back unchanged.

use std::{sync::Arc, time::Duration};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use switchboard_auth::Principal;
use switchboard_proto::mcp::v1 as pb;
use tonic::Status;

use super::error::status;
use crate::{
    domain::{error::McpError, integration::IntegrationId},
    sealing::{KeyRing, Sealed},
};

/// Marks a sealed value, and the format's version.
const PREFIX: &str = "sbr1.";
/// Separates the binding's parts from the associated data of stored
/// secrets, which never start so.
const DOMAIN: &[u8] = b"switchboard.resume.v1";

/// Seals and opens resume handles.
#[derive(Clone)]
pub(crate) struct ResumeSeal {
    keys: Arc<KeyRing>,
    ttl: Duration,
}

impl std::fmt::Debug for ResumeSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeSeal")
            .field("ttl", &self.ttl)
            .finish()
    }
}

/// The call a handle belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding<'a> {
    pub caller: &'a Principal,
    pub integration: IntegrationId,
    pub scope: &'a str,
    pub operation: Operation<'a>,
}

/// What the paused request was.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Operation<'a> {
    Tool(&'a str),
    Resource(&'a str),
    Prompt(&'a str),
}

/// Which handle: one cannot stand in for the other.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field {
    RequestState,
    TaskId,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Self::RequestState => "request_state",
            Self::TaskId => "task_id",
        }
    }
}

impl ResumeSeal {
    /// Handles sealed with `keys`, valid for `ttl` after they are handed out.
    pub(crate) fn new(keys: Arc<KeyRing>, ttl: Duration) -> Self {
        Self { keys, ttl }
    }

    /// Seals the handles of a server's `InputRequiredResult`, if any.
    pub(crate) fn seal_input_required(
        &self,
        input: Option<&mut pb::InputRequired>,
        binding: &Binding<'_>,
    ) -> Result<(), Status> {
        let Some(input) = input else {
            return Ok(());
        };
        if let Some(state) = input.request_state.take() {
            input.request_state = Some(self.seal(Field::RequestState, &state, binding)?);
        }
        if let Some(task) = input.task_id.take() {
            input.task_id = Some(self.seal(Field::TaskId, &task, binding)?);
        }
        Ok(())
    }

    /// The server's value inside `sealed`, when it was handed out for this
    /// very call and has not expired.
    pub(crate) fn open(
        &self,
        field: Field,
        sealed: Option<&String>,
        binding: &Binding<'_>,
    ) -> Result<Option<String>, Status> {
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let refused = || {
            status(McpError::invalid(
                field.name(),
                "was not handed out for this call by this service (another user, integration, \
                 session scope or operation), or has expired: send back the value of the \
                 latest input_required unchanged",
            ))
        };
        let (key_id, bytes) = sealed
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.rsplit_once('.'))
            .ok_or_else(refused)?;
        let bytes = URL_SAFE_NO_PAD.decode(bytes).map_err(|_| refused())?;
        let sealed = Sealed {
            key_id: key_id.to_owned(),
            bytes,
        };
        let plain = self
            .keys
            .open(&sealed, &associated_data(field, binding))
            .map_err(|_| refused())?;
        let (expiry, value) = plain.split_first_chunk::<8>().ok_or_else(refused)?;
        if now_millis() >= u64::from_be_bytes(*expiry) {
            return Err(refused());
        }
        String::from_utf8(value.to_vec())
            .map(Some)
            .map_err(|_| refused())
    }

    /// Opens, in place, the handles an ExecuteTool resume carries. The task
    /// id is opened first: a request carrying both is refused naming it.
    pub(crate) fn open_tool_request(
        &self,
        caller: &Principal,
        integration: IntegrationId,
        request: &mut pb::ExecuteToolRequest,
    ) -> Result<(), Status> {
        if request.request_state.is_none() && request.task_id.is_none() {
            return Ok(());
        }
        let scope = request.session_scope.clone();
        let tool = request.tool_name.clone();
        let binding = Binding {
            caller,
            integration,
            scope: &scope,
            operation: Operation::Tool(&tool),
        };
        request.task_id = self.open(Field::TaskId, request.task_id.as_ref(), &binding)?;
        request.request_state = self.open(
            Field::RequestState,
            request.request_state.as_ref(),
            &binding,
        )?;
        Ok(())
    }

    fn seal(&self, field: Field, value: &str, binding: &Binding<'_>) -> Result<String, Status> {
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let expiry = now_millis().saturating_add(ttl);
        let mut plain = Vec::with_capacity(8 + value.len());
        plain.extend_from_slice(&expiry.to_be_bytes());
        plain.extend_from_slice(value.as_bytes());
        let sealed = self
            .keys
            .seal(&plain, &associated_data(field, binding))
            .map_err(|error| {
                status(McpError::Internal(anyhow::anyhow!(
                    "failed to seal a resume handle: {error}"
                )))
            })?;
        Ok(format!(
            "{PREFIX}{}.{}",
            sealed.key_id,
            URL_SAFE_NO_PAD.encode(&sealed.bytes)
        ))
    }
}

/// Every part of the binding, each with its length, so that no two
/// bindings write the same bytes.
fn associated_data(field: Field, binding: &Binding<'_>) -> Vec<u8> {
    let (kind, name) = match binding.operation {
        Operation::Tool(name) => ("tools/call", name),
        Operation::Resource(uri) => ("resources/read", uri),
        Operation::Prompt(name) => ("prompts/get", name),
    };
    let integration = binding.integration.to_string();
    let parts: [&[u8]; 8] = [
        DOMAIN,
        field.name().as_bytes(),
        binding.caller.org_id.as_bytes(),
        binding.caller.user_id.as_bytes(),
        integration.as_bytes(),
        binding.scope.as_bytes(),
        kind.as_bytes(),
        name.as_bytes(),
    ];
    let mut data = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for part in parts {
        let length = u64::try_from(part.len()).unwrap_or(u64::MAX);
        data.extend_from_slice(&length.to_be_bytes());
        data.extend_from_slice(part);
    }
    data
}

fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn seal(ttl: Duration) -> ResumeSeal {
        ResumeSeal::new(Arc::new(KeyRing::development()), ttl)
    }

    fn principal(user: &str) -> Principal {
        Principal::new("org-a", user, vec![])
    }

    #[test]
    fn a_handle_opens_only_for_the_call_it_was_handed_out_for() {
        let seal = seal(Duration::from_secs(60));
        let alice = principal("alice");
        let bob = principal("bob");
        let integration = IntegrationId::new();
        let binding = Binding {
            caller: &alice,
            integration,
            scope: "thread-1",
            operation: Operation::Tool("deploy"),
        };
        let mut input = pb::InputRequired {
            request_state: Some("confirm:deploy".into()),
            task_id: Some("task-7".into()),
            ..Default::default()
        };
        seal.seal_input_required(Some(&mut input), &binding)
            .expect("sealed");
        let state = input.request_state.expect("a state");
        assert!(!state.contains("confirm:deploy"), "{state}");
        assert_eq!(
            seal.open(Field::RequestState, Some(&state), &binding)
                .expect("opens"),
            Some("confirm:deploy".into())
        );
        let others = [
            Binding {
                caller: &bob,
                ..binding
            },
            Binding {
                integration: IntegrationId::new(),
                ..binding
            },
            Binding {
                scope: "thread-2",
                ..binding
            },
            Binding {
                operation: Operation::Tool("delete"),
                ..binding
            },
            Binding {
                operation: Operation::Prompt("deploy"),
                ..binding
            },
        ];
        for other in others {
            let refused = seal
                .open(Field::RequestState, Some(&state), &other)
                .expect_err("another call");
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        }
        let task = input.task_id.expect("a task");
        assert!(
            seal.open(Field::RequestState, Some(&task), &binding)
                .is_err()
        );
        assert!(seal.open(Field::TaskId, Some(&task), &binding).is_ok());
        let mut changed = state.clone();
        changed.pop();
        changed.push(if state.ends_with('A') { 'B' } else { 'A' });
        assert!(
            seal.open(Field::RequestState, Some(&changed), &binding)
                .is_err()
        );
        for raw in ["confirm:deploy", "", "sbr1.", "sbr1.dev.!!"] {
            assert!(
                seal.open(Field::RequestState, Some(&raw.to_owned()), &binding)
                    .is_err(),
                "{raw}"
            );
        }
    }

    #[test]
    fn a_handle_past_its_lifetime_is_refused() {
        let seal = seal(Duration::ZERO);
        let alice = principal("alice");
        let binding = Binding {
            caller: &alice,
            integration: IntegrationId::new(),
            scope: "",
            operation: Operation::Resource("data://x"),
        };
        let mut input = pb::InputRequired {
            request_state: Some("s".into()),
            ..Default::default()
        };
        seal.seal_input_required(Some(&mut input), &binding)
            .expect("sealed");
        assert!(
            seal.open(Field::RequestState, input.request_state.as_ref(), &binding)
                .is_err()
        );
    }
}
