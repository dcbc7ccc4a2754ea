//! What tool policies cost: one decision over an organization's compiled
//! rules (0, 1, 100 and 1,000 of them), and ExecuteTool through mcp-service
//! with 1, 100 and 1,000 rules against none. See BENCHMARKS.md.
//!
//! `cargo bench -p switchboard-mcp-service --bench policy`

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use cel::Env;
use serde_json::json;
use switchboard_mcp_service::{
    Config,
    domain::policy::{
        decide::{CompiledPolicy, Decision, PolicySet},
        facts::{CallFacts, IntegrationFacts, Subject, Target, ToolAnnotations},
        model::{Effect, PolicyBody, PolicyName, PolicyVersion, Rule},
    },
};
use switchboard_proto::{
    json::json_to_struct,
    mcp::v1::{
        self as pb, mcp_service_client::McpServiceClient,
        policy_service_client::PolicyServiceClient,
    },
};
use switchboard_test_support::{
    TEST_JWT_SECRET, TestDb, authed, bench::quiet_example_http_server, http_integration_request,
    token,
};
use tonic::transport::Channel;

/// A rule of the kind a large organization writes: a tool of one team,
/// denied to everyone outside it. None matches the benchmark's call, so a
/// decision evaluates every rule.
fn rule(i: usize) -> Rule {
    Rule {
        name: format!("rule-{i}"),
        condition: format!(
            "integration.slug == 'github' && tool.name == 'tool_{i}' && !('team-{i}' in caller.teams)"
        ),
        effect: Effect::Deny,
        reason: format!("tool_{i} belongs to team {i}"),
        approver_role: String::new(),
        caller_may_approve: false,
    }
}

fn policy_of(rules: usize) -> PolicyBody {
    PolicyBody {
        description: String::new(),
        rules: (0..rules).map(rule).collect(),
        default_effect: Effect::Allow,
        guardrails: Default::default(),
    }
}

fn set_of(rules: usize, env: &Arc<Env>) -> PolicySet {
    let policies = if rules == 0 {
        Vec::new()
    } else {
        let version = PolicyVersion {
            name: PolicyName::parse("teams").expect("a valid name"),
            version: 1,
            body: policy_of(rules),
            updated_by: "bench".into(),
            updated_at: 0,
        };
        vec![Arc::new(
            CompiledPolicy::compile(version, env).expect("compiles"),
        )]
    };
    PolicySet::new(policies, env.clone())
}

