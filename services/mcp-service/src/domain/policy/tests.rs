use super::*;

fn rule(name: &str, condition: &str, effect: Effect) -> Rule {
    Rule {
        name: name.to_owned(),
        condition: condition.to_owned(),
        effect,
        reason: format!("{name} says so"),
        approver_role: if effect == Effect::RequireApproval {
            "approver".to_owned()
        } else {
            String::new()
        },
        caller_may_approve: false,
    }
}

fn policy(name: &str, rules: Vec<Rule>) -> Policy {
    Policy {
        name: name.to_owned(),
        description: String::new(),
        rules,
        default_deny: false,
        version: 1,
    }
}

fn set(policies: Vec<Policy>) -> PolicySet {
    PolicySet::new(
        policies
            .into_iter()
            .map(|p| compile(p, PolicyLimits::default()).expect("compiles"))
            .collect(),
    )
}

fn member(roles: &[&str]) -> Subject {
    Subject {
        user: "u1".to_owned(),
        organization: "org".to_owned(),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        teams: vec!["payments".to_owned()],
        ..Subject::default()
    }
}

fn tool(name: &str, hints: ToolHints) -> Target {
    Target::Tool {
        name: name.to_owned(),
        hints,
    }
}

const READ_ONLY: ToolHints = ToolHints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

fn decide(set: &PolicySet, subject: &Subject, target: &Target) -> Explanation {
    set.decide(CallFacts {
        subject,
        integration: ("id-1", "github", "GitHub"),
        target,
    })
}

#[test]
fn without_policies_every_call_is_allowed() {
    let e = decide(
        &set(vec![]),
        &member(&[]),
        &tool("delete_repo", ToolHints::default()),
    );
    assert_eq!(e.effect, Effect::Allow);
    assert_eq!(e.deciding, None);
}

#[test]
fn read_only_for_members_denies_a_write_and_allows_a_read() {
    let policies = set(vec![policy(
        "read-only-members",
        vec![rule(
            "writes-need-admin",
            "request.kind == 'tool' && !tool.read_only && !('admin' in caller.roles)",
            Effect::Deny,
        )],
    )]);
    let write = decide(
        &policies,
        &member(&["member"]),
        &tool("create_issue", ToolHints::default()),
    );
    assert_eq!(write.effect, Effect::Deny);
    assert_eq!(
        write.deciding.map(|r| r.label()).as_deref(),
        Some("read-only-members@1/writes-need-admin")
    );
    let read = decide(
        &policies,
        &member(&["member"]),
        &tool("list_issues", READ_ONLY),
    );
    assert_eq!(read.effect, Effect::Allow);
    let admin = decide(
        &policies,
        &member(&["admin"]),
        &tool("create_issue", ToolHints::default()),
    );
    assert_eq!(admin.effect, Effect::Allow);
    let resource = Target::Resource {
        uri: "file:///a".to_owned(),
    };
    assert_eq!(
        decide(&policies, &member(&[]), &resource).effect,
        Effect::Allow
    );
}

#[test]
fn deny_overrides_approval_which_overrides_allow_whatever_the_order() {
    let policies = set(vec![
        policy("a", vec![rule("allow-all", "true", Effect::Allow)]),
        policy(
            "b",
            vec![
                rule(
                    "gate-destructive",
                    "tool.destructive",
                    Effect::RequireApproval,
                ),
                rule(
                    "no-deletes",
                    "tool.name.startsWith('delete_')",
                    Effect::Deny,
                ),
            ],
        ),
    ]);
    let delete = decide(
        &policies,
        &member(&[]),
        &tool("delete_repo", ToolHints::default()),
    );
    assert_eq!(delete.effect, Effect::Deny);
    assert_eq!(delete.matched.len(), 3);
    let push = decide(&policies, &member(&[]), &tool("push", ToolHints::default()));
    assert_eq!(push.effect, Effect::RequireApproval);
    let gate = push.deciding.expect("a rule decides").gate();
    assert_eq!(gate.rule, "b@1/gate-destructive");
    assert_eq!(gate.approver_role, "approver");
    assert_eq!(
        decide(&policies, &member(&[]), &tool("get", READ_ONLY)).effect,
        Effect::Allow
    );
}

#[test]
fn a_default_deny_policy_turns_the_organization_into_an_allow_list() {
    let mut only_payments = policy(
        "payments-only",
        vec![rule(
            "payments-team",
            "integration.slug == 'github' && 'payments' in caller.teams",
            Effect::Allow,
        )],
    );
    only_payments.default_deny = true;
    let policies = set(vec![only_payments]);
    assert_eq!(
        decide(&policies, &member(&[]), &tool("x", READ_ONLY)).effect,
        Effect::Allow
    );
    let mut outsider = member(&[]);
    outsider.teams.clear();
    let refused = decide(&policies, &outsider, &tool("x", READ_ONLY));
    assert_eq!(refused.effect, Effect::Deny);
    assert_eq!(refused.deciding, None);
}

