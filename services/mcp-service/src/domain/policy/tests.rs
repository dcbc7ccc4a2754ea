//! The policy model's behaviour without storage: conditions bounded and
//! compiled, and rules combined into one decision.

use std::sync::Arc;

use cel::Env;

use super::{
    condition::{Condition, MAX_COMPREHENSIONS, MAX_CONDITION_BYTES},
    decide::{CompiledPolicy, Decision, PolicySet},
    facts::{CallContent, CallFacts, IntegrationFacts, Subject, Target, ToolAnnotations},
    model::{Effect, PolicyBody, PolicyName, PolicyVersion, Rule},
};

fn env() -> Arc<Env> {
    Arc::new(Env::stdlib())
}

fn compile(text: &str) -> Result<Condition, super::condition::ConditionError> {
    Condition::compile(text, &env())
}

/// Runs `f` on a thread with a tokio worker's stack (2 MiB): what the call
/// path has.
fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(f)
        .expect("spawns")
        .join()
        .expect("does not panic or overflow")
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let error = compile("true &&\n  caller.user = 'x'").expect_err("refused");
    assert_eq!((error.line, error.column), (2, 15));
    let error = compile("caller.user ==").expect_err("refused");
    assert_eq!((error.line, error.column), (1, 15));
    assert!(
        error.to_string().starts_with("line 1, column 15: "),
        "{error}"
    );
}

#[test]
fn a_condition_that_gives_no_bool_or_names_nothing_is_refused_on_write() {
    for (text, says) in [
        ("tool.name", "gives string, not a bool"),
        ("caller.roles", "gives list, not a bool"),
        ("caler.user == 'x'", "caler"),
        ("tool.nmae == 'x'", "nmae"),
        ("1 + 'a' == 2", "add"),
        ("", "empty"),
    ] {
        let error = compile(text).expect_err(text);
        assert!(error.message.contains(says), "{text}: {error}");
    }
    for text in [
        "caller.roles.exists(r, r == 'admin')",
        "request.kind == 'tool' && tool.destructive",
        "resource.uri.startsWith('file:///')",
        "'eng' in caller.groups && tool.name.matches('^delete_')",
        "caller.roles[0] == 'x'",
    ] {
        assert!(compile(text).is_ok(), "{text}");
    }
}

#[test]
fn a_hundred_thousand_nested_parentheses_are_refused_before_parsing() {
    let deep = format!("{}true{}", "(".repeat(100_000), ")".repeat(100_000));
    let error = on_worker_stack(move || super::condition::check_shape_for_tests(&deep))
        .expect_err("refused");
    assert!(error.message.contains("nested more than"), "{error}");
    assert_eq!((error.line, error.column), (1, 33));
}

#[test]
fn hostile_conditions_at_the_size_limit_are_refused_or_run_without_overflowing() {
    let n = MAX_CONDITION_BYTES;
    // (condition, refused for its depth)
    let cases = vec![
        (
            format!("{}true{}", "(".repeat(n / 2 - 2), ")".repeat(n / 2 - 2)),
            true,
        ),
        (
            format!("{}true{}", "[".repeat(n / 2 - 2), "]".repeat(n / 2 - 2)),
            true,
        ),
        (format!("{}true", "!".repeat(n - 4)), false),
        (format!("{}1 == 1", "-".repeat(n - 6)), false),
        (format!("true{}", " || true".repeat((n - 4) / 8)), false),
        (
            format!("true{}", " ? true : true".repeat((n - 4) / 14)),
            true,
        ),
        (format!("caller{}", ".a".repeat((n - 6) / 2)), true),
        (format!("1{} == 1", " + 1".repeat((n - 6) / 4)), true),
        (
            format!("caller.roles{} == ''", "[0]".repeat((n - 20) / 3)),
            true,
        ),
        (format!("'{}' == ''", "\\\\".repeat((n - 8) / 2)), false),
        (
            format!("{}1{} == 1", "size([".repeat(n / 9), "])".repeat(n / 9)),
            true,
        ),
        (format!("r'\\' == '' && {}", "(".repeat(n - 40)), true),
    ];
    for (text, deep) in cases {
        assert!(text.len() <= n, "{} bytes", text.len());
        let shown = text[..40].to_owned();
        let outcome = on_worker_stack(move || {
            let env = env();
            let condition = Condition::compile(&text, &env)?;
            let facts = tool_call("u", &[], "t", ToolAnnotations::default());
            let outcome = condition.evaluate(&facts.context(&env));
            drop(condition);
            Ok::<_, super::condition::ConditionError>(outcome)
        });
        match outcome {
            Err(error) if deep => assert!(
                error.message.contains("nested more than"),
                "{shown}: {error}"
            ),
            Err(_) => {}
            Ok(_) => assert!(!deep, "{shown} compiled"),
        }
    }
    let long = format!("true && '{}' == ''", "x".repeat(n));
    assert!(compile(&long).is_err());
}

