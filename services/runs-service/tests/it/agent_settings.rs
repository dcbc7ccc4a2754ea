//! An agent's integrations over real gRPC, on both databases: integration
//! ids (the agent's list and its tool filters) are UUIDs, refused by field
//! otherwise, read back in one spelling, and an update reads only the fields
//! its mask names; a tool drift policy the enum does not name is refused.

use prost_types::FieldMask;
use switchboard_proto::runs::v1::{self as runs, runs_service_client::RunsServiceClient};
use switchboard_server::RunningServer;
use switchboard_test_support::{DbKind, TEST_JWT_SECRET, TestDb, authed, db_tests, token};
use tonic::transport::Channel;

use crate::hostile_model::bad_fields;

const INTEGRATION: &str = "0192F0C4-7A3B-7C3D-8E4F-0123456789AB";
const OTHER: &str = "0192f0c4-7a3b-7c3d-8e4f-0123456789ac";

struct Service {
    _db: TestDb,
    _server: RunningServer,
    client: RunsServiceClient<Channel>,
}

impl Service {
    async fn start(kind: DbKind) -> Self {
        let db = TestDb::new(kind).await.expect("a test database");
        let mut config = switchboard_runs_service::Config::for_tests(
            &db.url,
            TEST_JWT_SECRET,
            "http://127.0.0.1:1",
        );
        // Never called: these tests start no run.
        config.model_providers = "scripted=openai,http://127.0.0.1:1".into();
        let server = switchboard_runs_service::spawn(config)
            .await
            .expect("runs-service starts");
        let client = RunsServiceClient::connect(server.url())
            .await
            .expect("connects");
        Self {
            _db: db,
            _server: server,
            client,
        }
    }

    async fn create(&mut self, agent: runs::Agent) -> Result<runs::Agent, tonic::Status> {
        let request = runs::CreateAgentRequest {
            agent: Some(agent),
            ..Default::default()
        };
        self.client
            .create_agent(authed(request, &admin()))
            .await
            .map(|response| response.into_inner().agent.expect("an agent"))
    }

    async fn update(
        &mut self,
        agent: runs::Agent,
        paths: &[&str],
    ) -> Result<runs::Agent, tonic::Status> {
        let request = runs::UpdateAgentRequest {
            agent: Some(agent),
            update_mask: Some(FieldMask {
                paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            }),
        };
        self.client
            .update_agent(authed(request, &admin()))
            .await
            .map(|response| response.into_inner().agent.expect("an agent"))
    }
}

fn admin() -> String {
    token("org-settings", "admin", &["admin"])
}

fn filter(integration_id: &str, tools: &[&str]) -> runs::IntegrationToolFilter {
    runs::IntegrationToolFilter {
        integration_id: integration_id.into(),
        allowed_tools: tools.iter().map(|t| (*t).to_owned()).collect(),
    }
}

fn agent(integrations: &[&str], filters: Vec<runs::IntegrationToolFilter>) -> runs::Agent {
    runs::Agent {
        name: "settings".into(),
        model: Some(runs::ModelRef {
            provider: "scripted".into(),
            model: "test-model".into(),
        }),
        mcp_integration_ids: integrations.iter().map(|i| (*i).to_owned()).collect(),
        tool_filters: filters,
        ..Default::default()
    }
}

async fn integration_ids_that_are_not_uuids_are_refused_by_field(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let refused = service
        .create(agent(
            &[INTEGRATION, "github"],
            vec![filter(OTHER, &["search"]), filter("github", &["search"])],
        ))
        .await
        .expect_err("not integration ids");
    assert_eq!(
        bad_fields(&refused),
        [
            "agent.mcp_integration_ids[1]",
            "agent.tool_filters[1].integration_id"
        ]
    );
}

