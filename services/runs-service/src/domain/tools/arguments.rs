//! A tool call's arguments as the model wrote them: checked to be a JSON
//! object, and kept as written so they reach an MCP server exactly (a 64-bit
//! id or `1.0` unchanged).

use serde_json::{Map, Value};

use crate::domain::texts;

/// Arguments that are a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolArguments {
    text: String,
    object: Map<String, Value>,
}

impl ToolArguments {
    /// Checks the model's `raw` arguments; empty means no arguments. The
    /// error says what was wrong, for the model.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.trim().is_empty() {
            return Ok(Self {
                text: "{}".to_owned(),
                object: Map::new(),
            });
        }
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(object)) => Ok(Self {
                text: raw.to_owned(),
                object,
            }),
            Ok(other) => Err(texts::not_an_object(&other)),
            Err(error) => Err(error.to_string()),
        }
    }

    /// The JSON text, as the model wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The arguments as a JSON value, for checking against a schema.
    pub fn to_value(&self) -> Value {
        Value::Object(self.object.clone())
    }

    /// The value of `name` when it is a non-blank string.
    pub fn text_arg(&self, name: &str) -> Option<&str> {
        self.object
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    /// The value of `name` when it is an object; empty otherwise.
    pub fn object_arg(&self, name: &str) -> Map<String, Value> {
        self.object
            .get(name)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_keep_the_models_text() {
        let raw = r#"{"id": 9007199254740993, "ratio": 1.0}"#;
        let arguments = ToolArguments::parse(raw).expect("an object");
        assert_eq!(arguments.text(), raw);
        assert_eq!(ToolArguments::parse("  ").expect("empty").text(), "{}");
    }

    #[test]
    fn arguments_that_are_not_an_object_say_what_they_are() {
        assert_eq!(ToolArguments::parse("[1]"), Err("got an array".to_owned()));
        assert!(ToolArguments::parse("{").is_err());
    }
}