#[test]
fn loops_may_follow_one_another_but_not_nest() {
    let sequential = "caller.roles.exists(r, r == 'admin') && caller.groups.all(g, g != 'guests')";
    assert!(compile(sequential).is_ok());
    let chained = "caller.groups.map(g, g + '-x').exists(g, g == 'ops-x')";
    assert!(compile(chained).is_ok());
    let nested = "caller.roles.exists(r, caller.groups.all(g, g != 'x'))";
    let error = compile(nested).expect_err("refused");
    assert!(error.message.contains("holds another loop"), "{error}");
    let too_many = ["caller.roles.exists(r, r == 'a')"; MAX_COMPREHENSIONS + 1].join(" || ");
    let error = compile(&too_many).expect_err("refused");
    assert!(error.message.contains("comprehensions"), "{error}");
    // A name in a string is not a comprehension.
    assert!(compile("'map(' != 'filter(' && 'all(' != 'exists('").is_ok());
}

#[test]
fn a_loop_body_reads_only_its_own_variables_and_literals() {
    assert!(compile("caller.groups.exists(g, g in ['ops', 'sre'])").is_ok());
    // Each of these compares every element with all of another caller-sized
    // value: quadratic in what the caller sends.
    for text in [
        "caller.groups.exists(g, g in caller.teams)",
        "caller.groups.exists(g, tool.name.contains(g))",
        "caller.groups.exists(g, g == caller.user)",
    ] {
        let error = compile(text).expect_err(text);
        assert!(
            error.message.contains("from outside the loop"),
            "{text}: {error}"
        );
    }
}

fn rule(name: &str, condition: &str, effect: Effect) -> Rule {
    Rule {
        name: name.into(),
        condition: condition.into(),
        effect,
        reason: format!("because of {name}"),
        approver_role: if effect == Effect::RequireApproval {
            "approver".into()
        } else {
            String::new()
        },
        caller_may_approve: false,
    }
}

fn policy(name: &str, rules: Vec<Rule>, default_effect: Effect) -> Arc<CompiledPolicy> {
    let version = PolicyVersion {
        name: PolicyName::parse(name).expect("valid name"),
        version: 3,
        body: PolicyBody {
            description: String::new(),
            rules,
            default_effect,
            guardrails: Default::default(),
        },
        updated_by: "admin".into(),
        updated_at: 0,
    };
    Arc::new(CompiledPolicy::compile(version, &env()).expect("compiles"))
}

