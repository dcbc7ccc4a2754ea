//! A model's arguments to an MCP tool, checked against the tool's
//! discovered input schema (JSON Schema) before the call leaves: an invalid
//! call is answered to the model, naming each field and its problem, and
//! never reaches mcp-service. A schema that does not compile (an unknown
//! draft's keyword, a remote `$ref`, a pattern past the regex bounds) means
//! no check for that tool: the server still checks what it receives.

use std::{collections::HashMap, sync::Arc};

use jsonschema::{PatternOptions, Validator};
use serde_json::Value;

use crate::domain::ids::IntegrationId;
pub use crate::domain::problems::{MAX_REPORTED_PROBLEMS, Problem};

/// Longest description of one problem, in characters: the validator's
/// message quotes the model's value, which may be long.
const MAX_PROBLEM_CHARS: usize = 200;

/// Largest compiled regex of one `pattern`, in bytes; patterns run on the
/// linear-time engine, so a hostile one costs its size, never a backtrack.
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// The compiled input schemas of a run's MCP tools, by the name the model
/// calls each by.
#[derive(Clone, Default)]
pub struct ArgumentChecks(Arc<HashMap<String, Validator>>);

impl std::fmt::Debug for ArgumentChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ArgumentChecks")
            .field(&self.0.len())
            .finish()
    }
}

/// One MCP tool as the toolset offers it: the model's name for it, where
/// it runs, and one of its schemas.
#[derive(Debug)]
pub(super) struct Checked<'a> {
    pub(super) name: &'a str,
    pub(super) integration_id: IntegrationId,
    pub(super) server_tool: &'a str,
    pub(super) schema: &'a Value,
}

impl ArgumentChecks {
    /// Compiles each tool's schema; one that does not compile is logged
    /// once, here, and its tool's calls go unchecked.
    pub(super) fn compile<'a>(tools: impl IntoIterator<Item = Checked<'a>>) -> Self {
        Self(Arc::new(compile_schemas(tools, "input")))
    }

    /// What is wrong with `arguments` to the tool the model calls `name`:
    /// at most [`MAX_REPORTED_PROBLEMS`], and how many more; `None` when
    /// they match its schema or it has none that compiled.
    pub fn problems(&self, name: &str, arguments: &Value) -> Option<(Vec<Problem>, usize)> {
        problems_of(self.0.get(name)?, arguments)
    }
}

/// Compiles each tool's `which` schema (input or output), by the model's
/// name for the tool; one that does not compile is logged once, here.
pub(super) fn compile_schemas<'a>(
    tools: impl IntoIterator<Item = Checked<'a>>,
    which: &str,
) -> HashMap<String, Validator> {
    let options = jsonschema::options()
        .with_pattern_options(PatternOptions::regex().size_limit(MAX_PATTERN_BYTES));
    let mut compiled = HashMap::new();
    for tool in tools {
        match options.build(tool.schema) {
            Ok(validator) => {
                compiled.insert(tool.name.to_owned(), validator);
            }
            Err(error) => tracing::warn!(
                integration_id = %tool.integration_id,
                tool = tool.server_tool,
                error = %error,
                "the tool's {which} schema does not compile; it is not checked"
            ),
        }
    }
    compiled
}

/// What is wrong with `value` by `validator`: at most
/// [`MAX_REPORTED_PROBLEMS`], and how many more; `None` when it matches.
pub(super) fn problems_of(validator: &Validator, value: &Value) -> Option<(Vec<Problem>, usize)> {
    let mut errors = validator.iter_errors(value);
    let listed: Vec<Problem> = errors
        .by_ref()
        .take(MAX_REPORTED_PROBLEMS)
        .map(|error| Problem {
            at: error.instance_path().as_str().to_owned(),
            what: capped(&error.to_string()),
        })
        .collect();
    if listed.is_empty() {
        return None;
    }
    Some((listed, errors.count()))
}

fn capped(text: &str) -> String {
    if text.chars().count() <= MAX_PROBLEM_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_PROBLEM_CHARS).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checks(schema: Value) -> ArgumentChecks {
        ArgumentChecks::compile([Checked {
            name: "shop__add",
            integration_id: IntegrationId::fixed(1),
            server_tool: "add",
            schema: &schema,
        }])
    }

    fn add() -> ArgumentChecks {
        checks(json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }))
    }

    #[test]
    fn matching_arguments_pass_and_a_wrong_type_is_named_at_its_field() {
        assert_eq!(
            add().problems("shop__add", &json!({"a": 1, "b": 2.5})),
            None
        );
        assert_eq!(
            add().problems("shop__add", &json!({"a": "one", "b": 2})),
            Some((
                vec![Problem {
                    at: "/a".into(),
                    what: "\"one\" is not of type \"number\"".into(),
                }],
                0
            ))
        );
        let (missing, _) = add()
            .problems("shop__add", &json!({"a": 1}))
            .expect("a problem");
        assert_eq!(missing[0].at, "");
        assert!(missing[0].what.contains("\"b\""), "{missing:?}");
        // A tool without a compiled schema is not checked.
        assert_eq!(add().problems("shop__other", &json!({"a": "one"})), None);
    }

    #[test]
    fn a_few_problems_are_told_and_the_rest_counted() {
        let schema = json!({
            "type": "object",
            "properties": (0..10).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect::<serde_json::Map<_, _>>()
        });
        let arguments: serde_json::Map<String, Value> =
            (0..10).map(|i| (format!("p{i}"), json!("x"))).collect();
        let (told, more) = checks(schema)
            .problems("shop__add", &Value::Object(arguments))
            .expect("problems");
        assert_eq!(told.len(), MAX_REPORTED_PROBLEMS);
        assert_eq!(more, 10 - MAX_REPORTED_PROBLEMS);
    }

    #[test]
    fn a_long_value_is_cut_in_the_problem() {
        let long = "x".repeat(10_000);
        let (told, _) = add()
            .problems("shop__add", &json!({"a": long, "b": 1}))
            .expect("a problem");
        assert_eq!(told[0].what.chars().count(), MAX_PROBLEM_CHARS + 1);
        assert!(told[0].what.ends_with('…'));
    }

    #[test]
    fn a_schema_that_does_not_compile_means_no_check() {
        for schema in [
            json!({"type": 12}),
            json!({"$ref": "https://schemas.example/remote.json"}),
            json!({"type": "string", "pattern": "(?<=a)b"}),
        ] {
            let checks = checks(schema.clone());
            assert_eq!(
                checks.problems("shop__add", &json!({"a": 1})),
                None,
                "{schema}"
            );
        }
    }
}
