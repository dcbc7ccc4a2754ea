use std::borrow::Cow;

use serde_json::{Value, json};

use super::*;

/// A schema as MCP servers write them: a definition behind `$ref`, a
/// choice, formats the strict subset has and has not, bounds it lacks,
/// optional properties and closed and unspecified objects.
pub(crate) fn kitchen_sink() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "Book a meeting",
        "$defs": {
            "person": {
                "type": "object",
                "properties": {
                    "email": {"type": "string", "format": "email"},
                    "name": {"type": "string", "minLength": 1, "maxLength": 80}
                },
                "required": ["email"],
                "additionalProperties": false
            }
        },
        "properties": {
            "organizer": {"$ref": "#/$defs/person", "description": "Who books"},
            "guests": {"type": "array", "items": {"$ref": "#/$defs/person"}, "maxItems": 20, "uniqueItems": true},
            "when": {
                "oneOf": [
                    {"type": "string", "format": "date-time"},
                    {"type": "object", "properties": {"day": {"type": "string", "format": "date"}}, "required": ["day"]}
                ]
            },
            "room": {"type": "string", "enum": ["north", "south"], "default": "north"},
            "link": {"type": "string", "format": "uri"},
            "minutes": {"type": "integer", "minimum": 15, "maximum": 240}
        },
        "required": ["organizer", "when"]
    })
}

fn strict(schema: &Value) -> StrictTool {
    openai_strict(schema).unwrap_or_else(|unfit| panic!("{schema} has a strict form: {unfit}"))
}

fn unfit(schema: &Value) -> String {
    match openai_strict(schema) {
        Ok(form) => panic!(
            "{schema} should have no strict form, got {}",
            form.parameters
        ),
        Err(Unfit(why)) => why,
    }
}

#[test]
fn every_object_is_closed_and_every_property_required() {
    let form = strict(&kitchen_sink()).parameters;
    assert_eq!(form["additionalProperties"], false);
    assert_eq!(
        names(&form["required"]),
        ["guests", "link", "minutes", "organizer", "room", "when"]
    );
    let organizer = &form["properties"]["organizer"];
    assert_eq!(organizer["additionalProperties"], false);
    assert_eq!(names(&organizer["required"]), ["email", "name"]);
    assert_eq!(organizer["description"], "Who books");
    assert_eq!(
        names(&form["properties"]["guests"]["items"]["required"]),
        ["email", "name"]
    );
}

/// The names listed in `list`, sorted (a map's order depends on the build's
/// serde_json features).
fn names(list: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    names.sort_unstable();
    names
}

#[test]
fn optional_properties_become_nullable_required_ones() {
    let form = strict(&kitchen_sink()).parameters;
    let properties = &form["properties"];
    assert_eq!(properties["guests"]["type"], json!(["array", "null"]));
    assert_eq!(properties["room"]["type"], json!(["string", "null"]));
    assert_eq!(properties["room"]["enum"], json!(["north", "south", null]));
    assert_eq!(properties["minutes"]["type"], json!(["integer", "null"]));
    // Required ones stay as they were.
    assert_eq!(properties["organizer"]["type"], "object");
    assert_eq!(
        properties["organizer"]["properties"]["name"]["type"],
        json!(["string", "null"])
    );
}

#[test]
fn what_the_subset_lacks_is_said_in_the_description() {
    let form = strict(&kitchen_sink()).parameters;
    let properties = &form["properties"];
    assert_eq!(
        properties["organizer"]["properties"]["name"]["description"],
        "(minLength: 1; maxLength: 80)"
    );
    assert_eq!(properties["link"]["description"], "(format: uri)");
    assert!(properties["link"].get("format").is_none());
    assert_eq!(properties["guests"]["description"], "(uniqueItems: true)");
    assert_eq!(properties["guests"]["maxItems"], 20);
    assert_eq!(properties["minutes"]["minimum"], 15);
    assert_eq!(
        properties["organizer"]["properties"]["email"]["format"],
        "email"
    );
    let when = &properties["when"];
    assert!(when.get("oneOf").is_none());
    assert_eq!(when["description"], "(exactly one of these forms)");
    assert_eq!(when["anyOf"][0]["format"], "date-time");
    assert_eq!(when["anyOf"][1]["additionalProperties"], false);
    for annotation in ["$schema", "title", "$defs"] {
        assert!(form.get(annotation).is_none(), "{annotation} is left out");
    }
    assert!(properties["room"].get("default").is_none());
}

