//! mcp-service on a fresh database, and the gRPC calls an application makes.

use anyhow::Context as _;
use serde_json::Value;
use switchboard_mcp_service::{Config, ElicitationPolicy};
use switchboard_proto::{
    json::{json_to_struct, struct_to_json},
    mcp::v1::{self as pb, mcp_service_client::McpServiceClient},
};
use switchboard_server::RunningServer;
use switchboard_test_support::{TEST_JWT_SECRET, TestDb, authed, token};
use tonic::transport::Channel;

/// The organization and user the client acts as.
const ORG: &str = "conformance";
const USER: &str = "conformance-user";

/// A running mcp-service and a client of it.
#[derive(Debug)]
pub struct Switchboard {
    _db: TestDb,
    _server: RunningServer,
    client: McpServiceClient<Channel>,
    token: String,
    id_token: Option<String>,
}

impl Switchboard {
    /// Starts mcp-service on a fresh SQLite database, reaching servers on
    /// this machine (where the suite runs its scenario servers).
    /// `elicitation` is the operator's elicitation policy;
    /// `workload_token_file` the service's workload identity token.
    pub async fn start(
        elicitation: ElicitationPolicy,
        workload_token_file: Option<std::path::PathBuf>,
    ) -> anyhow::Result<Self> {
        let db = TestDb::sqlite()?;
        let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
        config.outbound_allow = "127.0.0.0/8,::1/128".into();
        config.elicitation = elicitation;
        config.workload_identity_token_file = workload_token_file;
        // The suite starts every scenario at once, each a process running
        // its own mcp-service, so a loaded machine answers slowly: the
        // limits are those of a deployment, kept under the suite's 30 s per
        // scenario, not the tight ones of the tests.
        config.connect_timeout = std::time::Duration::from_secs(20);
        config.call_timeout = std::time::Duration::from_secs(25);
        let server = switchboard_mcp_service::spawn(config)
            .await
            .context("mcp-service did not start")?;
        let client = McpServiceClient::connect(server.url())
            .await
            .context("failed to connect to mcp-service")?;
        Ok(Self {
            _db: db,
            _server: server,
            client,
            token: token(ORG, USER, &["admin"]),
            id_token: None,
        })
    }

    /// Acts as the user `id_token` names, presenting it beside the
    /// Switchboard token of every call (`x-switchboard-subject-token`), as
    /// an application whose user signed in with the identity provider does.
    pub fn sign_in(&mut self, id_token: String) -> anyhow::Result<()> {
        let claims = id_token
            .split('.')
            .nth(1)
            .context("the ID token is not a JWT")?;
        let claims: Value = serde_json::from_slice(
            &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims)
                .context("the ID token's claims are not base64url")?,
        )
        .context("the ID token's claims are not JSON")?;
        let user = claims["sub"].as_str().context("the ID token has no sub")?;
        self.token = token(ORG, user, &["admin"]);
        self.id_token = Some(id_token);
        Ok(())
    }

    fn req<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = authed(message, &self.token);
        if let Some(value) = self.id_token.as_deref().and_then(|t| t.parse().ok()) {
            request
                .metadata_mut()
                .insert("x-switchboard-subject-token", value);
        }
        request
    }

    /// Creates a streamable HTTP integration for `url`; returns its id.
    pub async fn create_integration(
        &mut self,
        url: &str,
        auth: Option<pb::auth_config::Method>,
    ) -> anyhow::Result<String> {
        let request = switchboard_test_support::http_integration_with_auth("scenario", url, auth);
        let integration = self
            .client
            .create_integration(self.req(request))
            .await
            .context("CreateIntegration failed")?
            .into_inner()
            .integration
            .context("CreateIntegration returned no integration")?;
        Ok(integration.id)
    }

    /// Completes an authorization with what the authorization server sent
    /// to the redirect URI.
    pub async fn complete_authorization(
        &mut self,
        state: &str,
        code: &str,
        iss: &str,
    ) -> Result<(), tonic::Status> {
        let request = self.req(pb::CompleteAuthorizationRequest {
            state: state.to_owned(),
            code: code.to_owned(),
            iss: iss.to_owned(),
        });
        self.client
            .complete_authorization(request)
            .await
            .map(|_| ())
    }

    /// Discover, bypassing the cache.
    pub async fn discover(&mut self, id: &str) -> Result<pb::DiscoverResponse, tonic::Status> {
        let request = self.req(pb::DiscoverRequest {
            integration_id: id.to_owned(),
            bypass_cache: true,
            allowed_tools: None,
        });
        Ok(self.client.discover(request).await?.into_inner())
    }

    /// ExecuteTool with JSON `arguments`.
    pub async fn execute_tool(
        &mut self,
        id: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<pb::ExecuteToolResponse, tonic::Status> {
        let request = self.req(pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: json_to_struct(arguments),
            ..Default::default()
        });
        Ok(self.client.execute_tool(request).await?.into_inner())
    }

    /// ExecuteTool resumed with the caller's `answers` (JSON text by key)
    /// and the server's `request_state`.
    pub async fn resume_tool(
        &mut self,
        id: &str,
        tool: &str,
        arguments: &Value,
        answers: std::collections::HashMap<String, String>,
        request_state: Option<String>,
    ) -> Result<pb::ExecuteToolResponse, tonic::Status> {
        let request = self.req(pb::ExecuteToolRequest {
            integration_id: id.to_owned(),
            tool_name: tool.to_owned(),
            arguments: json_to_struct(arguments),
            input_responses: answers,
            request_state,
            ..Default::default()
        });
        Ok(self.client.execute_tool(request).await?.into_inner())
    }

    /// RetrieveResource of `uri`.
    pub async fn retrieve_resource(&mut self, id: &str, uri: &str) -> Result<(), tonic::Status> {
        let request = self.req(pb::RetrieveResourceRequest {
            integration_id: id.to_owned(),
            uri: uri.to_owned(),
            ..Default::default()
        });
        self.client.retrieve_resource(request).await.map(|_| ())
    }

    /// GetPrompt of `name` without arguments.
    pub async fn get_prompt(&mut self, id: &str, name: &str) -> Result<(), tonic::Status> {
        let request = self.req(pb::GetPromptRequest {
            integration_id: id.to_owned(),
            name: name.to_owned(),
            ..Default::default()
        });
        self.client.get_prompt(request).await.map(|_| ())
    }
}

/// A tool's input schema as JSON.
pub fn input_schema(tool: &pb::Tool) -> Value {
    tool.input_schema
        .as_ref()
        .map_or(Value::Null, struct_to_json)
}

/// The URL a FAILED_PRECONDITION asks the user to authorize at.
pub fn authorization_url(status: &tonic::Status) -> Option<String> {
    use tonic_types::StatusExt as _;
    if status.code() != tonic::Code::FailedPrecondition {
        return None;
    }
    status
        .get_error_details()
        .error_info()?
        .metadata
        .get("authorization_url")
        .cloned()
}
