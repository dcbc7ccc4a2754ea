//! The conformance suite of the runs repository port, run against every
//! implementation (SQLite, PostgreSQL and the in-memory fake).

use std::collections::BTreeMap;

use switchboard_runs_service::domain::{
    entities::{
        Agent, AgentConfig, ApprovalAsked, ClientTool, InputRequest, InputRequired, Message,
        ModelChoice, Part, PendingApproval, PendingCall, PendingInput, Role, Run, RunStatus,
        Thread, ToolBinding, ToolOverride, ToolTarget, Usage,
    },
    ids::{AgentId, IntegrationId, MessageId, RunId, ThreadId},
    pins::ToolDriftPolicy,
    ports::{RepositoryError, RunsRepository},
    recovery::RunRecovery,
};
use switchboard_test_support::{Store, store_tests};

use crate::stores::runs_repository as repository;

/// An integration id, as mcp-service makes them.
fn integration_id() -> IntegrationId {
    uuid::Uuid::now_v7().into()
}

fn agent(org: &str, name: &str, created_at: i64) -> Agent {
    let integrations = vec![integration_id(), integration_id()];
    let first = integrations[0];
    Agent {
        id: AgentId::new(),
        org_id: org.into(),
        name: name.into(),
        config: AgentConfig {
            instructions: "Be brief.".into(),
            provider: "openai".into(),
            model: "gpt-test".into(),
            tool_filters: BTreeMap::from([(integrations[0], vec!["search".into()])]),
            mcp_integration_ids: integrations,
            client_tools: vec![ClientTool {
                name: "confirm".into(),
                description: "Asks the user".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
            max_steps: 7,
            disable_resource_tools: true,
            tool_search: true,
            tool_drift: ToolDriftPolicy::Accept,
            recovery: RunRecovery::Continue,
            idempotent_tools: vec!["example_search".into()],
            fallback_models: vec![ModelChoice {
                provider: "anthropic".into(),
                model: "claude-test".into(),
            }],
            tool_overrides: vec![ToolOverride {
                integration_id: first,
                tool: "search".into(),
                name: Some("find".into()),
                description: None,
                hidden: false,
            }],
        },
        created_at,
        updated_at: created_at,
    }
}

pub(crate) fn thread(org: &str, user: &str, agent_id: AgentId, created_at: i64) -> Thread {
    Thread {
        id: ThreadId::new(),
        org_id: org.into(),
        user_id: user.into(),
        agent_id,
        title: "A conversation".into(),
        created_at,
        updated_at: created_at,
    }
}

pub(crate) fn message(
    thread_id: ThreadId,
    role: Role,
    parts: Vec<Part>,
    created_at: i64,
) -> Message {
    Message {
        id: MessageId::new(),
        thread_id,
        run_id: None,
        seq: 0,
        role,
        parts,
        created_at,
    }
}

pub(crate) fn text(text: &str) -> Vec<Part> {
    vec![Part::Text { text: text.into() }]
}

pub(crate) fn run(thread: &Thread, created_at: i64) -> Run {
    Run::started(thread.id, thread.agent_id, created_at)
}

/// A stored thread of `user` in `org-a`.
async fn stored_thread(repo: &dyn RunsRepository, user: &str, created_at: i64) -> Thread {
    let stored = thread("org-a", user, AgentId::new(), created_at);
    repo.insert_thread(&stored).await.expect("thread inserted");
    stored
}

async fn agents_round_trip_with_their_configuration_within_their_organization(store: Store) {
    let (_db, repo) = repository(store).await;
    let original = agent("org-a", "Helper", 1000);
    repo.insert_agent(&original).await.expect("inserted");

    let loaded = repo.get_agent("org-a", original.id).await.expect("read");
    assert_eq!(loaded, Some(original.clone()));
    assert_eq!(
        repo.get_agent("org-b", original.id).await.expect("read"),
        None
    );
    assert_eq!(
        repo.get_agent("org-a", AgentId::new()).await.expect("read"),
        None
    );
}

async fn agent_updates_and_deletes_touch_only_the_callers_organization(store: Store) {
    let (_db, repo) = repository(store).await;
    let mut original = agent("org-a", "Helper", 1000);
    repo.insert_agent(&original).await.expect("inserted");

    let mut foreign = original.clone();
    foreign.org_id = "org-b".into();
    foreign.name = "Hijacked".into();
    assert!(!repo.update_agent(&foreign).await.expect("update"));
    assert!(
        !repo
            .delete_agent("org-b", original.id)
            .await
            .expect("delete")
    );

    original.name = "Renamed".into();
    original.config.model = "gpt-other".into();
    original.config.client_tools.clear();
    original.updated_at = 2000;
    assert!(repo.update_agent(&original).await.expect("update"));
    let loaded = repo.get_agent("org-a", original.id).await.expect("read");
    assert_eq!(loaded, Some(original.clone()));

    assert!(
        repo.delete_agent("org-a", original.id)
            .await
            .expect("delete")
    );
    assert_eq!(
        repo.get_agent("org-a", original.id).await.expect("read"),
        None
    );
    assert!(
        !repo
            .delete_agent("org-a", original.id)
            .await
            .expect("delete")
    );
    assert!(!repo.update_agent(&original).await.expect("update"));
}

async fn agents_list_oldest_first_in_pages_within_one_organization(store: Store) {
    let (_db, repo) = repository(store).await;
    let mut expected = Vec::new();
    // Pairs share a creation time, so the id breaks ties.
    for (i, created_at) in [200, 100, 100, 200, 300].into_iter().enumerate() {
        let item = agent("org-a", &format!("agent-{i}"), created_at);
        repo.insert_agent(&item).await.expect("inserted");
        expected.push(item);
    }
    repo.insert_agent(&agent("org-b", "other", 50))
        .await
        .expect("other org");
    expected.sort_by_key(|a| (a.created_at, a.id));

    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let page = repo.list_agents("org-a", cursor, 2).await.expect("page");
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        cursor = Some((last.created_at, last.id.to_string()));
        listed.extend(page);
    }
    assert_eq!(listed, expected);
    assert!(
        repo.list_agents("org-c", None, 10)
            .await
            .expect("page")
            .is_empty()
    );
}

async fn threads_round_trip_only_for_their_user_and_organization(store: Store) {
    let (_db, repo) = repository(store).await;
    let original = thread("org-a", "alice", AgentId::new(), 1000);
    repo.insert_thread(&original).await.expect("inserted");

    let loaded = repo
        .get_thread("org-a", "alice", original.id)
        .await
        .expect("read");
    assert_eq!(loaded, Some(original.clone()));
    assert_eq!(
        repo.get_thread("org-a", "bob", original.id)
            .await
            .expect("read"),
        None,
        "another user's thread is invisible"
    );
    assert_eq!(
        repo.get_thread("org-b", "alice", original.id)
            .await
            .expect("read"),
        None,
        "another organization's thread is invisible"
    );
    assert!(
        !repo
            .delete_thread("org-a", "bob", original.id)
            .await
            .expect("delete")
    );
    assert!(
        !repo
            .delete_thread("org-b", "alice", original.id)
            .await
            .expect("delete")
    );
    assert!(
        repo.get_thread("org-a", "alice", original.id)
            .await
            .expect("read")
            .is_some()
    );
}

async fn threads_list_newest_first_in_pages_optionally_of_one_agent(store: Store) {
    let (_db, repo) = repository(store).await;
    let (agent_x, agent_y) = (AgentId::new(), AgentId::new());
    let mut expected = Vec::new();
    for (i, created_at) in [100, 300, 200, 300, 100, 400].into_iter().enumerate() {
        let agent_id = if i % 2 == 0 { agent_x } else { agent_y };
        let item = thread("org-a", "alice", agent_id, created_at);
        repo.insert_thread(&item).await.expect("inserted");
        expected.push(item);
    }
    repo.insert_thread(&thread("org-a", "bob", agent_x, 500))
        .await
        .expect("other user");
    repo.insert_thread(&thread("org-b", "alice", agent_x, 500))
        .await
        .expect("other org");
    expected.sort_by_key(|t| std::cmp::Reverse((t.created_at, t.id)));

    let list_all = async |agent: Option<AgentId>| {
        let mut listed = Vec::new();
        let mut cursor = None;
        loop {
            let page = repo
                .list_threads("org-a", "alice", agent, cursor, 2)
                .await
                .expect("page");
            assert!(page.len() <= 2);
            let Some(last) = page.last() else { break };
            cursor = Some((last.created_at, last.id.to_string()));
            listed.extend(page);
        }
        listed
    };
    assert_eq!(list_all(None).await, expected);
    let of_x: Vec<Thread> = expected
        .iter()
        .filter(|t| t.agent_id == agent_x)
        .cloned()
        .collect();
    assert_eq!(of_x.len(), 3);
    assert_eq!(list_all(Some(agent_x)).await, of_x);
    assert!(list_all(Some(AgentId::new())).await.is_empty());
}

async fn deleting_a_thread_removes_its_messages_and_runs(store: Store) {
    let (_db, repo) = repository(store).await;
    let doomed = stored_thread(&*repo, "alice", 100).await;
    let kept = stored_thread(&*repo, "alice", 200).await;
    for t in [&doomed, &kept] {
        repo.append_message(&message(t.id, Role::User, text("hi"), 300))
            .await
            .expect("appended");
    }
    let doomed_run = run(&doomed, 400);
    let kept_run = run(&kept, 400);
    repo.start_run(&doomed_run).await.expect("started");
    repo.start_run(&kept_run).await.expect("started");

    assert!(
        repo.delete_thread("org-a", "alice", doomed.id)
            .await
            .expect("delete")
    );
    assert_eq!(
        repo.get_thread("org-a", "alice", doomed.id)
            .await
            .expect("read"),
        None
    );
    assert!(
        repo.list_messages(doomed.id, 0, 10)
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(repo.find_run(doomed_run.id).await.expect("read"), None);
    assert!(
        !repo
            .delete_thread("org-a", "alice", doomed.id)
            .await
            .expect("delete")
    );

    assert_eq!(
        repo.list_messages(kept.id, 0, 10)
            .await
            .expect("list")
            .len(),
        1
    );
    assert_eq!(
        repo.find_run(kept_run.id).await.expect("read"),
        Some(kept_run)
    );
}

async fn messages_get_consecutive_seqs_and_list_after_a_seq(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let other = stored_thread(&*repo, "alice", 100).await;
    let mut appended = Vec::new();
    for (i, at) in [1000, 1001, 1002, 1003].into_iter().enumerate() {
        let mut m = message(t.id, Role::User, text(&format!("message {i}")), at);
        m.seq = repo.append_message(&m).await.expect("appended");
        appended.push(m);
    }
    assert_eq!(
        appended.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    assert_eq!(
        repo.append_message(&message(other.id, Role::User, text("elsewhere"), 1004))
            .await
            .expect("appended"),
        1,
        "each thread counts on its own"
    );

    assert_eq!(
        repo.list_messages(t.id, 0, 100).await.expect("list"),
        appended
    );
    assert_eq!(
        repo.list_messages(t.id, 1, 2).await.expect("list"),
        appended[1..3]
    );
    assert!(
        repo.list_messages(t.id, 4, 10)
            .await
            .expect("list")
            .is_empty()
    );

    let touched = repo
        .get_thread("org-a", "alice", t.id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(touched.updated_at, 1003, "appending touches the thread");
    assert_eq!(touched.created_at, 100);
}

async fn concurrent_appends_to_one_thread_get_distinct_seqs(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let appends = (0..8).map(|i| {
        let m = message(t.id, Role::User, text(&format!("message {i}")), 1000 + i);
        let repo = &repo;
        async move { repo.append_message(&m).await }
    });
    let mut seqs = futures::future::join_all(appends)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .expect("every append succeeds");
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=8).collect::<Vec<i64>>());
}

async fn messages_appended_together_are_numbered_in_order(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let mut first = message(t.id, Role::User, text("first"), 1000);
    first.seq = repo.append_message(&first).await.expect("appended");
    let mut batch: Vec<Message> = ["a", "b", "c"]
        .into_iter()
        .map(|word| message(t.id, Role::User, text(word), 1001))
        .collect();
    let seqs = repo.append_messages(t.id, &batch).await.expect("appended");
    assert_eq!(seqs, [2, 3, 4]);
    for (message, seq) in batch.iter_mut().zip(seqs) {
        message.seq = seq;
    }
    let mut expected = vec![first];
    expected.extend(batch);
    assert_eq!(
        repo.list_messages(t.id, 0, 10).await.expect("list"),
        expected
    );
    assert!(
        repo.append_messages(t.id, &[])
            .await
            .expect("nothing to append")
            .is_empty()
    );
    let missing = ThreadId::new();
    assert!(
        repo.append_messages(missing, &[message(missing, Role::User, text("x"), 1)])
            .await
            .is_err(),
        "a message needs its thread"
    );

    // Batches racing on one thread each get consecutive numbers.
    let other = stored_thread(&*repo, "alice", 100).await;
    let batches = (0..6).map(|i| {
        let pair = vec![
            message(
                other.id,
                Role::Assistant,
                text(&format!("call {i}")),
                2000 + i,
            ),
            message(other.id, Role::Tool, text(&format!("result {i}")), 2000 + i),
        ];
        let (repo, thread_id) = (&repo, other.id);
        async move { repo.append_messages(thread_id, &pair).await }
    });
    let mut seqs = futures::future::join_all(batches)
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .expect("every append succeeds");
    for pair in &seqs {
        assert_eq!(pair[1], pair[0] + 1, "a batch is numbered consecutively");
    }
    seqs.sort_unstable();
    assert_eq!(seqs.concat(), (1..=12).collect::<Vec<i64>>());
}

async fn a_thread_is_read_with_its_agent(store: Store) {
    let (_db, repo) = repository(store).await;
    let helper = agent("org-a", "Helper", 50);
    repo.insert_agent(&helper).await.expect("agent");
    let t = thread("org-a", "alice", helper.id, 100);
    repo.insert_thread(&t).await.expect("thread");

    assert_eq!(
        repo.get_thread_with_agent("org-a", "alice", t.id)
            .await
            .expect("read"),
        Some((t.clone(), Some(helper.clone())))
    );
    for (org, user) in [("org-a", "bob"), ("org-b", "alice")] {
        assert_eq!(
            repo.get_thread_with_agent(org, user, t.id)
                .await
                .expect("read"),
            None,
            "{org}/{user} does not see it"
        );
    }
    assert!(
        repo.delete_agent("org-a", helper.id)
            .await
            .expect("deleted")
    );
    assert_eq!(
        repo.get_thread_with_agent("org-a", "alice", t.id)
            .await
            .expect("read"),
        Some((t, None)),
        "the thread outlives its agent"
    );
}

async fn message_parts_and_run_ids_round_trip(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let r = run(&t, 150);
    repo.start_run(&r).await.expect("started");

    let mut assistant = message(
        t.id,
        Role::Assistant,
        vec![
            Part::Text {
                text: "Let me look — \"quoted\" and ünïcode.".into(),
            },
            Part::ToolCall {
                id: "call_1".into(),
                name: "github__search".into(),
                arguments: r#"{"query":"rust"}"#.into(),
            },
        ],
        200,
    );
    assistant.run_id = Some(r.id);
    let mut tool = message(
        t.id,
        Role::Tool,
        vec![Part::ToolResult {
            tool_call_id: "call_1".into(),
            name: "github__search".into(),
            content: "no results".into(),
            is_error: true,
        }],
        201,
    );
    tool.run_id = Some(r.id);
    let seqs = repo
        .append_messages(t.id, &[assistant.clone(), tool.clone()])
        .await
        .expect("appended");
    assert_eq!(seqs, [1, 2]);
    (assistant.seq, tool.seq) = (seqs[0], seqs[1]);

    assert_eq!(
        repo.list_messages(t.id, 0, 10).await.expect("list"),
        vec![assistant, tool]
    );
}

async fn a_thread_runs_one_run_at_a_time(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let other = stored_thread(&*repo, "alice", 100).await;
    let mut first = run(&t, 200);
    repo.start_run(&first).await.expect("started");
    assert!(matches!(
        repo.start_run(&run(&t, 201)).await,
        Err(RepositoryError::ThreadBusy)
    ));
    repo.start_run(&run(&other, 202))
        .await
        .expect("another thread is free");

    first.status = RunStatus::Completed;
    first.updated_at = 300;
    repo.update_run(&first).await.expect("completed");
    let second = run(&t, 301);
    repo.start_run(&second)
        .await
        .expect("a finished run no longer blocks");
    assert_eq!(
        repo.get_run(t.id, first.id).await.expect("read"),
        Some(first)
    );
}

async fn a_run_is_stored_with_its_input_and_ends_with_its_answer(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let mut first = run(&t, 200);
    let mut question = message(t.id, Role::User, text("question"), 200);
    question.run_id = Some(first.id);
    assert_eq!(
        repo.start_run_with(&first, std::slice::from_ref(&question))
            .await
            .expect("started"),
        [1]
    );
    question.seq = 1;

    // A run refused on a busy thread stores none of its input.
    let refused = run(&t, 201);
    assert!(matches!(
        repo.start_run_with(&refused, &[message(t.id, Role::User, text("again"), 201)])
            .await,
        Err(RepositoryError::ThreadBusy)
    ));
    assert_eq!(repo.find_run(refused.id).await.expect("read"), None);

    first.status = RunStatus::Completed;
    first.steps = 1;
    first.updated_at = 300;
    let mut answer = message(t.id, Role::Assistant, text("answer"), 300);
    answer.run_id = Some(first.id);
    assert_eq!(
        repo.update_run_with(&first, std::slice::from_ref(&answer))
            .await
            .expect("ended"),
        [2]
    );
    answer.seq = 2;
    assert_eq!(
        repo.list_messages(t.id, 0, 10).await.expect("list"),
        [question, answer]
    );
    assert_eq!(
        repo.get_run(t.id, first.id).await.expect("read"),
        Some(first)
    );

    // Saving a run that does not exist stores none of the messages.
    let ghost = run(&t, 400);
    assert!(
        repo.update_run_with(&ghost, &[message(t.id, Role::Assistant, text("lost"), 400)])
            .await
            .is_err()
    );
    assert_eq!(repo.list_messages(t.id, 2, 10).await.expect("list"), []);
}

async fn a_paused_run_also_blocks_its_thread(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let mut paused = run(&t, 200);
    paused.status = RunStatus::RequiresAction;
    repo.start_run(&paused).await.expect("started");
    assert!(matches!(
        repo.start_run(&run(&t, 201)).await,
        Err(RepositoryError::ThreadBusy)
    ));

    paused.status = RunStatus::Cancelled;
    paused.updated_at = 300;
    repo.update_run(&paused).await.expect("cancelled");
    repo.start_run(&run(&t, 301))
        .await
        .expect("a cancelled run no longer blocks");
}

async fn only_a_paused_run_resumes(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let mut r = run(&t, 200);
    repo.start_run(&r).await.expect("started");
    assert!(
        !repo.resume_run(r.id, 250).await.expect("resume"),
        "a running run is not paused"
    );

    r.status = RunStatus::RequiresAction;
    r.updated_at = 300;
    repo.update_run(&r).await.expect("paused");
    assert!(repo.resume_run(r.id, 400).await.expect("resume"));
    let resumed = repo.find_run(r.id).await.expect("read").expect("found");
    assert_eq!(resumed.status, RunStatus::Running);
    assert_eq!(resumed.updated_at, 400);
    assert!(
        !repo.resume_run(r.id, 500).await.expect("resume"),
        "resuming twice fails the second time"
    );

    r.status = RunStatus::Completed;
    r.updated_at = 600;
    repo.update_run(&r).await.expect("completed");
    assert!(!repo.resume_run(r.id, 700).await.expect("resume"));
    assert!(!repo.resume_run(RunId::new(), 700).await.expect("resume"));
}

async fn run_updates_round_trip_bindings_pending_calls_usage_and_error(store: Store) {
    let (_db, repo) = repository(store).await;
    let t = stored_thread(&*repo, "alice", 100).await;
    let other = stored_thread(&*repo, "alice", 100).await;
    let mut r = run(&t, 200);
    r.bindings = vec![
        ToolBinding {
            name: "github__search".into(),
            target: ToolTarget::Mcp {
                integration_id: integration_id(),
                server_tool_name: "search".into(),
            },
        },
        ToolBinding {
            name: "confirm".into(),
            target: ToolTarget::Client,
        },
        ToolBinding {
            name: "read_resource".into(),
            target: ToolTarget::Builtin,
        },
    ];
    repo.start_run(&r).await.expect("started");
    assert_eq!(
        repo.get_run(t.id, r.id).await.expect("read"),
        Some(r.clone())
    );

    r.status = RunStatus::RequiresAction;
    r.steps = 3;
    r.usage = Usage {
        input_tokens: 1234,
        output_tokens: 56,
    };
    r.pending = vec![
        PendingCall {
            id: "call_9".into(),
            name: "confirm".into(),
            arguments: r#"{"question":"Proceed?"}"#.into(),
            input: None,
            approval: None,
        },
        PendingCall {
            id: "call_10".into(),
            name: "deploys__confirm".into(),
            arguments: r#"{"action":"deploy"}"#.into(),
            input: Some(PendingInput {
                integration_id: integration_id(),
                tool: "confirm".into(),
                asked: InputRequired {
                    requests: vec![InputRequest {
                        key: "confirm".into(),
                        method: "elicitation/create".into(),
                        params_json: r#"{"message":"Deploy?"}"#.into(),
                    }],
                    request_state: Some("confirm:deploy".into()),
                    task_id: None,
                },
            }),
            approval: None,
        },
        PendingCall {
            id: "call_11".into(),
            name: "repos__delete".into(),
            arguments: r#"{"repo":"old"}"#.into(),
            input: None,
            approval: Some(PendingApproval {
                integration_id: integration_id(),
                tool: "delete".into(),
                asked: ApprovalAsked {
                    id: "0193a1b2-0000-7000-8000-000000000001".into(),
                    rule: "tools@3/destructive".into(),
                    reason: "destructive tools need an approver".into(),
                    approver_role: "repo-admin".into(),
                    requester_may_approve: false,
                    expires_at: 1_800_000_000_000,
                },
            }),
        },
    ];
    r.updated_at = 300;
    repo.update_run(&r).await.expect("paused");
    assert_eq!(
        repo.get_run(t.id, r.id).await.expect("read"),
        Some(r.clone())
    );

    r.status = RunStatus::Failed;
    r.pending.clear();
    r.error = Some("the model refused".into());
    r.updated_at = 400;
    repo.update_run(&r).await.expect("failed");
    assert_eq!(repo.find_run(r.id).await.expect("read"), Some(r.clone()));

    assert_eq!(
        repo.get_run(other.id, r.id).await.expect("read"),
        None,
        "a run is found only through its own thread"
    );
    assert_eq!(repo.find_run(RunId::new()).await.expect("read"), None);
}

store_tests!(
    every_store: [
    agents_round_trip_with_their_configuration_within_their_organization,
    agent_updates_and_deletes_touch_only_the_callers_organization,
    agents_list_oldest_first_in_pages_within_one_organization,
    threads_round_trip_only_for_their_user_and_organization,
    threads_list_newest_first_in_pages_optionally_of_one_agent,
    deleting_a_thread_removes_its_messages_and_runs,
    messages_get_consecutive_seqs_and_list_after_a_seq,
    concurrent_appends_to_one_thread_get_distinct_seqs,
    messages_appended_together_are_numbered_in_order,
    a_thread_is_read_with_its_agent,
    message_parts_and_run_ids_round_trip,
    a_thread_runs_one_run_at_a_time,
    a_run_is_stored_with_its_input_and_ends_with_its_answer,
    a_paused_run_also_blocks_its_thread,
    only_a_paused_run_resumes,
    run_updates_round_trip_bindings_pending_calls_usage_and_error,
    ],
    databases_only: [],
);
