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
    search::{Searchable, ToolIndex},
};
use crate::domain::{
    entities::{ClientTool, ToolBinding, ToolOverride, ToolTarget},
    ids::IntegrationId,
    model::ToolSpec,
    ports::{Capabilities, McpTool},
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
    /// The server's own descriptions of the tools the agent describes
    /// otherwise, by the names the model sees: what is pinned.
    pub server_descriptions: HashMap<String, String>,
    /// With tool search: what the model is offered instead of `specs` (every
    /// tool but the MCP ones, which `search_tools` finds), and their index.
    pub search: Option<(Arc<[ToolSpec]>, Searchable)>,
}

impl Toolset {
    /// The tools the model is offered: every tool, or with tool search
    /// every tool but the MCP ones.
    pub fn for_model(&self) -> Arc<[ToolSpec]> {
        match &self.search {
            Some((offered, _)) => Arc::clone(offered),
            None => Arc::clone(&self.specs),
        }
    }

    /// The index of the MCP tools, for `search_tools`; none without tool
    /// search.
    pub fn search_index(&self) -> Option<&ToolIndex> {
        let (_, searchable) = self.search.as_ref()?;
        Some(searchable.index(&self.specs, &self.bindings))
    }

    /// The same tools, the MCP ones found by the built-in search instead of
    /// offered to the model (`search_tools` and `call_tool` are among the
    /// built-in tools).
    #[must_use]
    pub fn searched(mut self) -> Self {
        let offered: Vec<ToolSpec> = self
            .specs
            .iter()
            .zip(&self.bindings)
            .filter(|(_, binding)| !matches!(binding.target, ToolTarget::Mcp { .. }))
            .map(|(spec, _)| spec.clone())
            .collect();
        self.search = Some((offered.into(), Searchable::default()));
        self
    }

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
        // The index is made again, without them.
        if let Some((_, searchable)) = &mut self.search {
            *searchable = Searchable::default();
        }
        self
    }

    /// The description the server gave tool `name` (the one the model reads
    /// when the agent does not override it).
    pub fn server_description<'a>(&'a self, name: &str, offered: &'a str) -> &'a str {
        self.server_descriptions
            .get(name)
            .map_or(offered, String::as_str)
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
    unique_name(
        sanitize(&format!("{slug}__{tool}")),
        integration_id,
        tool,
        taken,
    )
}

/// `base` (ASCII), or when it is too long or taken, `base` shortened and
/// given a suffix hashed from `tool` of `integration_id`, unique among
/// `taken`.
fn unique_name(
    base: String,
    integration_id: IntegrationId,
    tool: &str,
    taken: &HashSet<String>,
) -> String {
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
/// order, filtered by the agent's per-integration allow-lists and shown as
/// its overrides say (a chosen name taken by an earlier tool is treated as
/// any taken name).
pub fn assemble(
    builtins: Vec<ToolSpec>,
    client_tools: &[ClientTool],
    capabilities: &[Capabilities],
    filters: &BTreeMap<IntegrationId, Vec<String>>,
    overrides: &[ToolOverride],
) -> Toolset {
    let overrides = Overrides::new(overrides);
    let mut assembly = Assembly::default();
    for spec in builtins {
        assembly.offer(spec, ToolTarget::Builtin);
    }
    for tool in client_tools {
        if assembly.taken.contains(&tool.name) {
            continue;
        }
        let spec = ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        };
        assembly.offer(spec, ToolTarget::Client);
    }
    for integration in capabilities {
        let allowed = filters.get(&integration.integration_id);
        for tool in &integration.tools {
            if allowed.is_some_and(|allowed| !allowed.contains(&tool.name)) {
                continue;
            }
            let over = overrides.of(integration.integration_id, &tool.name);
            if !over.is_some_and(|o| o.hidden) {
                assembly.offer_mcp(integration, tool, over);
            }
        }
    }
    let Assembly {
        specs,
        bindings,
        server_descriptions,
        ..
    } = assembly;
    let mut toolset = compiled(specs, bindings, filters, capabilities);
    toolset.server_descriptions = server_descriptions;
    toolset
}

/// An agent's overrides, by tool.
#[derive(Debug, Default)]
struct Overrides<'a>(HashMap<(IntegrationId, &'a str), &'a ToolOverride>);

impl<'a> Overrides<'a> {
    fn new(overrides: &'a [ToolOverride]) -> Self {
        Self(
            overrides
                .iter()
                .map(|o| ((o.integration_id, o.tool.as_str()), o))
                .collect(),
        )
    }

    /// The override of `tool` of `integration_id`, if any.
    fn of(&self, integration_id: IntegrationId, tool: &str) -> Option<&'a ToolOverride> {
        self.0.get(&(integration_id, tool)).copied()
    }
}

/// The tools offered so far, and the names they took.
#[derive(Default)]
struct Assembly {
    specs: Vec<ToolSpec>,
    bindings: Vec<ToolBinding>,
    taken: HashSet<String>,
    server_descriptions: HashMap<String, String>,
}

impl Assembly {
    fn offer(&mut self, spec: ToolSpec, target: ToolTarget) {
        self.taken.insert(spec.name.clone());
        self.bindings.push(ToolBinding {
            name: spec.name.clone(),
            target,
        });
        self.specs.push(spec);
    }

    /// Offers MCP tool `tool` of `integration` as the agent's override
    /// `over` (if any) shows it.
    fn offer_mcp(
        &mut self,
        integration: &Capabilities,
        tool: &McpTool,
        over: Option<&ToolOverride>,
    ) {
        let id = integration.integration_id;
        let name = match over.and_then(|o| o.name.as_deref()) {
            Some(chosen) => unique_name(chosen.to_owned(), id, &tool.name, &self.taken),
            None => mcp_tool_name(&integration.slug, id, &tool.name, &self.taken),
        };
        let description = match over.and_then(|o| o.description.clone()) {
            Some(description) => {
                self.server_descriptions
                    .insert(name.clone(), tool.description.clone());
                description
            }
            None => tool.description.clone(),
        };
        let target = ToolTarget::Mcp {
            integration_id: id,
            server_tool_name: tool.name.clone(),
        };
        let spec = ToolSpec {
            name,
            description,
            parameters: tool.input_schema.clone(),
        };
        self.offer(spec, target);
    }
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
        server_descriptions: HashMap::new(),
        search: None,
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
mod tests;
