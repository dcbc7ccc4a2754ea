//! The `switchboard.runs.v1.RunsService` handlers.

use std::time::Duration;

use switchboard_auth::{Principal, bearer_token};
use switchboard_proto::runs::v1::{self as pb, runs_service_server::RunsService as RunsRpc};
use switchboard_server::principal;
use switchboard_server::{FieldViolation, Idempotency, fingerprint, parse_request_id};
use tonic::{Request, Response, Status, codegen::BoxStream};

use super::{
    agent_settings::AgentSettings,
    convert::{
        decode_cursor, decode_seq, encode_cursor, page_size, proto_agent, proto_data_source,
        proto_message, proto_run, proto_thread,
    },
    error::status,
    execute::execute_run,
    id, manage,
};
use crate::domain::{
    error::RunsError,
    ids::{AgentId, RunId, ThreadId},
    ports::Caller,
    run::Orchestrator,
    service::{AgentInput, RunsService},
};

/// The runs-service API.
#[derive(Debug, Clone)]
pub(crate) struct RunsApi {
    service: RunsService,
    orchestrator: Orchestrator,
    idempotency: Idempotency,
    /// A quiet run stream gets a heartbeat event this often.
    stream_heartbeat: Duration,
}

impl RunsApi {
    pub(crate) fn new(
        service: RunsService,
        orchestrator: Orchestrator,
        idempotency: Idempotency,
        stream_heartbeat: Duration,
    ) -> Self {
        Self {
            service,
            orchestrator,
            idempotency,
            stream_heartbeat,
        }
    }
}

fn run_caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    Ok(Caller {
        principal: caller(request)?,
        token: bearer_token(request),
    })
}

/// A request's idempotency key, taken out of it, and the fingerprint of the
/// rest.
fn request_key<R: prost::Message>(
    caller: &Principal,
    request: &mut R,
    key: impl FnOnce(&mut R) -> &mut String,
) -> Result<(Option<String>, String), Status> {
    let request_id = std::mem::take(key(request));
    let request_id = parse_request_id(&request_id)
        .map_err(invalid)?
        .map(str::to_owned);
    Ok((request_id, fingerprint(&caller.user_id, request)))
}

type Reply<T> = Result<Response<T>, Status>;

fn caller<T>(request: &Request<T>) -> Result<Principal, Status> {
    principal(request).cloned()
}

fn invalid(violation: FieldViolation) -> Status {
    status(RunsError::from(violation))
}

#[tonic::async_trait]
impl RunsRpc for RunsApi {
    async fn create_agent(
        &self,
        request: Request<pb::CreateAgentRequest>,
    ) -> Reply<pb::CreateAgentResponse> {
        let caller = caller(&request)?;
        let mut request = request.into_inner();
        let (request_id, fingerprint) = request_key(&caller, &mut request, |r| &mut r.request_id)?;
        let agent = request
            .agent
            .ok_or_else(|| invalid(FieldViolation::new("agent", "is required")))?;
        let input = AgentInput {
            name: agent.name.clone(),
            config: AgentSettings::parse(&agent).all().map_err(status)?,
        };
        let create = || async {
            let agent = self.service.create_agent(&caller, input).await?;
            Ok(pb::CreateAgentResponse {
                agent: Some(proto_agent(&agent)),
            })
        };
        self.idempotency
            .once(
                &caller.org_id,
                "CreateAgent",
                request_id.as_deref(),
                &fingerprint,
                create,
            )
            .await
            .map(Response::new)
    }

    async fn get_agent(
        &self,
        request: Request<pb::GetAgentRequest>,
    ) -> Reply<pb::GetAgentResponse> {
        let caller = caller(&request)?;
        let agent_id: AgentId = id("id", &request.get_ref().id)?;
        let agent = self.service.get_agent(&caller, agent_id).await?;
        Ok(Response::new(pb::GetAgentResponse {
            agent: Some(proto_agent(&agent)),
        }))
    }

