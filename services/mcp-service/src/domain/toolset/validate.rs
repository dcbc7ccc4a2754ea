//! A toolset as written, checked on write: its name, its bounds, and each
//! member's id and selections. Whether the members' integrations exist is
//! the admin's check ([`super::admin`]), which needs the repository.

use std::collections::HashSet;

use switchboard_server::FieldViolation;

use super::model::{Member, NAME_PATTERN, ToolsetBody, ToolsetLimits, ToolsetName};
use crate::domain::integration::IntegrationId;

/// The longest description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// The longest tool name a selection may hold, in bytes.
pub const MAX_TOOL_NAME_BYTES: usize = 256;
/// The longest URI or URI template a selection may hold, in bytes.
pub const MAX_URI_BYTES: usize = 2048;

/// A member as the caller sent it.
#[derive(Debug, Clone, Default)]
pub struct MemberInput {
    /// The integration's id, as sent.
    pub integration_id: String,
    /// The tool selection; `None` when unset.
    pub tools: Option<Vec<String>>,
    /// The resource selection; `None` when unset.
    pub resources: Option<Vec<String>>,
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
    let mut seen = HashSet::new();
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

fn validate_member(
    i: usize,
    input: MemberInput,
    limits: ToolsetLimits,
    seen: &mut HashSet<IntegrationId>,
    violations: &mut Vec<FieldViolation>,
) -> Option<Member> {
    let field = |name: &str| format!("toolset.members[{i}].{name}");
    let before = violations.len();
    let id = match IntegrationId::parse(&field("integration_id"), &input.integration_id) {
        Ok(id) if !seen.insert(id) => {
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
    (violations.len() == before).then_some(Member {
        integration_id: id?,
        tools: input.tools,
        resources: input.resources,
    })
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
