//! A toolset as written, checked on write: its name, its bounds, and each
//! member's id and selections. Whether the members' integrations exist is
//! the admin's check ([`super::admin`]), which needs the repository.

use std::collections::HashSet;

use switchboard_server::FieldViolation;

use super::model::{Member, NAME_PATTERN, ToolOverride, ToolsetBody, ToolsetLimits, ToolsetName};
use crate::domain::{integration::IntegrationId, surface::PREFIX_SEPARATOR};

/// The longest description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// The longest tool name a selection may hold, in bytes.
pub const MAX_TOOL_NAME_BYTES: usize = 256;
/// The longest URI or URI template a selection may hold, in bytes.
pub const MAX_URI_BYTES: usize = 2048;
/// The longest description an override gives a tool, in characters.
pub const MAX_OVERRIDE_DESCRIPTION_CHARS: usize = 4096;
/// The pattern an override's name matches (and it holds no `__`).
pub const OVERRIDE_NAME_PATTERN: &str = "^[a-zA-Z0-9_-]{1,64}$";

/// A member as the caller sent it.
#[derive(Debug, Clone, Default)]
pub struct MemberInput {
    /// The integration's id, as sent.
    pub integration_id: String,
    /// The tool selection; `None` when unset.
    pub tools: Option<Vec<String>>,
    /// The resource selection; `None` when unset.
    pub resources: Option<Vec<String>>,
    /// How some of its tools are shown.
    pub overrides: Vec<OverrideInput>,
}

/// An override as the caller sent it: empty strings are unset.
#[derive(Debug, Clone, Default)]
pub struct OverrideInput {
    /// The server's name of the tool.
    pub tool: String,
    /// The name shown instead.
    pub name: String,
    /// The description shown instead.
    pub description: String,
    /// Whether the tool is hidden.
    pub hidden: bool,
}

/// A toolset's description and members as the caller sent them.
#[derive(Debug, Clone, Default)]
pub struct BodyInput {
    /// Description.
    pub description: String,
    /// Members.
    pub members: Vec<MemberInput>,
}

/// A toolset's name from a request, or the field's error.
pub fn toolset_name(field: &str, name: &str) -> Result<ToolsetName, FieldViolation> {
    ToolsetName::parse(name)
        .ok_or_else(|| FieldViolation::new(field, format!("must match {NAME_PATTERN}")))
}

/// The body, or every field that is wrong.
pub fn validate_body(
    input: BodyInput,
    limits: ToolsetLimits,
) -> Result<ToolsetBody, Vec<FieldViolation>> {
    let mut violations = Vec::new();
    if input.description.len() > MAX_DESCRIPTION_BYTES {
        violations.push(FieldViolation::new(
            "toolset.description",
            format!("at most {MAX_DESCRIPTION_BYTES} bytes"),
        ));
    }
    if input.members.len() > limits.max_members {
        violations.push(FieldViolation::new(
            "toolset.members",
            format!("at most {} members", limits.max_members),
        ));
        return Err(violations);
    }
    let mut seen = Seen::default();
    let members: Vec<Member> = input
        .members
        .into_iter()
        .enumerate()
        .filter_map(|(i, member)| validate_member(i, member, limits, &mut seen, &mut violations))
        .collect();
    if violations.is_empty() {
        Ok(ToolsetBody {
            description: input.description,
            members,
        })
    } else {
        Err(violations)
    }
}

/// What earlier members of a toolset took: their integrations, and the
/// names their overrides give.
#[derive(Default)]
struct Seen {
    integrations: HashSet<IntegrationId>,
    names: HashSet<String>,
}

fn validate_member(
    i: usize,
    input: MemberInput,
    limits: ToolsetLimits,
    seen: &mut Seen,
    violations: &mut Vec<FieldViolation>,
) -> Option<Member> {
    let field = |name: &str| format!("toolset.members[{i}].{name}");
    let before = violations.len();
    let id = match IntegrationId::parse(&field("integration_id"), &input.integration_id) {
        Ok(id) if !seen.integrations.insert(id) => {
            violations.push(FieldViolation::new(
                field("integration_id"),
                "another member names this integration",
            ));
            None
        }
        Ok(id) => Some(id),
        Err(violation) => {
            violations.push(violation);
            None
        }
    };
    let selection = |entries: &Option<Vec<String>>, name: &str, max_bytes: usize| {
        entries
            .as_deref()
            .and_then(|entries| check_selection(&field(name), entries, limits, max_bytes))
    };
    violations.extend(selection(&input.tools, "tools", MAX_TOOL_NAME_BYTES));
    violations.extend(selection(&input.resources, "resources", MAX_URI_BYTES));
    let overrides = validate_overrides(
        &field("tool_overrides"),
        input.overrides,
        (input.tools.as_deref(), limits),
        &mut seen.names,
        violations,
    );
    (violations.len() == before).then_some(Member {
        integration_id: id?,
        tools: input.tools,
        resources: input.resources,
        overrides,
    })
}

