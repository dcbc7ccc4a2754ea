use super::{
    model::{ToolOverride, ToolsetLimits, ToolsetName},
    serve::{ResolvedMember, ResolvedToolset},
    validate::{
        BodyInput, MAX_DESCRIPTION_BYTES, MAX_OVERRIDE_DESCRIPTION_CHARS, MemberInput,
        OverrideInput, validate_body,
    },
};
use crate::domain::integration::IntegrationId;

fn limits() -> ToolsetLimits {
    ToolsetLimits {
        max_members: 3,
        max_selection: 2,
        max_toolsets_per_org: 5,
    }
}

fn member(tools: Option<&[&str]>) -> MemberInput {
    MemberInput {
        integration_id: IntegrationId::new().to_string(),
        tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
        resources: None,
        overrides: Vec::new(),
    }
}

fn fields(input: BodyInput) -> Vec<String> {
    validate_body(input, limits())
        .expect_err("invalid")
        .into_iter()
        .map(|v| v.field)
        .collect()
}

#[test]
fn a_toolset_may_hold_as_many_members_as_the_limit_and_no_more() {
    let at_limit = BodyInput {
        description: String::new(),
        members: (0..3).map(|_| member(None)).collect(),
    };
    assert_eq!(
        validate_body(at_limit.clone(), limits())
            .expect("valid")
            .members
            .len(),
        3
    );
    let mut over = at_limit;
    over.members.push(member(None));
    assert_eq!(fields(over), ["toolset.members"]);
}

#[test]
fn a_selection_may_hold_as_many_entries_as_the_limit_and_no_more() {
    let at_limit = BodyInput {
        members: vec![member(Some(&["a", "b"]))],
        ..BodyInput::default()
    };
    assert!(validate_body(at_limit, limits()).is_ok());
    let over = BodyInput {
        members: vec![member(Some(&["a", "b", "c"]))],
        ..BodyInput::default()
    };
    assert_eq!(fields(over), ["toolset.members[0].tools"]);
}

#[test]
fn every_bad_member_field_is_named() {
    let twice = member(None);
    let input = BodyInput {
        description: "x".repeat(MAX_DESCRIPTION_BYTES + 1),
        members: vec![
            MemberInput {
                integration_id: "not-a-uuid".into(),
                ..MemberInput::default()
            },
            twice.clone(),
            twice,
        ],
    };
    assert_eq!(
        fields(input),
        [
            "toolset.description",
            "toolset.members[0].integration_id",
            "toolset.members[2].integration_id"
        ]
    );
    let bad_entries = BodyInput {
        members: vec![
            member(Some(&["a", "a"])),
            member(Some(&[" "])),
            MemberInput {
                resources: Some(vec!["x".repeat(3000)]),
                ..member(None)
            },
        ],
        ..BodyInput::default()
    };
    assert_eq!(
        fields(bad_entries),
        [
            "toolset.members[0].tools",
            "toolset.members[1].tools",
            "toolset.members[2].resources"
        ]
    );
}

#[test]
fn names_are_short_lowercase_path_segments() {
    for good in ["a", "dev-tools", "0x", &"a".repeat(63)] {
        assert!(ToolsetName::parse(good).is_some(), "{good}");
    }
    for bad in ["", "-a", "A", "a_b", "a/b", "a.b", &"a".repeat(64), "é"] {
        assert!(ToolsetName::parse(bad).is_none(), "{bad}");
    }
}

fn resolved(slug: &str, tools: Option<&[&str]>) -> ResolvedMember {
    ResolvedMember {
        integration_id: IntegrationId::new(),
        slug: slug.into(),
        prefix: slug.into(),
        enabled: true,
        tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
        resources: None,
        overrides: Vec::new(),
    }
}

#[test]
fn an_exposed_name_routes_to_its_member_and_tool_the_longest_prefix_first() {
    let toolset = ResolvedToolset {
        name: ToolsetName::parse("t").expect("valid"),
        description: String::new(),
        members: vec![resolved("a", None), resolved("a_", Some(&["x"]))],
    };
    let (a, a_) = (
        toolset.members[0].integration_id,
        toolset.members[1].integration_id,
    );
    let surface = toolset.surface();
    let (member, tool) = surface.route_tool("a__echo").expect("routed");
    assert_eq!((member.integration, tool), (a, "echo"));
    assert_eq!(member.exposed("echo"), "a__echo");
    let (member, tool) = surface.route_tool("a___x").expect("routed");
    assert_eq!((member.integration, tool), (a_, "x"));
    let (member, tool) = surface.route_tool("a___y").expect("routed");
    assert_eq!((member.integration, tool), (a, "_y"));
    assert!(surface.route_tool("a_x").is_none());
    assert!(surface.route_tool("b__x").is_none());
}

