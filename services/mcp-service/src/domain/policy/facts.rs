//! What a rule's condition sees of a call: the caller, the integration and
//! the target, as CEL variables.

use std::{collections::HashMap, sync::Arc};

use cel::{Context, Env, Value};
use serde_json::Map;
use switchboard_auth::Principal;

/// The caller as policies see them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subject {
    /// User id.
    pub user: String,
    /// Organization id.
    pub organization: String,
    /// Roles in the organization.
    pub roles: Vec<String>,
    /// Groups, from the token.
    pub groups: Vec<String>,
    /// Teams, from the token.
    pub teams: Vec<String>,
    /// The calling service; empty when the token names none.
    pub service: String,
}

impl From<&Principal> for Subject {
    fn from(principal: &Principal) -> Self {
        Self {
            user: principal.user_id.clone(),
            organization: principal.org_id.clone(),
            roles: principal.roles.clone(),
            groups: principal.groups.clone(),
            teams: principal.teams.clone(),
            service: principal.service.clone(),
        }
    }
}

/// The integration called.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntegrationFacts {
    /// Its id.
    pub id: String,
    /// Its slug.
    pub slug: String,
    /// Its display name.
    pub name: String,
}

/// A tool's annotations: the server's own claims about it, not facts
/// checked by anyone. A server that says nothing gets MCP's defaults, which
/// assume the worst (destructive, not read-only, open-world,
/// not idempotent), so that a rule keyed on them fails closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint`.
    pub destructive: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
    /// `openWorldHint`.
    pub open_world: bool,
}

impl Default for ToolAnnotations {
    fn default() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        }
    }
}

impl ToolAnnotations {
    /// The annotations of a discovered tool, each hint the server leaves
    /// out at its default.
    pub fn of_tool(tool: &rmcp::model::Tool) -> Self {
        let defaults = Self::default();
        let Some(said) = &tool.annotations else {
            return defaults;
        };
        Self {
            read_only: said.read_only_hint.unwrap_or(defaults.read_only),
            destructive: said.destructive_hint.unwrap_or(defaults.destructive),
            idempotent: said.idempotent_hint.unwrap_or(defaults.idempotent),
            open_world: said.open_world_hint.unwrap_or(defaults.open_world),
        }
    }
}

/// What is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A tool, by its own name.
    Tool {
        /// The tool's name.
        name: String,
        /// Its annotations.
        annotations: ToolAnnotations,
    },
    /// A resource, by URI (or URI template, for Discover's templates).
    Resource {
        /// The URI.
        uri: String,
    },
    /// A prompt, by name.
    Prompt {
        /// The prompt's name.
        name: String,
    },
}

impl Target {
    /// `request.kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tool { .. } => "tool",
            Self::Resource { .. } => "resource",
            Self::Prompt { .. } => "prompt",
        }
    }
}

/// What a call carries, as conditions see it: its arguments and the names
/// of the detectors whose findings the guardrails acted on, in the
/// arguments and, once the server has answered, in the result. Gathered
/// only when a rule reads `arguments` or `findings`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContent {
    /// The call's arguments (a tool's or a prompt's), after the guardrails.
    pub arguments: Map<String, serde_json::Value>,
    /// The detectors found in the arguments.
    pub found_in_arguments: Vec<String>,
    /// The detectors found in the result; empty before the call.
    pub found_in_result: Vec<String>,
}

/// Everything a condition sees of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFacts {
    /// Who calls.
    pub subject: Subject,
    /// Which integration.
    pub integration: IntegrationFacts,
    /// What they call.
    pub target: Target,
    /// What the call carries; `None` where there is no call (a listing,
    /// an explanation), and rules that read it are passed over.
    pub content: Option<CallContent>,
}

fn text(value: &str) -> Value {
    Value::String(Arc::new(value.to_owned()))
}

fn texts(values: &[String]) -> Value {
    Value::List(Arc::new(values.iter().map(|v| text(v)).collect()))
}

