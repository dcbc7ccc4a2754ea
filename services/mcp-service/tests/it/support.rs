//! Starting mcp-service for a test and talking to it.

use switchboard_mcp_service::Config;
use switchboard_proto::mcp::v1::{
    self as pb, auth_config::Method, mcp_service_client::McpServiceClient,
};
use switchboard_server::RunningServer;
use switchboard_test_support::{DbKind, TEST_JWT_SECRET, TestDb, authed, token};
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt as _;

/// A running mcp-service on a fresh database.
pub struct Harness {
    pub db: TestDb,
    #[allow(dead_code)]
    pub server: RunningServer,
    pub client: McpServiceClient<Channel>,
}

pub async fn start(kind: DbKind) -> Harness {
    start_with(kind, |_| {}).await
}

pub async fn start_with(kind: DbKind, configure: impl FnOnce(&mut Config)) -> Harness {
    let db = TestDb::new(kind).await.expect("a test database");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    configure(&mut config);
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    let client = McpServiceClient::connect(server.url())
        .await
        .expect("connects");
    Harness { db, server, client }
}

impl Harness {
    /// Another replica: mcp-service on this harness's database, configured
    /// by `configure` on top of the test defaults.
    pub async fn replica(
        &self,
        configure: impl FnOnce(&mut Config),
    ) -> (RunningServer, McpServiceClient<Channel>) {
        let mut config = Config::for_tests(&self.db.url, TEST_JWT_SECRET);
        configure(&mut config);
        let server = switchboard_mcp_service::spawn(config)
            .await
            .expect("the second replica starts");
        let client = McpServiceClient::connect(server.url())
            .await
            .expect("connects");
        (server, client)
    }
}

pub fn admin(org: &str) -> String {
    token(org, "admin-user", &["admin"])
}

pub fn member(org: &str) -> String {
    token(org, "member-user", &["member"])
}

pub fn req<T>(message: T, token: &str) -> tonic::Request<T> {
    authed(message, token)
}

/// ValidateIntegration of `id` as the holder of `token`.
pub async fn validate(h: &mut Harness, token: &str, id: &str) -> pb::ValidateIntegrationResponse {
    h.client
        .validate_integration(req(pb::ValidateIntegrationRequest { id: id.into() }, token))
        .await
        .expect("validation answers")
        .into_inner()
}

/// A custom streamable HTTP integration request.
pub fn http_integration(slug: &str, url: &str) -> pb::CreateIntegrationRequest {
    http_integration_with_auth(slug, url, None)
}

pub use switchboard_test_support::http_integration_with_auth;

pub async fn create(
    harness: &mut Harness,
    token: &str,
    request: pb::CreateIntegrationRequest,
) -> pb::Integration {
    harness
        .client
        .create_integration(req(request, token))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
}

/// The fields a BadRequest detail names, asserting the code is INVALID_ARGUMENT.
pub fn bad_fields(status: &Status) -> Vec<String> {
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    status
        .get_error_details()
        .bad_request()
        .expect("a BadRequest detail")
        .field_violations
        .iter()
        .map(|v| v.field.clone())
        .collect()
}

/// `auth` with its issuer pinned to `mcp_url`'s origin when it is client
/// credentials naming neither a token URL nor an issuer: the example
/// server is its own authorization server, at its origin.
pub fn pinned_to_origin(mcp_url: &str, auth: Method) -> Method {
    match auth {
        Method::OauthClientCredentials(mut oauth)
            if oauth.token_url.is_empty() && oauth.issuer.is_empty() =>
        {
            oauth.issuer = url::Url::parse(mcp_url)
                .expect("a URL")
                .origin()
                .ascii_serialization();
            Method::OauthClientCredentials(oauth)
        }
        other => other,
    }
}