async fn an_agents_integrations_read_back_in_one_spelling(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let created = service
        .create(agent(
            &[INTEGRATION],
            vec![filter(INTEGRATION, &["search"])],
        ))
        .await
        .expect("created");
    let lowercase = INTEGRATION.to_lowercase();
    assert_eq!(created.mcp_integration_ids, [lowercase.as_str()]);
    assert_eq!(created.tool_filters, [filter(&lowercase, &["search"])]);
    let read = service
        .client
        .get_agent(authed(
            runs::GetAgentRequest {
                id: created.id.clone(),
            },
            &admin(),
        ))
        .await
        .expect("read")
        .into_inner()
        .agent
        .expect("an agent");
    assert_eq!(read, created);
}

async fn an_update_reads_only_the_fields_its_mask_names(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let created = service
        .create(agent(
            &[INTEGRATION],
            vec![filter(INTEGRATION, &["search"])],
        ))
        .await
        .expect("created");
    let mut patch = agent(&["not-an-id"], vec![filter("github", &["push"])]);
    patch.id = created.id.clone();
    patch.name = "renamed".into();

    let renamed = service
        .update(patch.clone(), &["name"])
        .await
        .expect("the mask names only the name");
    assert_eq!(renamed.name, "renamed");
    assert_eq!(renamed.mcp_integration_ids, created.mcp_integration_ids);
    assert_eq!(renamed.tool_filters, created.tool_filters);

    let refused = service
        .update(patch.clone(), &["name", "tool_filters"])
        .await
        .expect_err("the mask names the filters");
    assert_eq!(
        bad_fields(&refused),
        ["agent.tool_filters[0].integration_id"]
    );

    patch.mcp_integration_ids = vec![OTHER.into()];
    patch.tool_filters = vec![filter(OTHER, &["push"])];
    let updated = service
        .update(patch, &["mcp_integration_ids", "tool_filters"])
        .await
        .expect("valid ids");
    assert_eq!(updated.mcp_integration_ids, [OTHER]);
    assert_eq!(updated.tool_filters, [filter(OTHER, &["push"])]);
    assert_eq!(updated.name, "renamed");
}

async fn a_tool_drift_policy_is_kept_and_an_unknown_one_refused(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let mut unknown = agent(&[INTEGRATION], vec![]);
    unknown.tool_drift = 99;
    let refused = service.create(unknown).await.expect_err("not a policy");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(bad_fields(&refused), ["agent.tool_drift"]);

    let created = service
        .create(agent(&[INTEGRATION], vec![]))
        .await
        .expect("created");
    assert_eq!(
        created.tool_drift,
        i32::from(runs::ToolDriftPolicy::Unspecified)
    );
    let mut patch = agent(&[INTEGRATION], vec![]);
    patch.id = created.id.clone();
    patch.tool_drift = runs::ToolDriftPolicy::Accept.into();
    let untouched = service
        .update(patch.clone(), &["name"])
        .await
        .expect("updated");
    assert_eq!(
        untouched.tool_drift,
        i32::from(runs::ToolDriftPolicy::Unspecified)
    );
    let accepting = service
        .update(patch, &["tool_drift"])
        .await
        .expect("updated");
    assert_eq!(
        accepting.tool_drift,
        i32::from(runs::ToolDriftPolicy::Accept)
    );
}

async fn a_recovery_and_its_idempotent_tools_are_kept_and_bounded(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let mut unknown = agent(&[INTEGRATION], vec![]);
    unknown.recovery = 7;
    unknown.idempotent_tools = vec!["x".repeat(129)];
    let refused = service.create(unknown).await.expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        bad_fields(&refused),
        ["agent.recovery", "agent.idempotent_tools"]
    );
    let mut too_many = agent(&[INTEGRATION], vec![]);
    too_many.idempotent_tools = vec!["t".into(); 257];
    let refused = service.create(too_many).await.expect_err("refused");
    assert_eq!(bad_fields(&refused), ["agent.idempotent_tools"]);

    let mut continuing = agent(&[INTEGRATION], vec![]);
    continuing.recovery = runs::RunRecovery::Continue.into();
    continuing.idempotent_tools = vec!["x".repeat(128); 256];
    let created = service.create(continuing).await.expect("at the limits");
    assert_eq!(created.recovery, i32::from(runs::RunRecovery::Continue));
    assert_eq!(created.idempotent_tools.len(), 256);
    let mut patch = agent(&[INTEGRATION], vec![]);
    patch.id = created.id.clone();
    patch.recovery = runs::RunRecovery::Interrupt.into();
    patch.idempotent_tools = vec!["example__add".into()];
    let updated = service
        .update(patch, &["recovery", "idempotent_tools"])
        .await
        .expect("updated");
    assert_eq!(updated.recovery, i32::from(runs::RunRecovery::Interrupt));
    assert_eq!(updated.idempotent_tools, ["example__add"]);
}