fn object(fields: Vec<(&'static str, Value)>) -> Value {
    Value::from(fields.into_iter().collect::<HashMap<_, _>>())
}

fn findings_value(in_arguments: &[String], in_result: &[String]) -> Value {
    object(vec![
        ("arguments", texts(in_arguments)),
        ("result", texts(in_result)),
    ])
}

/// `arguments` as CEL sees them: JSON's objects, arrays, strings, numbers,
/// booleans and null; an object CEL cannot hold (none the call's bounds
/// let through) is an empty map, so rules reading it fail closed.
fn arguments_value(arguments: &Map<String, serde_json::Value>) -> Value {
    cel::to_value(arguments).unwrap_or_else(|_| object(Vec::new()))
}

fn tool_value(name: &str, annotations: ToolAnnotations) -> Value {
    object(vec![
        ("name", text(name)),
        ("read_only", Value::Bool(annotations.read_only)),
        ("destructive", Value::Bool(annotations.destructive)),
        ("idempotent", Value::Bool(annotations.idempotent)),
        ("open_world", Value::Bool(annotations.open_world)),
    ])
}

impl CallFacts {
    /// The variables of the call: `caller`, `integration` and `request`
    /// always, the one of `tool`, `resource` and `prompt` that the call
    /// has, and `arguments` and `findings` when its content is known. A
    /// condition reading one the call does not have fails to evaluate, and
    /// fails closed.
    pub fn context<'a>(&self, env: &Arc<Env>) -> Context<'a, 'a> {
        let mut context = self.common(env);
        if let Some(content) = &self.content {
            context.add_variable_from_value("arguments", arguments_value(&content.arguments));
            context.add_variable_from_value(
                "findings",
                findings_value(&content.found_in_arguments, &content.found_in_result),
            );
        }
        match &self.target {
            Target::Tool { name, annotations } => {
                context.add_variable_from_value("tool", tool_value(name, *annotations));
            }
            Target::Resource { uri } => {
                context.add_variable_from_value("resource", object(vec![("uri", text(uri))]));
            }
            Target::Prompt { name } => {
                context.add_variable_from_value("prompt", object(vec![("name", text(name))]));
            }
        }
        context
    }

    fn common<'a>(&self, env: &Arc<Env>) -> Context<'a, 'a> {
        let mut context = Context::with_env(env.clone());
        let s = &self.subject;
        let caller = object(vec![
            ("user", text(&s.user)),
            ("organization", text(&s.organization)),
            ("roles", texts(&s.roles)),
            ("groups", texts(&s.groups)),
            ("teams", texts(&s.teams)),
            ("service", text(&s.service)),
        ]);
        let i = &self.integration;
        let integration = object(vec![
            ("id", text(&i.id)),
            ("slug", text(&i.slug)),
            ("name", text(&i.name)),
        ]);
        context.add_variable_from_value("caller", caller);
        context.add_variable_from_value("integration", integration);
        context
            .add_variable_from_value("request", object(vec![("kind", text(self.target.kind()))]));
        context
    }

    /// Contexts for checking a condition on write: a call of each kind,
    /// with sample values and every variable bound, so that only a name
    /// that exists nowhere, or a type that fits nothing, is an error.
    pub fn probes<'a>(env: &Arc<Env>) -> Vec<Context<'a, 'a>> {
        let targets = [
            Target::Tool {
                name: String::new(),
                annotations: ToolAnnotations::default(),
            },
            Target::Resource { uri: String::new() },
            Target::Prompt {
                name: String::new(),
            },
        ];
        targets
            .into_iter()
            .map(|target| {
                let facts = Self {
                    subject: Subject::default(),
                    integration: IntegrationFacts::default(),
                    target,
                    content: None,
                };
                let mut context = facts.common(env);
                context.add_variable_from_value("arguments", object(Vec::new()));
                context.add_variable_from_value("findings", findings_value(&[], &[]));
                context.add_variable_from_value("tool", tool_value("", ToolAnnotations::default()));
                context.add_variable_from_value("resource", object(vec![("uri", text(""))]));
                context.add_variable_from_value("prompt", object(vec![("name", text(""))]));
                context
            })
            .collect()
    }
}