#[test]
fn a_selection_serves_only_what_it_names_and_none_serves_everything() {
    let all = ResolvedToolset {
        name: ToolsetName::parse("t").expect("valid"),
        description: String::new(),
        members: vec![resolved("a", None)],
    }
    .surface();
    assert!(all.members()[0].shows_tool("anything"));
    assert!(all.members()[0].shows_resource("file:///x"));
    let some = ResolvedToolset {
        name: ToolsetName::parse("t").expect("valid"),
        description: String::new(),
        members: vec![ResolvedMember {
            resources: Some(vec!["file:///{path}".into()]),
            ..resolved("a", Some(&[]))
        }],
    }
    .surface();
    assert!(some.route_tool("a__echo").is_none());
    assert!(some.members()[0].shows_resource("file:///{path}"));
    assert!(!some.members()[0].shows_resource("file:///x"));
}

fn renaming(tool: &str, name: &str) -> OverrideInput {
    OverrideInput {
        tool: tool.into(),
        name: name.into(),
        ..OverrideInput::default()
    }
}

#[test]
fn overrides_are_checked_by_field_and_bounded_like_a_selection() {
    let with = |overrides: Vec<OverrideInput>| BodyInput {
        members: vec![MemberInput {
            overrides,
            ..member(Some(&["echo", "add"]))
        }],
        ..BodyInput::default()
    };
    let at_limit = with(vec![
        renaming("echo", "say"),
        OverrideInput {
            tool: "add".into(),
            description: "d".repeat(MAX_OVERRIDE_DESCRIPTION_CHARS),
            hidden: true,
            ..OverrideInput::default()
        },
    ]);
    let body = validate_body(at_limit, limits()).expect("valid");
    assert_eq!(body.members[0].overrides[0].name.as_deref(), Some("say"));
    assert_eq!(body.members[0].overrides[0].description, None);
    assert!(body.members[0].overrides[1].hidden);

    let field = "toolset.members[0].tool_overrides";
    let too_many = with(vec![
        renaming("echo", "a"),
        renaming("add", "b"),
        renaming("x", "c"),
    ]);
    assert_eq!(fields(too_many), [field]);
    let wrong = with(vec![
        // A prefixed name could be another member's tool's.
        renaming("echo", "other__echo"),
        OverrideInput {
            tool: "add".into(),
            description: "d".repeat(MAX_OVERRIDE_DESCRIPTION_CHARS + 1),
            ..OverrideInput::default()
        },
    ]);
    assert_eq!(
        fields(wrong),
        [
            format!("{field}[0].name"),
            format!("{field}[1].description")
        ]
    );
    let unserved = with(vec![
        renaming("delete", "remove"),
        renaming("echo", "bad name"),
    ]);
    assert_eq!(
        fields(unserved),
        [format!("{field}[0].tool"), format!("{field}[1].name")]
    );
    let twice = with(vec![renaming("echo", "say"), renaming("echo", "speak")]);
    assert_eq!(fields(twice), [format!("{field}[1].tool")]);
}

#[test]
fn a_name_an_override_gives_is_given_once_in_the_whole_toolset() {
    let body = BodyInput {
        members: vec![
            MemberInput {
                overrides: vec![renaming("echo", "say")],
                ..member(None)
            },
            MemberInput {
                overrides: vec![renaming("echo", "say")],
                ..member(None)
            },
        ],
        ..BodyInput::default()
    };
    assert_eq!(fields(body), ["toolset.members[1].tool_overrides[0].name"]);
}

#[test]
fn a_renamed_tool_is_reached_by_its_new_name_only_and_a_hidden_one_not_at_all() {
    let toolset = ResolvedToolset {
        name: ToolsetName::parse("t").expect("valid"),
        description: String::new(),
        members: vec![ResolvedMember {
            overrides: vec![
                ToolOverride {
                    tool: "echo".into(),
                    name: Some("say".into()),
                    description: Some("Says it back.".into()),
                    hidden: false,
                },
                ToolOverride {
                    tool: "add".into(),
                    hidden: true,
                    ..ToolOverride::default()
                },
            ],
            ..resolved("a", None)
        }],
    };
    let id = toolset.members[0].integration_id;
    let surface = toolset.surface();
    let (member, tool) = surface.route_tool("say").expect("routed");
    assert_eq!((member.integration, tool), (id, "echo"));
    assert_eq!(member.exposed_tool("echo"), "say");
    assert_eq!(member.tool_description("echo"), Some("Says it back."));
    assert!(surface.route_tool("a__echo").is_none(), "the old name");
    assert!(surface.route_tool("a__add").is_none(), "hidden");
    assert!(!member.shows_tool("add"));
    let (_, tool) = surface.route_tool("a__other").expect("untouched");
    assert_eq!(tool, "other");
    assert_eq!(member.exposed_tool("other"), "a__other");
}
