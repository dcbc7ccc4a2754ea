//! The tools a run offers the model, and the map from the names the model
//! sees back to what runs them.
//!
//! MCP tools are named `{slug}__{tool}`, sanitised to `^[a-zA-Z0-9_-]{1,64}$`.
//! A name that is too long, or taken by an earlier tool, is shortened and
//! given a suffix hashed from the integration and the server's tool name, so
//! the same tool keeps the same name from run to run.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use sha2::{Digest, Sha256};

use super::{
    argument_check::{ArgumentChecks, Checked},
    result_check::ResultChecks,
};
use crate::domain::{
    entities::{ClientTool, ToolBinding, ToolTarget},
    ids::IntegrationId,
    model::ToolSpec,
    ports::Capabilities,
};

/// Longest tool name model providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// The tools of a run.
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    /// What the model is offered, shared with every model request.
    pub specs: Arc<[ToolSpec]>,
    /// What runs each name.
    pub bindings: Vec<ToolBinding>,
    /// The agent's allow-lists of server tools, by integration.
    pub filters: BTreeMap<IntegrationId, Vec<String>>,
    /// The MCP tools' input schemas, compiled once for the run's calls.
    pub checks: ArgumentChecks,
    /// The output schemas of the MCP tools that declare one, compiled once
    /// for the run's results.
    pub results: ResultChecks,
    /// MCP tools not offered because their server changed them since the
    /// thread pinned them: a call by one of these names is answered so.
    pub withheld: BTreeSet<String>,
}

impl Toolset {
    /// What runs `name`, if the model was offered it.
    pub fn target(&self, name: &str) -> Option<&ToolTarget> {
        self.bindings
            .iter()
            .find(|b| b.name == name)
            .map(|b| &b.target)
    }

    /// The same tools without those named in `names`, which the model is
    /// not offered; their names stay taken, so the other tools keep theirs.
    #[must_use]
    pub fn withholding(mut self, names: &BTreeSet<String>) -> Self {
        if names.is_empty() {
            return self;
        }
        let specs: Vec<ToolSpec> = self
            .specs
            .iter()
            .filter(|spec| !names.contains(&spec.name))
            .cloned()
            .collect();
        self.specs = specs.into();
        self.bindings.retain(|b| !names.contains(&b.name));
        self.withheld.clone_from(names);
        self
    }

    /// The agent's allow-list of `integration_id`'s tools, passed along to
    /// mcp-service; `None` when the agent has none for it.
    pub fn allowed_tools(&self, integration_id: IntegrationId) -> Option<&[String]> {
        self.filters.get(&integration_id).map(Vec::as_slice)
    }
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn hashed(base: &str, seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let suffix: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // `base` is ASCII after sanitising, so any byte index is a char boundary.
    let keep = base.len().min(MAX_TOOL_NAME - suffix.len() - 1);
    format!("{}_{suffix}", &base[..keep])
}

/// The model-facing name of `tool` of the integration `integration_id` with
/// `slug`, unique among `taken`.
pub fn mcp_tool_name(
    slug: &str,
    integration_id: IntegrationId,
    tool: &str,
    taken: &HashSet<String>,
) -> String {
    let base = sanitize(&format!("{slug}__{tool}"));
    if base.len() <= MAX_TOOL_NAME && !base.is_empty() && !taken.contains(&base) {
        return base;
    }
    let mut attempt = 0u32;
    loop {
        let seed = if attempt == 0 {
            format!("{integration_id}/{tool}")
        } else {
            format!("{integration_id}/{tool}/{attempt}")
        };
        let name = hashed(&base, &seed);
        if !taken.contains(&name) {
            return name;
        }
        attempt += 1;
    }
}

/// Whether `name` is acceptable as a tool name.
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Assembles a run's tools: built-in ones first, then the agent's client
/// tools, then the MCP tools of each discovered integration in the agent's
/// order, filtered by the agent's per-integration allow-lists.
pub fn assemble(
    builtins: Vec<ToolSpec>,
    client_tools: &[ClientTool],
    capabilities: &[Capabilities],
    filters: &BTreeMap<IntegrationId, Vec<String>>,
) -> Toolset {
    let mut specs = Vec::new();
    let mut bindings = Vec::new();
    let mut taken = HashSet::new();
    for spec in builtins {
        taken.insert(spec.name.clone());
        bindings.push(ToolBinding {
            name: spec.name.clone(),
            target: ToolTarget::Builtin,
        });
        specs.push(spec);
    }
    for tool in client_tools {
        if !taken.insert(tool.name.clone()) {
            continue;
        }
        bindings.push(ToolBinding {
            name: tool.name.clone(),
            target: ToolTarget::Client,
        });
        specs.push(ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        });
    }
    for integration in capabilities {
        let allowed = filters.get(&integration.integration_id);
        for tool in &integration.tools {
            if allowed.is_some_and(|allowed| !allowed.contains(&tool.name)) {
                continue;
            }
            let name = mcp_tool_name(
                &integration.slug,
                integration.integration_id,
                &tool.name,
                &taken,
            );
            taken.insert(name.clone());
            bindings.push(ToolBinding {
                name: name.clone(),
                target: ToolTarget::Mcp {
                    integration_id: integration.integration_id,
                    server_tool_name: tool.name.clone(),
                },
            });
            specs.push(ToolSpec {
                name,
                description: tool.description.clone(),
                parameters: tool.input_schema.clone(),
            });
        }
    }
    compiled(specs, bindings, filters, capabilities)
}

