//! The tool schemas each provider refuses, refused the way it refuses them,
//! so that a client's schema translation is tested against the rules rather
//! than against itself.
//!
//! OpenAI, for a function sent with `"strict": true` (Structured Outputs,
//! "Supported schemas"): the root is an object and not `anyOf`; every object
//! has `additionalProperties: false` and lists every property in
//! `required`; only the supported keywords appear (below); at most 5,000
//! properties, 10 levels of nesting and 1,000 enum values; `$ref` points
//! into the same schema. A function without `strict` is not checked.
//!
//! Anthropic, for every tool: `input_schema` is an object with
//! `"type": "object"`, without `oneOf`, `anyOf` or `allOf` at its root.

use serde_json::Value;

/// Keywords strict mode accepts.
const STRICT_KEYWORDS: [&str; 22] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

const MAX_PROPERTIES: usize = 5_000;
const MAX_DEPTH: usize = 10;
const MAX_ENUM_VALUES: usize = 1_000;

/// The first tool of an OpenAI request that strict mode refuses: where it
/// is (`tools[i].function.parameters`) and why.
pub(crate) fn openai_refusal(request: &Value) -> Option<(String, String)> {
    let tools = request.get("tools")?.as_array()?;
    tools.iter().enumerate().find_map(|(index, tool)| {
        let function = tool.get("function")?;
        if function.get("strict") != Some(&Value::Bool(true)) {
            return None;
        }
        let name = function.get("name").and_then(Value::as_str).unwrap_or("");
        let parameters = function.get("parameters").unwrap_or(&Value::Null);
        let why = strict_refusal(parameters)?;
        Some((
            format!("tools[{index}].function.parameters"),
            format!("Invalid schema for function '{name}': {why}"),
        ))
    })
}

/// The first tool of an Anthropic request whose `input_schema` Anthropic
/// refuses: where and why.
pub(crate) fn anthropic_refusal(request: &Value) -> Option<String> {
    let tools = request.get("tools")?.as_array()?;
    tools.iter().enumerate().find_map(|(index, tool)| {
        let schema = tool.get("input_schema");
        let why = match schema {
            Some(Value::Object(object)) => {
                if object.get("type").and_then(Value::as_str) != Some("object") {
                    "input_schema: Input should be 'object'"
                } else if ["oneOf", "anyOf", "allOf"]
                    .iter()
                    .any(|k| object.contains_key(*k))
                {
                    "input_schema does not support oneOf, allOf, or anyOf at the top level"
                } else {
                    return None;
                }
            }
            _ => "input_schema: Field required",
        };
        Some(format!("tools.{index}.custom.{why}"))
    })
}

fn strict_refusal(schema: &Value) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Some("schema must be a JSON Schema of 'type: \"object\"', got another type".into());
    }
    if schema.get("anyOf").is_some() {
        return Some("root schema must not be 'anyOf'".into());
    }
    let mut check = Check {
        root: schema,
        properties: 0,
        enum_values: 0,
    };
    check.node(schema, &mut Vec::new(), 0).err()
}

struct Check<'a> {
    root: &'a Value,
    properties: usize,
    enum_values: usize,
}