#[test]
fn a_tool_without_arguments_is_a_closed_empty_object() {
    for schema in [
        json!({}),
        json!({"type": "object"}),
        json!({"type": "object", "properties": {}}),
    ] {
        let form = strict(&schema);
        assert_eq!(
            form.parameters,
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
        assert!(form.nulls.is_empty());
    }
}

#[test]
fn schemas_the_subset_cannot_say_have_no_strict_form() {
    let object = |property: Value| json!({"type": "object", "properties": {"a": property}});
    let cases = [
        (object(json!({"type": "object"})), "open to any key"),
        (
            object(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            "other keys have a schema",
        ),
        (object(json!({})), "any value"),
        (object(json!({"type": "array"})), "array of any values"),
        (object(json!({"not": {"type": "string"}})), "`not`"),
        (
            object(json!({"allOf": [{"type": "string"}, {"minLength": 2}]})),
            "`allOf`",
        ),
        (
            object(json!({"$ref": "https://example.com/schema"})),
            "outside the schema",
        ),
        (
            object(json!({"$ref": "#/$defs/missing"})),
            "not in the schema",
        ),
        (object(json!({"type": "date"})), "type \"date\""),
        (
            json!({"anyOf": [{"type": "object"}]}),
            "choice of forms at the root",
        ),
        (
            json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}, "properties": {"a": {"$ref": "#/$defs/node"}}}),
            "recursive",
        ),
    ];
    for (schema, expected) in cases {
        let why = unfit(&schema);
        assert!(why.contains(expected), "{schema}: {why}");
    }
}

#[test]
fn the_subsets_size_limits_hold() {
    let mut deep = json!({"type": "string"});
    for _ in 0..11 {
        deep = json!({"type": "object", "properties": {"a": deep}, "required": ["a"]});
    }
    assert!(unfit(&deep).contains("deeper than 10"));
    let many: serde_json::Map<String, Value> = (0..5_001)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    assert!(unfit(&json!({"type": "object", "properties": many})).contains("5000 properties"));
    let values: Vec<Value> = (0..1_001).map(|i| json!(i)).collect();
    let enumerated = json!({"type": "object", "properties": {"a": {"enum": values}}});
    assert!(unfit(&enumerated).contains("1000 enum values"));
    // At the limits, a form.
    let mut deep = json!({"type": "string"});
    for _ in 0..5 {
        deep = json!({"type": "object", "properties": {"a": deep}, "required": ["a"]});
    }
    strict(&deep);
}

#[test]
fn nulls_for_left_out_properties_are_taken_out() {
    let nulls = strict(&kitchen_sink()).nulls;
    let sent = r#"{"organizer":{"email":"a@b.c","name":null},"guests":[{"email":"d@e.f","name":null}],"when":"2026-01-01T10:00:00Z","room":null,"link":null,"minutes":30}"#;
    let arguments: Value =
        serde_json::from_str(&nulls.arguments_for_server(sent.into())).expect("json");
    assert_eq!(
        arguments,
        json!({"organizer": {"email": "a@b.c"}, "guests": [{"email": "d@e.f"}], "when": "2026-01-01T10:00:00Z", "minutes": 30})
    );
    // Without a null, the model's text goes exactly as it came.
    let untouched = r#"{"organizer":{"email":"a@b.c"},"when":"x", "minutes":1.50}"#;
    assert_eq!(nulls.arguments_for_server(untouched.into()), untouched);
    // Not JSON: left for the argument check to answer.
    assert_eq!(nulls.arguments_for_server("{null".into()), "{null");
}

#[test]
fn a_null_the_server_accepts_stays() {
    let schema = json!({"type": "object", "properties": {"cursor": {"type": ["string", "null"]}}});
    let form = strict(&schema);
    assert_eq!(
        form.parameters["properties"]["cursor"]["type"],
        json!(["string", "null"])
    );
    assert!(form.nulls.is_empty());
    let sent = r#"{"cursor":null}"#;
    assert_eq!(form.nulls.arguments_for_server(sent.into()), sent);
}

#[test]
fn anthropic_gets_the_schema_as_written_when_it_can() {
    let schema = kitchen_sink();
    assert!(matches!(anthropic_form(&schema), Cow::Borrowed(_)));
    let untyped = json!({"properties": {"a": {"type": "string"}}});
    assert_eq!(
        anthropic_form(&untyped).into_owned(),
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    );
}

#[test]
fn anthropic_gets_a_root_choice_merged_into_one_object() {
    let schema = json!({
        "type": "object",
        "description": "Find a user",
        "$defs": {"by_name": {"properties": {"name": {"type": "string"}, "org": {"type": "string"}}, "required": ["name", "org"]}},
        "oneOf": [
            {"properties": {"id": {"type": "integer"}, "org": {"type": "string"}}, "required": ["id", "org"]},
            {"$ref": "#/$defs/by_name"}
        ]
    });
    let form = anthropic_form(&schema).into_owned();
    assert!(form.get("oneOf").is_none());
    assert_eq!(form["type"], "object");
    assert_eq!(form["required"], json!(["org"]));
    let names: Vec<&String> = form["properties"]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(
        form["description"],
        "Find a user (give one of these sets of properties: {id, org} or {name, org})"
    );

    let all = json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}
    ]});
    let form = anthropic_form(&all).into_owned();
    assert_eq!(form["required"], json!(["a", "b"]));
    assert!(form.get("description").is_none());
}