/// The toolset of `specs` and `bindings`, with the MCP tools' schemas
/// compiled.
fn compiled(
    specs: Vec<ToolSpec>,
    bindings: Vec<ToolBinding>,
    filters: &BTreeMap<IntegrationId, Vec<String>>,
    capabilities: &[Capabilities],
) -> Toolset {
    Toolset {
        checks: compile_checks(&bindings, &specs),
        results: compile_results(&bindings, capabilities),
        specs: specs.into(),
        bindings,
        filters: filters.clone(),
        withheld: BTreeSet::new(),
    }
}

/// The output schemas of the MCP tools among `bindings` that declare one,
/// compiled for the run's results.
fn compile_results(bindings: &[ToolBinding], capabilities: &[Capabilities]) -> ResultChecks {
    let declared: HashMap<(IntegrationId, &str), &serde_json::Value> = capabilities
        .iter()
        .flat_map(|c| {
            c.tools.iter().filter_map(|tool| {
                let schema = tool.output_schema.as_ref()?;
                Some(((c.integration_id, tool.name.as_str()), schema))
            })
        })
        .collect();
    ResultChecks::compile(bindings.iter().filter_map(|binding| {
        let ToolTarget::Mcp {
            integration_id,
            server_tool_name,
        } = &binding.target
        else {
            return None;
        };
        let schema = declared.get(&(*integration_id, server_tool_name.as_str()))?;
        Some(Checked {
            name: &binding.name,
            integration_id: *integration_id,
            server_tool: server_tool_name,
            schema,
        })
    }))
}

/// The input schemas of the MCP tools among `bindings`, compiled for the
/// run's calls (`specs` are in the same order).
fn compile_checks(bindings: &[ToolBinding], specs: &[ToolSpec]) -> ArgumentChecks {
    ArgumentChecks::compile(bindings.iter().zip(specs).filter_map(|(binding, spec)| {
        match &binding.target {
            ToolTarget::Mcp {
                integration_id,
                server_tool_name,
            } => Some(Checked {
                name: &binding.name,
                integration_id: *integration_id,
                server_tool: server_tool_name,
                schema: &spec.parameters,
            }),
            _ => None,
        }
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::ports::McpTool;

    fn integration(id: u128, slug: &str, tools: &[&str]) -> Capabilities {
        Capabilities {
            integration_id: IntegrationId::fixed(id),
            slug: slug.into(),
            tools: tools
                .iter()
                .map(|name| McpTool {
                    name: (*name).into(),
                    description: String::new(),
                    input_schema: json!({"type": "object"}),
                    output_schema: None,
                })
                .collect(),
            resources: vec![],
            resource_templates: vec![],
            prompts: vec![],
        }
    }

    #[test]
    fn mcp_tools_are_prefixed_and_sanitised() {
        let toolset = assemble(
            vec![],
            &[],
            &[integration(1, "github", &["create issue", "list.repos"])],
            &BTreeMap::new(),
        );
        let names: Vec<_> = toolset.bindings.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["github__create_issue", "github__list_repos"]);
        assert!(matches!(
            toolset.target("github__create_issue"),
            Some(ToolTarget::Mcp { server_tool_name, .. }) if server_tool_name == "create issue"
        ));
    }

    #[test]
    fn long_names_from_two_integrations_sharing_a_prefix_stay_distinct_and_stable() {
        let long = "a_very_long_tool_name_that_goes_on_and_on_beyond_the_limit_of_providers";
        let caps = [
            integration(1, "analytics", &[long]),
            integration(2, "analytics2", &[long]),
        ];
        let first = assemble(vec![], &[], &caps, &BTreeMap::new());
        let again = assemble(vec![], &[], &caps, &BTreeMap::new());
        let names: Vec<_> = first.bindings.iter().map(|b| b.name.clone()).collect();
        assert_eq!(
            names,
            again
                .bindings
                .iter()
                .map(|b| b.name.clone())
                .collect::<Vec<_>>()
        );
        assert_ne!(names[0], names[1]);
        for name in &names {
            assert!(valid_tool_name(name), "{name}");
            assert_eq!(name.len(), MAX_TOOL_NAME);
        }
    }

    #[test]
    fn a_name_taken_by_a_client_tool_gets_a_hashed_name() {
        let client = ClientTool {
            name: "github__search".into(),
            description: String::new(),
            parameters: json!({}),
        };
        let toolset = assemble(
            vec![],
            &[client],
            &[integration(1, "github", &["search"])],
            &BTreeMap::new(),
        );
        assert_eq!(toolset.bindings[0].target, ToolTarget::Client);
        assert!(toolset.bindings[1].name.starts_with("github__search_"));
        assert!(valid_tool_name(&toolset.bindings[1].name));
    }

    #[test]
    fn a_withheld_tool_is_not_offered_and_its_name_is_remembered() {
        let toolset = assemble(
            vec![],
            &[],
            &[integration(1, "x", &["a", "b"])],
            &BTreeMap::new(),
        )
        .withholding(&BTreeSet::from(["x__a".to_owned()]));
        let offered: Vec<_> = toolset.specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(offered, ["x__b"]);
        assert_eq!(toolset.target("x__a"), None);
        assert!(toolset.withheld.contains("x__a"));
        assert!(toolset.target("x__b").is_some());
    }

    #[test]
    fn allow_lists_filter_an_integrations_tools() {
        let filters = BTreeMap::from([(IntegrationId::fixed(1), vec!["b".to_owned()])]);
        let toolset = assemble(
            vec![],
            &[],
            &[
                integration(1, "x", &["a", "b"]),
                integration(2, "y", &["a"]),
            ],
            &filters,
        );
        let names: Vec<_> = toolset.bindings.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["x__b", "y__a"]);
    }
}