impl Check<'_> {
    fn node(&mut self, schema: &Value, path: &mut Vec<String>, depth: usize) -> Result<(), String> {
        let at = || format!("In context=({})", path.join(", "));
        if depth > MAX_DEPTH {
            return Err(format!(
                "{}, schema exceeds {MAX_DEPTH} levels of nesting",
                at()
            ));
        }
        let Value::Object(object) = schema else {
            return Err(format!("{}, schema must be an object", at()));
        };
        if let Some(keyword) = object
            .keys()
            .find(|k| !STRICT_KEYWORDS.contains(&k.as_str()))
        {
            return Err(format!("{}, '{keyword}' is not permitted", at()));
        }
        if let Some(format) = object.get("format").and_then(Value::as_str)
            && !FORMATS.contains(&format)
        {
            return Err(format!("{}, format '{format}' is not permitted", at()));
        }
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let found = reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer));
            if found.is_none() {
                return Err(format!(
                    "{}, reference '{reference}' can't be resolved",
                    at()
                ));
            }
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            self.enum_values += values.len();
            if self.enum_values > MAX_ENUM_VALUES {
                return Err(format!("{}, more than {MAX_ENUM_VALUES} enum values", at()));
            }
        }
        if is_object(object) {
            self.object(object, path)?;
        }
        self.children(object, path, depth)
    }

    fn object(
        &mut self,
        object: &serde_json::Map<String, Value>,
        path: &[String],
    ) -> Result<(), String> {
        let at = format!("In context=({})", path.join(", "));
        if object.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Err(format!(
                "{at}, 'additionalProperties' is required to be supplied and to be false"
            ));
        }
        let properties = object.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in properties.into_iter().flat_map(|p| p.keys()) {
            if !required.contains(&name.as_str()) {
                return Err(format!(
                    "{at}, 'required' is required to be supplied and to be an array including every key in properties. Missing '{name}'"
                ));
            }
        }
        self.properties += properties.map_or(0, serde_json::Map::len);
        if self.properties > MAX_PROPERTIES {
            return Err(format!("{at}, more than {MAX_PROPERTIES} properties"));
        }
        Ok(())
    }

    fn children(
        &mut self,
        object: &serde_json::Map<String, Value>,
        path: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        let mut visit = |check: &mut Self, key: String, child: &Value| {
            path.push(key);
            let result = check.node(child, path, depth + 1);
            path.pop();
            result
        };
        for keyword in ["properties", "$defs", "definitions"] {
            for (name, child) in object
                .get(keyword)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                visit(self, format!("'{keyword}', '{name}'"), child)?;
            }
        }
        if let Some(items) = object.get("items") {
            visit(self, "'items'".into(), items)?;
        }
        for (index, form) in object
            .get("anyOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            visit(self, format!("'anyOf', '{index}'"), form)?;
        }
        Ok(())
    }
}

fn is_object(object: &serde_json::Map<String, Value>) -> bool {
    match object.get("type") {
        Some(Value::String(name)) => name == "object",
        Some(Value::Array(names)) => names.iter().any(|n| n == "object"),
        _ => object.contains_key("properties"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strict(parameters: Value) -> Value {
        json!({"tools": [{"type": "function", "function": {"name": "t", "strict": true, "parameters": parameters}}]})
    }

    #[test]
    fn a_closed_object_with_every_property_required_passes() {
        let request = strict(json!({
            "type": "object",
            "properties": {"a": {"type": ["string", "null"], "format": "email"}},
            "required": ["a"],
            "additionalProperties": false
        }));
        assert_eq!(openai_refusal(&request), None);
    }

    #[test]
    fn strict_mode_refuses_what_openai_documents() {
        let cases = [
            (
                json!({"type": "object", "properties": {}}),
                "'additionalProperties' is required",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
                "Missing 'a'",
            ),
            (
                json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}, "required": ["a"], "additionalProperties": false}),
                "'oneOf' is not permitted",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}, "required": ["a"], "additionalProperties": false}),
                "format 'uri' is not permitted",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}, "required": ["a"], "additionalProperties": false}),
                "'minLength' is not permitted",
            ),
            (json!({"anyOf": [{"type": "object"}]}), "type: \"object\""),
        ];
        for (schema, expected) in cases {
            let (param, message) = openai_refusal(&strict(schema.clone())).expect("refused");
            assert_eq!(param, "tools[0].function.parameters");
            assert!(message.contains(expected), "{schema}: {message}");
        }
    }

    #[test]
    fn a_function_without_strict_is_not_checked() {
        let request = json!({"tools": [{"type": "function", "function": {"name": "t", "parameters": {"oneOf": []}}}]});
        assert_eq!(openai_refusal(&request), None);
    }

    #[test]
    fn anthropic_refuses_a_choice_or_another_type_at_the_root() {
        let tools = |schema: Value| json!({"tools": [{"name": "t", "input_schema": schema}]});
        assert_eq!(
            anthropic_refusal(&tools(
                json!({"type": "object", "properties": {"a": {"oneOf": []}}})
            )),
            None
        );
        let refused =
            anthropic_refusal(&tools(json!({"type": "object", "oneOf": []}))).expect("refused");
        assert!(refused.contains("does not support oneOf"), "{refused}");
        assert!(anthropic_refusal(&tools(json!({"properties": {}}))).is_some());
    }
}
