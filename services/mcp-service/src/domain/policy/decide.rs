//! An organization's compiled policies deciding one call.

use std::{collections::HashMap, sync::Arc};

use cel::{Context, Value};

use super::{CompiledPolicy, Effect, Gate, Rule};

/// The caller as rules see it (`caller.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    /// User id.
    pub user: String,
    /// Organization id.
    pub organization: String,
    /// Roles in the organization.
    pub roles: Vec<String>,
    /// Groups.
    pub groups: Vec<String>,
    /// Teams.
    pub teams: Vec<String>,
    /// The calling service, empty when unknown.
    pub service: String,
}

/// What a tool's server says of it (its MCP annotations). A server that
/// says nothing is taken at the MCP defaults, the cautious reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolHints {
    /// Only reads.
    pub read_only: bool,
    /// May destroy or overwrite.
    pub destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// Reaches beyond a closed world (the internet, say).
    pub open_world: bool,
}

impl Default for ToolHints {
    fn default() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

/// What is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A tool, by its server's own name, with its annotations.
    Tool {
        /// The name.
        name: String,
        /// Its annotations.
        hints: ToolHints,
    },
    /// A resource, by URI.
    Resource {
        /// The URI.
        uri: String,
    },
    /// A prompt, by name.
    Prompt {
        /// The name.
        name: String,
    },
}

/// One call as rules see it.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// Who calls.
    pub subject: &'a Subject,
    /// The integration's id, slug and display name.
    pub integration: (&'a str, &'a str, &'a str),
    /// What they call.
    pub target: &'a Target,
}

/// A rule of a policy version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    /// The policy's name.
    pub policy: String,
    /// Its version.
    pub version: i64,
    /// The rule.
    pub rule: Rule,
}

impl RuleRef {
    /// `policy@version/rule`, as denials, approvals and the audit trail
    /// name a rule.
    pub fn label(&self) -> String {
        format!("{}@{}/{}", self.policy, self.version, self.rule.name)
    }

    /// The approval a gating rule asks for.
    pub fn gate(&self) -> Gate {
        Gate {
            rule: self.label(),
            reason: self.rule.reason.clone(),
            approver_role: self.rule.approver_role.clone(),
            caller_may_approve: self.rule.caller_may_approve,
        }
    }
}

/// What the policies decided about a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// The decision.
    pub effect: Effect,
    /// The deciding rule; `None` when no rule matched and the default
    /// decided.
    pub deciding: Option<RuleRef>,
    /// Every rule that matched (or failed closed), in evaluation order.
    pub matched: Vec<RuleRef>,
    /// Rules whose condition could not be evaluated, and why.
    pub errors: Vec<(RuleRef, String)>,
}

/// An organization's policies, compiled, by name.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    policies: Vec<Arc<CompiledPolicy>>,
}

impl PolicySet {
    /// The set of `policies`, evaluated in name order.
    pub fn new(mut policies: Vec<Arc<CompiledPolicy>>) -> Self {
        policies.sort_by(|a, b| a.policy.name.cmp(&b.policy.name));
        Self { policies }
    }

    /// Whether the organization has no policy (every member may call
    /// everything, as before policies existed).
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Decides `call`: the strongest effect of the matching rules, the first
    /// such rule deciding; a rule that cannot be evaluated matches when it
    /// would deny or gate, and does not when it would allow.
    pub fn decide(&self, call: CallFacts<'_>) -> Explanation {
        let context = context(call);
        let mut matched: Vec<RuleRef> = Vec::new();
        let mut errors = Vec::new();
        for compiled in &self.policies {
            let policy = &compiled.policy;
            for (rule, program) in policy.rules.iter().zip(&compiled.programs) {
                let holds = match program.execute(&context) {
                    Ok(Value::Bool(holds)) => Ok(holds),
                    Ok(other) => Err(format!("returned {:?}, not a bool", other.type_of())),
                    Err(error) => Err(error.to_string()),
                };
                let reference = || RuleRef {
                    policy: policy.name.clone(),
                    version: policy.version,
                    rule: rule.clone(),
                };
                match holds {
                    Ok(true) => matched.push(reference()),
                    Ok(false) => {}
                    Err(error) => {
                        if rule.effect != Effect::Allow {
                            matched.push(reference());
                        }
                        errors.push((reference(), error));
                    }
                }
            }
        }
        let strongest = matched.iter().map(|r| r.rule.effect).max();
        let default_deny = self.policies.iter().any(|p| p.policy.default_deny);
        let effect = strongest.unwrap_or(if default_deny {
            Effect::Deny
        } else {
            Effect::Allow
        });
        let deciding = matched.iter().find(|r| r.rule.effect == effect).cloned();
        Explanation {
            effect,
            deciding,
            matched,
            errors,
        }
    }
}

fn list(items: &[String]) -> Value {
    Value::List(Arc::new(
        items.iter().map(|s| Value::from(s.as_str())).collect(),
    ))
}

fn object(fields: Vec<(&'static str, Value)>) -> Value {
    Value::from(fields.into_iter().collect::<HashMap<_, _>>())
}

/// The variables rules are written over (policy.proto, `PolicyRule`).
fn context(call: CallFacts<'_>) -> Context<'static, 'static> {
    let subject = call.subject;
    let (id, slug, name) = call.integration;
    let mut context = Context::default();
    context.add_variable_from_value(
        "caller",
        object(vec![
            ("user", Value::from(subject.user.as_str())),
            ("organization", Value::from(subject.organization.as_str())),
            ("roles", list(&subject.roles)),
            ("groups", list(&subject.groups)),
            ("teams", list(&subject.teams)),
            ("service", Value::from(subject.service.as_str())),
        ]),
    );
    context.add_variable_from_value(
        "integration",
        object(vec![
            ("id", Value::from(id)),
            ("slug", Value::from(slug)),
            ("name", Value::from(name)),
        ]),
    );
    let (kind, tool, resource, prompt) = match call.target {
        Target::Tool { name, hints } => (
            "tool",
            object(vec![
                ("name", Value::from(name.as_str())),
                ("read_only", Value::Bool(hints.read_only)),
                ("destructive", Value::Bool(hints.destructive)),
                ("idempotent", Value::Bool(hints.idempotent)),
                ("open_world", Value::Bool(hints.open_world)),
            ]),
            Value::Null,
            Value::Null,
        ),
        Target::Resource { uri } => (
            "resource",
            Value::Null,
            object(vec![("uri", Value::from(uri.as_str()))]),
            Value::Null,
        ),
        Target::Prompt { name } => (
            "prompt",
            Value::Null,
            Value::Null,
            object(vec![("name", Value::from(name.as_str()))]),
        ),
    };
    context.add_variable_from_value("request", object(vec![("kind", Value::from(kind))]));
    context.add_variable_from_value("tool", tool);
    context.add_variable_from_value("resource", resource);
    context.add_variable_from_value("prompt", prompt);
    context
}