fn tool_call(user: &str, roles: &[&str], tool: &str, annotations: ToolAnnotations) -> CallFacts {
    CallFacts {
        subject: Subject {
            user: user.into(),
            organization: "org".into(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            groups: vec!["eng".into()],
            teams: vec!["payments".into()],
            service: "billing".into(),
        },
        integration: IntegrationFacts {
            id: "i".into(),
            slug: "github".into(),
            name: "GitHub".into(),
        },
        target: Target::Tool {
            name: tool.into(),
            annotations,
        },
        content: None,
    }
}

fn set(policies: Vec<Arc<CompiledPolicy>>) -> PolicySet {
    PolicySet::new(policies, env())
}

#[test]
fn no_policies_allow_everything() {
    let facts = tool_call("u", &[], "delete_repo", ToolAnnotations::default());
    assert_eq!(set(vec![]).decide(&facts), Decision::Allow);
}

#[test]
fn deny_beats_approval_beats_allow_and_the_first_rule_of_the_winning_effect_decides() {
    let policies = vec![
        policy(
            "b-second",
            vec![
                rule("allow-all", "true", Effect::Allow),
                rule(
                    "deny-deletes",
                    "tool.name.startsWith('delete')",
                    Effect::Deny,
                ),
            ],
            Effect::Allow,
        ),
        policy(
            "a-first",
            vec![
                rule(
                    "gate-destructive",
                    "tool.destructive",
                    Effect::RequireApproval,
                ),
                rule("gate-all", "true", Effect::RequireApproval),
                rule("deny-repos", "tool.name == 'delete_repo'", Effect::Deny),
            ],
            Effect::Allow,
        ),
    ];
    let set = set(policies);
    let destructive = ToolAnnotations::default();
    match set.decide(&tool_call("u", &[], "delete_repo", destructive)) {
        Decision::Deny { rule, reason } => {
            assert_eq!(rule, "a-first@3/deny-repos");
            assert_eq!(reason, "because of deny-repos");
        }
        other => panic!("{other:?}"),
    }
    match set.decide(&tool_call("u", &[], "create_issue", destructive)) {
        Decision::RequireApproval(gate) => {
            assert_eq!(gate.rule, "a-first@3/gate-destructive");
            assert_eq!(gate.approver_role, "approver");
        }
        other => panic!("{other:?}"),
    }
    let verdict = set.explain(&tool_call("u", &[], "delete_repo", destructive));
    assert_eq!(verdict.effect, Effect::Deny);
    let deciding = verdict.deciding.expect("a rule decides");
    assert_eq!(deciding.qualified(), "a-first@3/deny-repos");
    let matched: Vec<_> = verdict.matched.iter().map(|r| r.qualified()).collect();
    assert_eq!(
        matched,
        [
            "a-first@3/gate-destructive",
            "a-first@3/gate-all",
            "a-first@3/deny-repos",
            "b-second@3/allow-all",
            "b-second@3/deny-deletes",
        ]
    );
}

#[test]
fn a_denying_default_refuses_what_no_rule_allows() {
    let set = set(vec![policy(
        "allow-list",
        vec![rule("reads", "tool.read_only", Effect::Allow)],
        Effect::Deny,
    )]);
    let read_only = ToolAnnotations {
        read_only: true,
        destructive: false,
        ..ToolAnnotations::default()
    };
    assert_eq!(
        set.decide(&tool_call("u", &[], "list", read_only)),
        Decision::Allow
    );
    match set.decide(&tool_call("u", &[], "write", ToolAnnotations::default())) {
        Decision::Deny { rule, .. } => assert_eq!(rule, "allow-list@3/(default)"),
        other => panic!("{other:?}"),
    }
    let verdict = set.explain(&tool_call("u", &[], "write", ToolAnnotations::default()));
    assert_eq!((verdict.effect, verdict.deciding), (Effect::Deny, None));
}

#[test]
fn a_rule_that_cannot_be_evaluated_fails_closed() {
    let set = set(vec![policy(
        "p",
        vec![
            rule(
                "allow-files",
                "resource.uri.startsWith('file:')",
                Effect::Allow,
            ),
            rule(
                "deny-secrets",
                "resource.uri.contains('secret')",
                Effect::Deny,
            ),
        ],
        Effect::Allow,
    )]);
    // A tool call has no `resource`: the ALLOW rule does not match, the
    // DENY rule does.
    let facts = tool_call("u", &[], "t", ToolAnnotations::default());
    match set.decide(&facts) {
        Decision::Deny { rule, .. } => assert_eq!(rule, "p@3/deny-secrets"),
        other => panic!("{other:?}"),
    }
    let verdict = set.explain(&facts);
    assert_eq!(verdict.errors.len(), 2);
    assert!(
        verdict.errors[0].1.contains("resource"),
        "{:?}",
        verdict.errors
    );
}

#[test]
fn a_condition_that_gives_no_bool_at_run_time_fails_closed() {
    // `caller.roles[0]` is a string at run time when the caller has a role:
    // CEL could not tell on write.
    let set = set(vec![policy(
        "p",
        vec![rule(
            "odd",
            "caller.roles[0] == 'x' || caller.roles[0]",
            Effect::Deny,
        )],
        Effect::Allow,
    )]);
    let facts = tool_call("u", &["admin"], "t", ToolAnnotations::default());
    assert!(matches!(set.decide(&facts), Decision::Deny { .. }));
}

#[test]
fn groups_teams_service_and_the_integration_are_variables() {
    let set = set(vec![policy(
        "p",
        vec![rule(
            "payments-only",
            "integration.slug == 'github' && !('payments' in caller.teams && 'eng' in caller.groups && caller.service == 'billing')",
            Effect::Deny,
        )],
        Effect::Allow,
    )]);
    let mut facts = tool_call("u", &[], "t", ToolAnnotations::default());
    assert_eq!(set.decide(&facts), Decision::Allow);
    facts.subject.teams = vec!["search".into()];
    assert!(matches!(set.decide(&facts), Decision::Deny { .. }));
}

fn carrying(facts: CallFacts, arguments: serde_json::Value, in_result: &[&str]) -> CallFacts {
    CallFacts {
        content: Some(CallContent {
            arguments: serde_json::from_value(arguments).expect("an object"),
            found_in_arguments: Vec::new(),
            found_in_result: in_result.iter().map(|d| (*d).to_owned()).collect(),
        }),
        ..facts
    }
}

#[test]
fn a_rule_reads_a_calls_arguments_and_findings_and_is_passed_over_in_a_listing() {
    let policies = set(vec![policy(
        "content",
        vec![
            rule("no-prod", "arguments.repo == 'prod'", Effect::Deny),
            rule(
                "no-keys-back",
                "'private_key' in findings.result",
                Effect::Deny,
            ),
        ],
        Effect::Allow,
    )]);
    assert!(policies.reads_content() && policies.reads_findings());
    let call = || tool_call("u", &[], "push", ToolAnnotations::default());
    let denied = |facts: &CallFacts| matches!(policies.decide(facts), Decision::Deny { .. });
    assert!(denied(&carrying(
        call(),
        serde_json::json!({"repo": "prod"}),
        &[]
    )));
    assert!(!denied(&carrying(
        call(),
        serde_json::json!({"repo": "dev"}),
        &[]
    )));
    assert!(denied(&carrying(
        call(),
        serde_json::json!({"repo": "dev"}),
        &["private_key"]
    )));
    // A missing argument fails closed for a denying rule.
    assert!(denied(&carrying(call(), serde_json::json!({}), &[])));
    // A listing has no arguments: the rules that read them do not hide
    // the tool.
    assert_eq!(policies.decide(&call()), Decision::Allow);
}

#[test]
fn a_condition_on_arguments_compiles_and_a_misspelt_variable_is_still_refused() {
    assert!(compile("arguments.repo == 'prod'").is_ok());
    assert!(compile("has(arguments.repo) && 'email' in findings.arguments").is_ok());
    assert!(compile("findings.results == []").is_err(), "no such field");
    assert!(
        compile("argument.repo == 'prod'").is_err(),
        "no such variable"
    );
}

#[test]
fn under_a_denying_default_a_rule_allowing_some_arguments_keeps_the_tool_listed() {
    let policies = set(vec![policy(
        "dev-only",
        vec![rule(
            "dev-repos",
            "has(arguments.repo) && arguments.repo == 'dev'",
            Effect::Allow,
        )],
        Effect::Deny,
    )]);
    let call = || tool_call("u", &[], "push", ToolAnnotations::default());
    assert_eq!(
        policies.decide(&call()),
        Decision::Allow,
        "listed: some call of it is allowed"
    );
    assert_eq!(
        policies.decide(&carrying(call(), serde_json::json!({"repo": "dev"}), &[])),
        Decision::Allow
    );
    assert!(matches!(
        policies.decide(&carrying(call(), serde_json::json!({"repo": "prod"}), &[])),
        Decision::Deny { .. }
    ));
}