#[test]
fn a_rule_that_cannot_be_evaluated_fails_closed() {
    // `tool` is null for a resource read: the field does not exist.
    let policies = set(vec![policy(
        "p",
        vec![
            rule("deny-destructive", "tool.destructive", Effect::Deny),
            rule("allow-named", "tool.name == 'x'", Effect::Allow),
            rule("not-a-bool", "caller.user", Effect::Deny),
        ],
    )]);
    let read = Target::Resource {
        uri: "file:///x".to_owned(),
    };
    let e = decide(&policies, &member(&[]), &read);
    assert_eq!(e.effect, Effect::Deny);
    assert_eq!(e.errors.len(), 3);
    assert!(
        e.errors
            .iter()
            .any(|(r, why)| r.rule.name == "not-a-bool" && why.contains("not a bool"))
    );
    assert_eq!(
        e.matched.len(),
        2,
        "the allow rule that failed does not match"
    );
}

#[test]
fn a_condition_that_does_not_compile_is_refused_with_its_position() {
    let refused = compile(
        policy(
            "p",
            vec![
                rule("ok", "true", Effect::Allow),
                rule("bad", "caller.roles +", Effect::Deny),
            ],
        ),
        PolicyLimits::default(),
    )
    .expect_err("refused");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].field, "policy.rules[1].condition");
    assert!(
        refused[0].description.starts_with("line 1, column "),
        "{}",
        refused[0].description
    );
}

#[test]
fn names_effects_and_counts_are_checked() {
    let mut gated = rule("gated", "true", Effect::RequireApproval);
    gated.approver_role.clear();
    let refused = compile(
        policy(
            "Bad Name",
            vec![
                rule("dup", "true", Effect::Allow),
                rule("dup", "true", Effect::Allow),
                gated,
            ],
        ),
        PolicyLimits::default(),
    )
    .expect_err("refused");
    let fields: Vec<&str> = refused.iter().map(|v| v.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "policy.name",
            "policy.rules[1].name",
            "policy.rules[2].approver_role"
        ]
    );
    let limits = PolicyLimits {
        max_rules: 2,
        max_condition_bytes: 16,
    };
    let rules = |n| {
        (0..n)
            .map(|i| rule(&format!("r{i}"), "true", Effect::Allow))
            .collect()
    };
    assert!(compile(policy("p", rules(2)), limits).is_ok());
    assert_eq!(
        compile(policy("p", rules(3)), limits).expect_err("too many")[0].field,
        "policy.rules"
    );
    let at_limit = rule("r", &format!("'{}'== ''", "a".repeat(9)), Effect::Allow);
    assert_eq!(at_limit.condition.len(), 16);
    assert!(compile(policy("p", vec![at_limit.clone()]), limits).is_ok());
    let mut over = at_limit;
    over.condition.push(' ');
    assert!(
        compile(policy("p", vec![over]), limits).expect_err("long")[0]
            .description
            .contains("longer than 16 bytes")
    );
}

#[test]
fn hostile_conditions_are_refused_without_harm() {
    let limits = PolicyLimits {
        max_rules: 10,
        max_condition_bytes: 1 << 20,
    };
    let refused = |condition: String| {
        compile(
            policy("p", vec![rule("r", &condition, Effect::Deny)]),
            limits,
        )
        .expect_err("refused")[0]
            .description
            .clone()
    };
    // 100,000 nested brackets never reach the parser.
    let deep = format!("{}true{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(refused(deep).contains("nested more than 32 deep"));
    // A long operator chain parses, and is refused for its depth: evaluating
    // it would recurse once per operator.
    let chain = vec!["1"; 2000].join(" + ") + " == 0";
    assert!(refused(chain).contains("deep; at most 32"));
    let within = vec!["true"; 16].join(" && ");
    assert!(compile(policy("p", vec![rule("r", &within, Effect::Deny)]), limits).is_ok());
    // Loops within loops multiply a call's work.
    let nested = "caller.roles.exists(a, caller.groups.exists(b, a == b))".to_owned();
    assert!(refused(nested).contains("nests a loop"));
    assert!(
        compile(
            policy(
                "p",
                vec![rule("r", "caller.roles.exists(a, a == 'x')", Effect::Deny)]
            ),
            limits
        )
        .is_ok()
    );
}