    async fn list_agents(
        &self,
        request: Request<pb::ListAgentsRequest>,
    ) -> Reply<pb::ListAgentsResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let limit = page_size("page_size", request.page_size).map_err(invalid)?;
        let after = decode_cursor("page_token", &request.page_token).map_err(invalid)?;
        let page = self.service.list_agents(&caller, after, limit).await?;
        Ok(Response::new(pb::ListAgentsResponse {
            agents: page.items.iter().map(proto_agent).collect(),
            next_page_token: encode_cursor(page.next),
        }))
    }

    async fn update_agent(
        &self,
        request: Request<pb::UpdateAgentRequest>,
    ) -> Reply<pb::UpdateAgentResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let patch = request
            .agent
            .ok_or_else(|| invalid(FieldViolation::new("agent", "is required")))?;
        let agent_id: AgentId = id("agent.id", &patch.id)?;
        let paths = request.update_mask.map(|m| m.paths).unwrap_or_default();
        if paths.is_empty() {
            return Err(invalid(FieldViolation::new(
                "update_mask",
                "name at least one field to change",
            )));
        }
        let agent = self
            .service
            .update_agent(&caller, agent_id, |current| {
                let mut name = current.name.clone();
                let mut config = current.config.clone();
                let new = AgentSettings::parse(&patch).masked(&paths)?;
                for path in &paths {
                    match path.as_str() {
                        "name" => name = patch.name.clone(),
                        "instructions" => config.instructions = new.instructions.clone(),
                        "model" => {
                            config.provider = new.provider.clone();
                            config.model = new.model.clone();
                        }
                        "mcp_integration_ids" => {
                            config.mcp_integration_ids = new.mcp_integration_ids.clone()
                        }
                        "tool_filters" => config.tool_filters = new.tool_filters.clone(),
                        "client_tools" => config.client_tools = new.client_tools.clone(),
                        "max_steps" => config.max_steps = new.max_steps,
                        "disable_resource_tools" => {
                            config.disable_resource_tools = new.disable_resource_tools
                        }
                        "tool_drift" => config.tool_drift = new.tool_drift,
                        "recovery" => config.recovery = new.recovery,
                        "idempotent_tools" => {
                            config.idempotent_tools = new.idempotent_tools.clone()
                        }
                        "fallback_models" => config.fallback_models = new.fallback_models.clone(),
                        "tool_overrides" => config.tool_overrides = new.tool_overrides.clone(),
                        "tool_search" => config.tool_search = new.tool_search,
                        other => {
                            return Err(RunsError::invalid(
                                "update_mask",
                                format!("`{other}` cannot be updated"),
                            ));
                        }
                    }
                }
                Ok(AgentInput { name, config })
            })
            .await?;
        Ok(Response::new(pb::UpdateAgentResponse {
            agent: Some(proto_agent(&agent)),
        }))
    }

    async fn delete_agent(
        &self,
        request: Request<pb::DeleteAgentRequest>,
    ) -> Reply<pb::DeleteAgentResponse> {
        let caller = caller(&request)?;
        let agent_id: AgentId = id("id", &request.get_ref().id)?;
        self.service.delete_agent(&caller, agent_id).await?;
        Ok(Response::new(pb::DeleteAgentResponse {}))
    }

    async fn create_thread(
        &self,
        request: Request<pb::CreateThreadRequest>,
    ) -> Reply<pb::CreateThreadResponse> {
        let caller = caller(&request)?;
        let mut request = request.into_inner();
        let (request_id, fingerprint) = request_key(&caller, &mut request, |r| &mut r.request_id)?;
        let agent_id: AgentId = id("agent_id", &request.agent_id)?;
        let create = || async {
            let thread = self
                .service
                .create_thread(&caller, agent_id, request.title)
                .await?;
            Ok(pb::CreateThreadResponse {
                thread: Some(proto_thread(&thread)),
            })
        };
        self.idempotency
            .once(
                &caller.org_id,
                "CreateThread",
                request_id.as_deref(),
                &fingerprint,
                create,
            )
            .await
            .map(Response::new)
    }

    async fn get_thread(
        &self,
        request: Request<pb::GetThreadRequest>,
    ) -> Reply<pb::GetThreadResponse> {
        let caller = caller(&request)?;
        let thread_id: ThreadId = id("id", &request.get_ref().id)?;
        let thread = self.service.get_thread(&caller, thread_id).await?;
        Ok(Response::new(pb::GetThreadResponse {
            thread: Some(proto_thread(&thread)),
        }))
    }

    async fn list_threads(
        &self,
        request: Request<pb::ListThreadsRequest>,
    ) -> Reply<pb::ListThreadsResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let limit = page_size("page_size", request.page_size).map_err(invalid)?;
        let before = decode_cursor("page_token", &request.page_token).map_err(invalid)?;
        let agent = if request.agent_id.is_empty() {
            None
        } else {
            Some(id::<AgentId>("agent_id", &request.agent_id)?)
        };
        let page = self
            .service
            .list_threads(&caller, agent, before, limit)
            .await?;
        Ok(Response::new(pb::ListThreadsResponse {
            threads: page.items.iter().map(proto_thread).collect(),
            next_page_token: encode_cursor(page.next),
        }))
    }

    async fn delete_thread(
        &self,
        request: Request<pb::DeleteThreadRequest>,
    ) -> Reply<pb::DeleteThreadResponse> {
        let caller = caller(&request)?;
        let thread_id: ThreadId = id("id", &request.get_ref().id)?;
        self.service.delete_thread(&caller, thread_id).await?;
        Ok(Response::new(pb::DeleteThreadResponse {}))
    }

    async fn list_messages(
        &self,
        request: Request<pb::ListMessagesRequest>,
    ) -> Reply<pb::ListMessagesResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let thread_id: ThreadId = id("thread_id", &request.thread_id)?;
        let limit = page_size("page_size", request.page_size).map_err(invalid)?;
        let after = decode_seq("page_token", &request.page_token).map_err(invalid)?;
        let (messages, next) = self
            .service
            .list_messages(&caller, thread_id, after, limit)
            .await?;
        Ok(Response::new(pb::ListMessagesResponse {
            messages: messages.iter().map(proto_message).collect(),
            next_page_token: next.map(|seq| seq.to_string()).unwrap_or_default(),
        }))
    }

    async fn list_data_sources(
        &self,
        request: Request<pb::ListDataSourcesRequest>,
    ) -> Reply<pb::ListDataSourcesResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let thread_id: ThreadId = id("thread_id", &request.thread_id)?;
        let limit = page_size("page_size", request.page_size).map_err(invalid)? as usize;
        let offset = decode_seq("page_token", &request.page_token).map_err(invalid)?;
        let offset = usize::try_from(offset).unwrap_or(0);
        let sources = self.service.list_data_sources(&caller, thread_id).await?;
        let next = offset + limit;
        Ok(Response::new(pb::ListDataSourcesResponse {
            data_sources: sources
                .iter()
                .skip(offset)
                .take(limit)
                .map(proto_data_source)
                .collect(),
            next_page_token: if next < sources.len() {
                next.to_string()
            } else {
                String::new()
            },
        }))
    }

    async fn import_data_source(
        &self,
        request: Request<pb::ImportDataSourceRequest>,
    ) -> Reply<pb::ImportDataSourceResponse> {
        let caller = caller(&request)?;
        let mut request = request.into_inner();
        let (request_id, fingerprint) = request_key(&caller, &mut request, |r| &mut r.request_id)?;
        let thread_id: ThreadId = id("thread_id", &request.thread_id)?;
        // Handed on without a copy; the fingerprint above covered it.
        let csv = bytes::Bytes::from(std::mem::take(&mut request.csv));
        let import = || async {
            let source = self
                .service
                .import_data_source(&caller, thread_id, &request.name, csv.clone())
                .await?;
            Ok(pb::ImportDataSourceResponse {
                data_source: Some(proto_data_source(&source)),
            })
        };
        self.idempotency
            .once(
                &caller.org_id,
                "ImportDataSource",
                request_id.as_deref(),
                &fingerprint,
                import,
            )
            .await
            .map(Response::new)
    }

    async fn get_run(&self, request: Request<pb::GetRunRequest>) -> Reply<pb::GetRunResponse> {
        let caller = caller(&request)?;
        let run_id: RunId = id("id", &request.get_ref().id)?;
        let run = self.service.get_run(&caller, run_id).await?;
        Ok(Response::new(pb::GetRunResponse {
            run: Some(proto_run(&run)),
        }))
    }

    async fn execute_run(
        &self,
        request: Request<pb::ExecuteRunRequest>,
    ) -> Reply<BoxStream<pb::ExecuteRunResponse>> {
        let caller = run_caller(&request)?;
        let stream = execute_run(
            &self.orchestrator,
            &self.service,
            &self.idempotency,
            caller,
            request.into_inner(),
            self.stream_heartbeat,
        )
        .await?;
        Ok(Response::new(stream))
    }

    async fn list_runs(
        &self,
        request: Request<pb::ListRunsRequest>,
    ) -> Reply<pb::ListRunsResponse> {
        let caller = run_caller(&request)?;
        manage::list_runs(&self.service, &caller, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn get_usage(
        &self,
        request: Request<pb::GetUsageRequest>,
    ) -> Reply<pb::GetUsageResponse> {
        let caller = run_caller(&request)?;
        manage::get_usage(&self.service, &caller, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn accept_tool_definition(
        &self,
        request: Request<pb::AcceptToolDefinitionRequest>,
    ) -> Reply<pb::AcceptToolDefinitionResponse> {
        let caller = run_caller(&request)?;
        manage::accept_tool_definition(&self.service, &caller, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn cancel_run(
        &self,
        request: Request<pb::CancelRunRequest>,
    ) -> Reply<pb::CancelRunResponse> {
        let caller = run_caller(&request)?;
        manage::cancel_run(
            &self.service,
            &self.orchestrator,
            &caller,
            request.into_inner(),
        )
        .await
        .map(Response::new)
    }

    async fn watch_run(
        &self,
        request: Request<pb::WatchRunRequest>,
    ) -> Reply<BoxStream<pb::WatchRunResponse>> {
        let caller = run_caller(&request)?;
        manage::watch_run(
            &self.service,
            &self.orchestrator,
            &caller,
            request.into_inner(),
            self.stream_heartbeat,
        )
        .await
        .map(Response::new)
    }
}
