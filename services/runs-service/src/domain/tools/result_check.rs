//! A tool's structured result, checked against the output schema the tool
//! declared (MCP: a client should validate structured results against it)
//! before the model reads it: a tool that declares a schema and returns no
//! structured result, or one that does not match, has failed, and the model
//! is told how, field by field. A schema that does not compile means no
//! check for that tool.

use std::{collections::HashMap, sync::Arc};

use jsonschema::Validator;
use serde_json::Value;

use super::argument_check::{Checked, compile_schemas, problems_of};
pub use crate::domain::problems::ResultMismatch;

/// The compiled output schemas of a run's MCP tools that declare one, by
/// the name the model calls each by.
#[derive(Clone, Default)]
pub struct ResultChecks(Arc<HashMap<String, Validator>>);

impl std::fmt::Debug for ResultChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ResultChecks").field(&self.0.len()).finish()
    }
}

impl ResultChecks {
    /// Compiles each tool's output schema.
    pub(super) fn compile<'a>(tools: impl IntoIterator<Item = Checked<'a>>) -> Self {
        Self(Arc::new(compile_schemas(tools, "output")))
    }

    /// How `structured` (the result as JSON text, when the tool sent one)
    /// differs from the output schema of the tool the model calls `name`;
    /// `None` when it matches or the tool has no schema that compiled.
    pub fn mismatch(&self, name: &str, structured: Option<&str>) -> Option<ResultMismatch> {
        let validator = self.0.get(name)?;
        let Some(structured) = structured else {
            return Some(ResultMismatch::Missing);
        };
        let Ok(value) = serde_json::from_str::<Value>(structured) else {
            return Some(ResultMismatch::NotJson);
        };
        problems_of(validator, &value)
            .map(|(problems, more)| ResultMismatch::Problems(problems, more))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::{ids::IntegrationId, problems::Problem};

    fn sum() -> ResultChecks {
        let schema = json!({
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"]
        });
        ResultChecks::compile([Checked {
            name: "shop__add",
            integration_id: IntegrationId::fixed(1),
            server_tool: "add",
            schema: &schema,
        }])
    }

    #[test]
    fn a_matching_result_passes_and_a_wrong_one_is_named_at_its_field() {
        assert_eq!(sum().mismatch("shop__add", Some(r#"{"sum": 3}"#)), None);
        assert_eq!(
            sum().mismatch("shop__add", Some(r#"{"sum": "three"}"#)),
            Some(ResultMismatch::Problems(
                vec![Problem {
                    at: "/sum".into(),
                    what: "\"three\" is not of type \"number\"".into(),
                }],
                0
            ))
        );
    }

    #[test]
    fn a_declared_schema_without_a_structured_result_is_a_mismatch() {
        assert_eq!(
            sum().mismatch("shop__add", None),
            Some(ResultMismatch::Missing)
        );
        assert_eq!(
            sum().mismatch("shop__add", Some("{not json")),
            Some(ResultMismatch::NotJson)
        );
    }

    #[test]
    fn a_tool_without_an_output_schema_is_not_checked() {
        assert_eq!(sum().mismatch("shop__other", None), None);
        assert_eq!(sum().mismatch("shop__other", Some(r#"{"sum": "x"}"#)), None);
    }
}
