use serde_json::json;

use super::*;

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
        &[],
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
    let first = assemble(vec![], &[], &caps, &BTreeMap::new(), &[]);
    let again = assemble(vec![], &[], &caps, &BTreeMap::new(), &[]);
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
        &[],
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
        &[],
    )
    .withholding(&BTreeSet::from(["x__a".to_owned()]));
    let offered: Vec<_> = toolset.specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(offered, ["x__b"]);
    assert_eq!(toolset.target("x__a"), None);
    assert!(toolset.withheld.contains("x__a"));
    assert!(toolset.target("x__b").is_some());
}

#[test]
fn an_override_renames_describes_or_hides_a_tool_and_a_taken_name_is_made_unique() {
    let over = |tool: &str, name: Option<&str>| ToolOverride {
        integration_id: IntegrationId::fixed(1),
        tool: tool.into(),
        name: name.map(Into::into),
        description: Some("Mine.".into()),
        hidden: tool == "c",
    };
    let client = ClientTool {
        name: "taken".into(),
        description: String::new(),
        parameters: json!({}),
    };
    let toolset = assemble(
        vec![],
        &[client],
        &[integration(1, "x", &["a", "b", "c"])],
        &BTreeMap::new(),
        &[
            over("a", Some("alpha")),
            over("b", Some("taken")),
            over("c", None),
        ],
    );
    let names: Vec<_> = toolset.bindings.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names[..2], ["taken", "alpha"]);
    assert!(
        names[2].starts_with("taken_") && valid_tool_name(names[2]),
        "{names:?}"
    );
    assert_eq!(names.len(), 3, "the hidden tool is not offered");
    assert!(matches!(
        toolset.target("alpha"),
        Some(ToolTarget::Mcp { server_tool_name, .. }) if server_tool_name == "a"
    ));
    assert_eq!(toolset.specs[1].description, "Mine.");
    assert_eq!(
        toolset.server_description("alpha", "Mine."),
        "",
        "the server's own"
    );
    assert_eq!(toolset.target("x__c"), None);
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
        &[],
    );
    let names: Vec<_> = toolset.bindings.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["x__b", "y__a"]);
}