/// A member's overrides, adding what is wrong with them to `violations`:
/// at most a selection's entries, each naming a tool the member serves at
/// most once, each new name valid and given once in the toolset (`names`).
fn validate_overrides(
    field: &str,
    inputs: Vec<OverrideInput>,
    (selected, limits): (Option<&[String]>, ToolsetLimits),
    names: &mut HashSet<String>,
    violations: &mut Vec<FieldViolation>,
) -> Vec<ToolOverride> {
    if inputs.len() > limits.max_selection {
        violations.push(FieldViolation::new(
            field,
            format!("at most {} overrides", limits.max_selection),
        ));
        return Vec::new();
    }
    let mut tools = HashSet::new();
    let mut overrides = Vec::with_capacity(inputs.len());
    for (j, input) in inputs.into_iter().enumerate() {
        let at = |name: &str| format!("{field}[{j}].{name}");
        let tool_problem = if input.tool.trim().is_empty() {
            Some("must name the server's tool".to_owned())
        } else if input.tool.len() > MAX_TOOL_NAME_BYTES || input.tool.chars().any(char::is_control)
        {
            Some(format!(
                "at most {MAX_TOOL_NAME_BYTES} bytes, no control characters"
            ))
        } else if !tools.insert(input.tool.clone()) {
            Some("another override names this tool".to_owned())
        } else if selected.is_some_and(|s| !s.contains(&input.tool)) {
            Some("the member's tool selection does not serve this tool".to_owned())
        } else {
            None
        };
        violations.extend(tool_problem.map(|p| FieldViolation::new(at("tool"), p)));
        if !input.name.is_empty() {
            if !is_override_name(&input.name) {
                violations.push(FieldViolation::new(
                    at("name"),
                    format!("must match {OVERRIDE_NAME_PATTERN} and hold no \"__\""),
                ));
            } else if !names.insert(input.name.clone()) {
                violations.push(FieldViolation::new(
                    at("name"),
                    "another override of the toolset gives this name",
                ));
            }
        }
        if input.description.chars().count() > MAX_OVERRIDE_DESCRIPTION_CHARS {
            violations.push(FieldViolation::new(
                at("description"),
                format!("at most {MAX_OVERRIDE_DESCRIPTION_CHARS} characters"),
            ));
        }
        let set = |value: String| (!value.is_empty()).then_some(value);
        overrides.push(ToolOverride {
            tool: input.tool,
            name: set(input.name),
            description: set(input.description),
            hidden: input.hidden,
        });
    }
    overrides
}

/// Whether `name` may be an override's name: [`OVERRIDE_NAME_PATTERN`],
/// and no `__`, which only a prefixed name holds.
fn is_override_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !name.contains(PREFIX_SEPARATOR)
}

/// What is wrong with one selection, if anything: too many entries, an
/// empty, overlong or repeated one.
fn check_selection(
    field: &str,
    entries: &[String],
    limits: ToolsetLimits,
    max_bytes: usize,
) -> Option<FieldViolation> {
    let problem = if entries.len() > limits.max_selection {
        format!("at most {} entries", limits.max_selection)
    } else if entries.iter().any(|e| e.trim().is_empty()) {
        "entries must not be empty".to_owned()
    } else if entries.iter().any(|e| e.len() > max_bytes) {
        format!("each entry at most {max_bytes} bytes")
    } else if entries.iter().any(|e| e.chars().any(char::is_control)) {
        "entries must not contain control characters".to_owned()
    } else {
        let mut seen = HashSet::new();
        let repeated = entries.iter().find(|e| !seen.insert(e.as_str()))?;
        format!("{repeated:?} is named twice")
    };
    Some(FieldViolation::new(field, problem))
}