fn model(provider: &str, model: &str) -> runs::ModelRef {
    runs::ModelRef {
        provider: provider.into(),
        model: model.into(),
    }
}

async fn fallback_models_are_kept_in_order_and_bounded(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let mut unknown = agent(&[INTEGRATION], vec![]);
    unknown.fallback_models = vec![
        model("scripted", "second"),
        model("nowhere", "m"),
        model("scripted", " "),
    ];
    let refused = service.create(unknown).await.expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        bad_fields(&refused),
        [
            "agent.fallback_models[1].provider",
            "agent.fallback_models[2].model"
        ]
    );
    let mut too_many = agent(&[INTEGRATION], vec![]);
    too_many.fallback_models = vec![model("scripted", "m"); 4];
    let refused = service.create(too_many).await.expect_err("refused");
    assert_eq!(bad_fields(&refused), ["agent.fallback_models"]);

    let mut three = agent(&[INTEGRATION], vec![]);
    three.fallback_models = vec![
        model("scripted", "b"),
        model("scripted", "c"),
        model("scripted", "d"),
    ];
    let created = service.create(three.clone()).await.expect("at the limit");
    assert_eq!(
        created.fallback_models, three.fallback_models,
        "kept in order"
    );
    let mut patch = agent(&[INTEGRATION], vec![]);
    patch.id = created.id.clone();
    let updated = service
        .update(patch, &["fallback_models"])
        .await
        .expect("updated");
    assert!(updated.fallback_models.is_empty(), "removed by an update");
}

async fn tool_overrides_are_kept_and_refused_by_field(kind: DbKind) {
    let mut service = Service::start(kind).await;
    let over = |integration: &str, tool: &str, name: &str| runs::ToolOverride {
        integration_id: integration.into(),
        tool: tool.into(),
        name: name.into(),
        ..Default::default()
    };
    let mut bad = agent(&[INTEGRATION], vec![]);
    bad.tool_overrides = vec![
        over("github", "search", ""),
        over(INTEGRATION, "search", "find"),
        over(INTEGRATION, "list", "find"),
        over(INTEGRATION, "push", "no spaces"),
    ];
    let refused = service.create(bad).await.expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        bad_fields(&refused),
        [
            "agent.tool_overrides[0].integration_id",
            "agent.tool_overrides[2].name",
            "agent.tool_overrides[3].name",
        ],
        "each problem named at its index in the request"
    );

    let mut good = agent(&[INTEGRATION], vec![]);
    good.tool_overrides = vec![
        runs::ToolOverride {
            description: "Finds things.".into(),
            ..over(INTEGRATION, "search", "find")
        },
        runs::ToolOverride {
            hidden: true,
            ..over(OTHER, "push", "")
        },
    ];
    let created = service.create(good.clone()).await.expect("kept");
    let mut first = good.tool_overrides[0].clone();
    first.integration_id = INTEGRATION.to_lowercase();
    assert_eq!(
        created.tool_overrides[0], first,
        "read back in one spelling"
    );
    assert_eq!(created.tool_overrides[1].integration_id, OTHER);
    assert!(created.tool_overrides[1].hidden);
}

db_tests!(
    tool_overrides_are_kept_and_refused_by_field,
    fallback_models_are_kept_in_order_and_bounded,
    a_recovery_and_its_idempotent_tools_are_kept_and_bounded,
    a_tool_drift_policy_is_kept_and_an_unknown_one_refused,
    integration_ids_that_are_not_uuids_are_refused_by_field,
    an_agents_integrations_read_back_in_one_spelling,
    an_update_reads_only_the_fields_its_mask_names,
);
