//! An agent's overrides of how its MCP tools are shown to the model: a name
//! of the admin's choosing, a description of their own, or none at all.
//! The server is still called by its own tool name, its calls checked
//! against its own input schema, and its definition pinned as the server
//! gives it, so drift detection sees what the server changed, not what the
//! admin did.

use std::collections::HashSet;

use super::toolset::valid_tool_name;
use crate::domain::entities::ToolOverride;

/// Most overrides of an agent.
pub const MAX_TOOL_OVERRIDES: usize = 256;

/// Longest description an override gives, in characters.
pub const MAX_OVERRIDE_DESCRIPTION: usize = 4096;

/// Why the overrides `overrides` are refused, each with the index of the
/// override and the field (`name`, `description`, `tool`) it is about; the
/// whole list's problem has no index.
pub fn check_tool_overrides(overrides: &[ToolOverride]) -> Vec<(Option<usize>, String)> {
    if overrides.len() > MAX_TOOL_OVERRIDES {
        return vec![(
            None,
            format!(
                "has {} overrides; at most {MAX_TOOL_OVERRIDES}",
                overrides.len()
            ),
        )];
    }
    let mut problems = Vec::new();
    let mut names = HashSet::new();
    let mut tools = HashSet::new();
    for (i, over) in overrides.iter().enumerate() {
        if over.tool.is_empty() || over.tool.len() > 128 {
            problems.push((Some(i), "tool: must be 1 to 128 bytes".to_owned()));
        } else if !tools.insert((over.integration_id, over.tool.as_str())) {
            problems.push((Some(i), "tool: has another override".to_owned()));
        }
        if let Some(name) = &over.name {
            if !valid_tool_name(name) {
                problems.push((Some(i), "name: must match ^[a-zA-Z0-9_-]{1,64}$".to_owned()));
            } else if !names.insert(name.as_str()) {
                problems.push((Some(i), "name: is given to another tool".to_owned()));
            }
        }
        if over
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() > MAX_OVERRIDE_DESCRIPTION)
        {
            problems.push((
                Some(i),
                format!("description: at most {MAX_OVERRIDE_DESCRIPTION} characters"),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::IntegrationId;

    fn over(tool: &str, name: Option<&str>) -> ToolOverride {
        ToolOverride {
            integration_id: IntegrationId::fixed(1),
            tool: tool.into(),
            name: name.map(Into::into),
            description: None,
            hidden: false,
        }
    }

    #[test]
    fn overrides_are_refused_past_their_bounds_and_by_what_is_wrong() {
        assert!(check_tool_overrides(&[over("a", Some("search"))]).is_empty());
        let problems = check_tool_overrides(&[
            over("a", Some("search")),
            over("b", Some("search")),
            over("a", None),
            over("c", Some("bad name")),
            ToolOverride {
                description: Some("x".repeat(MAX_OVERRIDE_DESCRIPTION + 1)),
                ..over("d", None)
            },
        ]);
        let indexes: Vec<Option<usize>> = problems.iter().map(|(i, _)| *i).collect();
        assert_eq!(
            indexes,
            [Some(1), Some(2), Some(3), Some(4)],
            "{problems:?}"
        );
        let at_limit = ToolOverride {
            description: Some("x".repeat(MAX_OVERRIDE_DESCRIPTION)),
            ..over("d", None)
        };
        assert!(check_tool_overrides(&[at_limit]).is_empty());
        let many: Vec<ToolOverride> = (0..=MAX_TOOL_OVERRIDES)
            .map(|i| over(&format!("t{i}"), None))
            .collect();
        assert_eq!(check_tool_overrides(&many)[0].0, None);
        assert!(check_tool_overrides(&many[..MAX_TOOL_OVERRIDES]).is_empty());
    }
}