fn facts() -> CallFacts {
    CallFacts {
        subject: Subject {
            user: "u".into(),
            organization: "o".into(),
            roles: vec!["member".into()],
            groups: vec!["eng".into(), "oncall".into()],
            teams: vec!["payments".into()],
            service: "web".into(),
        },
        integration: IntegrationFacts {
            id: "i".into(),
            slug: "github".into(),
            name: "GitHub".into(),
        },
        target: Target::Tool {
            name: "create_issue".into(),
            annotations: ToolAnnotations::default(),
        },
        content: Some(Default::default()),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// One decision, timed `iterations` times.
fn decisions() {
    println!("One decision over an organization's rules (none matches: every rule evaluated)\n");
    let env = Arc::new(Env::stdlib());
    let facts = facts();
    for rules in [0, 1, 100, 1000] {
        let compile_started = Instant::now();
        let set = set_of(rules, &env);
        let compiled = compile_started.elapsed();
        let iterations = if rules >= 1000 { 2_000 } else { 20_000 };
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let started = Instant::now();
            let decision = set.decide(&facts);
            times.push(started.elapsed());
            assert_eq!(decision, Decision::Allow);
        }
        times.sort();
        println!(
            "{rules:>5} rules   p50 {:>9.2} µs   p99 {:>9.2} µs   (compiled in {:.1} ms)",
            percentile(&times, 0.5).as_secs_f64() * 1e6,
            percentile(&times, 0.99).as_secs_f64() * 1e6,
            compiled.as_secs_f64() * 1e3,
        );
    }
}

struct Service {
    _db: TestDb,
    _server: switchboard_server::RunningServer,
    _upstream: switchboard_test_support::bench::KillOnDrop,
    channel: Channel,
    id: String,
}

async fn service() -> Service {
    let port = switchboard_test_support::grpc::free_port().expect("a port");
    let upstream = quiet_example_http_server(port)
        .await
        .expect("example server");
    let db = TestDb::sqlite().expect("a database");
    let mut config = Config::for_tests(&db.url, TEST_JWT_SECRET);
    config.common.server.org_rate_limit = std::num::NonZeroU32::MAX;
    config.common.server.org_rate_burst = std::num::NonZeroU32::MAX;
    config.common.telemetry.log_filter = "warn".into();
    let server = switchboard_mcp_service::spawn(config)
        .await
        .expect("mcp-service starts");
    let channel = Channel::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .expect("connects");
    let admin = token("bench", "bench-admin", &["admin"]);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let id = McpServiceClient::new(channel.clone())
        .create_integration(authed(http_integration_request("github", &url), &admin))
        .await
        .expect("created")
        .into_inner()
        .integration
        .expect("an integration")
        .id;
    Service {
        _db: db,
        _server: server,
        _upstream: upstream,
        channel,
        id,
    }
}

/// `calls` sequential ExecuteTool calls of `echo` by a member: p50 and p99.
async fn execute(s: &Service, calls: usize) -> (Duration, Duration) {
    let member = token("bench", "bench-member", &["member"]);
    let mut client = McpServiceClient::new(s.channel.clone());
    let arguments = json_to_struct(&json!({"text": "ping"}));
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let request = authed(
            pb::ExecuteToolRequest {
                integration_id: s.id.clone(),
                tool_name: "echo".into(),
                arguments: arguments.clone(),
                session_scope: "bench".into(),
                ..Default::default()
            },
            &member,
        );
        let started = Instant::now();
        let response = client.execute_tool(request).await.expect("answered");
        times.push(started.elapsed());
        assert!(!response.into_inner().is_error);
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// Writes the organization's policy with `rules` rules, replacing
/// `expected_version` (0 to create it).
async fn put_rules(s: &Service, rules: usize, expected_version: i64) {
    let admin = token("bench", "bench-admin", &["admin"]);
    let body = policy_of(rules);
    let policy = pb::Policy {
        name: "teams".into(),
        rules: body
            .rules
            .iter()
            .map(|r| pb::PolicyRule {
                name: r.name.clone(),
                condition: r.condition.clone(),
                effect: pb::PolicyEffect::Deny.into(),
                reason: r.reason.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    PolicyServiceClient::new(s.channel.clone())
        .put_policy(authed(
            pb::PutPolicyRequest {
                policy: Some(policy),
                expected_version,
            },
            &admin,
        ))
        .await
        .expect("policy written");
}

async fn execute_tool_rows() {
    let calls = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    println!("\nExecuteTool (echo) through mcp-service, 1 caller, {calls} calls per row\n");
    let s = service().await;
    execute(&s, 200).await;
    let (p50, p99) = execute(&s, calls).await;
    println!(
        "no policy     p50 {:>8.3} ms   p99 {:>8.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    for (version, rules) in [1, 100, 1000].into_iter().enumerate() {
        let started = Instant::now();
        put_rules(&s, rules, i64::try_from(version).unwrap_or(0)).await;
        let compiled = started.elapsed();
        execute(&s, 200).await;
        let (p50, p99) = execute(&s, calls).await;
        println!(
            "{rules:>5} rules   p50 {:>8.3} ms   p99 {:>8.3} ms   (written and compiled in {:.0} ms)",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            compiled.as_secs_f64() * 1e3
        );
    }
}

fn main() {
    decisions();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(execute_tool_rows());
}
