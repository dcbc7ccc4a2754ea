//! A tool's input schema in the subset OpenAI's strict mode accepts.
//!
//! Strict mode (Structured Outputs) makes the model's arguments match the
//! schema exactly, but accepts only: the types `string`, `number`,
//! `integer`, `boolean`, `object`, `array`, `null` and `enum`, `anyOf`
//! below the root; every object closed (`additionalProperties: false`) with
//! every property required; `pattern` and a short list of formats on
//! strings, bounds and `multipleOf` on numbers, `minItems`/`maxItems` on
//! arrays; at most 5,000 properties, 10 levels of nesting, 1,000 enum values
//! and 120,000 characters of names and values. The rest is refused.
//!
//! The translation keeps what the subset can say and carries the rest:
//! - an optional property becomes required and nullable, and the `null` the
//!   model then sends for it is taken out again ([`NullFields`]);
//! - `$ref` to a definition of the same document is written in place;
//! - `oneOf` becomes `anyOf` (the "exactly one" part is said in the
//!   description), `const` a one-value `enum`;
//! - a bound the subset lacks (`minLength`, `maxLength`, `uniqueItems`,
//!   `minProperties`, `maxProperties`, a format outside the list) is said
//!   in the description;
//! - annotations (`title`, `default`, `examples`, `$schema`, `$id`, …) are
//!   left out.
//!
//! What the subset cannot say at all — an object open to any key, a value of
//! any type, a recursive definition, `allOf` of several schemas, `not`,
//! `if`/`then`/`else`, conditional or pattern properties, tuples, a
//! reference outside the document — makes the tool [`Unfit`]: it is then
//! offered without `strict`, with its schema as the server wrote it, rather
//! than loosened.

use serde_json::{Map, Value, json};

use super::{NullFields, with_notes};

/// Most properties in one strict schema, all objects together.
const MAX_PROPERTIES: usize = 5_000;
/// Most levels of nested objects and arrays below the root.
const MAX_DEPTH: usize = 10;
/// Most enum values in one strict schema.
const MAX_ENUM_VALUES: usize = 1_000;
/// Most characters of property names and enum values together.
const MAX_NAME_CHARS: usize = 120_000;

/// Formats strict mode accepts on a string.
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

/// Keywords that change what a value may be and that the subset cannot say
/// in any form.
const STRUCTURAL: [&str; 12] = [
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "contains",
];

/// Bounds the subset lacks, said in the description instead.
const NOTED: [&str; 7] = [
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "uniqueItems",
    "minContains",
    "maxContains",
];

/// Keywords copied as they are.
const KEPT: [&str; 9] = [
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "enum",
];

/// A tool's schema in strict form.
#[derive(Debug, Clone, PartialEq)]
pub struct StrictTool {
    /// The schema to send with `strict: true`.
    pub parameters: Value,
    /// The `null`s the model's arguments carry for left-out properties.
    pub nulls: NullFields,
}

/// Why a schema cannot be offered in strict form without loosening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfit(pub String);

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `schema` (a tool's input schema) in the form strict mode accepts, or why
/// it has none.
pub fn openai_strict(schema: &Value) -> Result<StrictTool, Unfit> {
    let mut translation = Translation {
        root: schema,
        references: Vec::new(),
        properties: 0,
        enum_values: 0,
        name_chars: 0,
    };
    let mut root = schema.clone();
    if let Value::Object(object) = &mut root
        && !object.contains_key("type")
        && !object.contains_key("$ref")
    {
        // A tool's arguments are an object; many servers leave that unsaid.
        object.insert("type".into(), json!("object"));
    }
    let (parameters, nulls) = translation.node(&root, 0, true)?;
    if parameters.get("type") != Some(&json!("object")) {
        return Err(Unfit("the arguments are not a single object".into()));
    }
    Ok(StrictTool { parameters, nulls })
}

/// One translation's document and budgets.
struct Translation<'a> {
    root: &'a Value,
    /// The definitions being written in place, outermost first.
    references: Vec<String>,
    properties: usize,
    enum_values: usize,
    name_chars: usize,
}

impl Translation<'_> {
    fn node(
        &mut self,
        node: &Value,
        depth: usize,
        root: bool,
    ) -> Result<(Value, NullFields), Unfit> {
        if depth > MAX_DEPTH {
            return Err(Unfit(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let Value::Object(schema) = node else {
            return Err(Unfit("a schema that accepts any value".into()));
        };
        if let Some(reference) = schema.get("$ref") {
            return self.reference(schema, reference, depth, root);
        }
        if let Some(keyword) = STRUCTURAL.iter().find(|k| schema.contains_key(**k)) {
            return Err(Unfit(format!("`{keyword}` has no strict form")));
        }
        if schema.contains_key("allOf") {
            return self.all_of(schema, depth, root);
        }
        if let Some(branches) = schema.get("anyOf").or_else(|| schema.get("oneOf")) {
            if root {
                return Err(Unfit("a choice of forms at the root".into()));
            }
            return self.any_of(schema, branches, depth);
        }
        self.typed(schema, depth, root)
    }

    fn reference(
        &mut self,
        schema: &Map<String, Value>,
        reference: &Value,
        depth: usize,
        root: bool,
    ) -> Result<(Value, NullFields), Unfit> {
        let Some(pointer) = reference.as_str().and_then(|r| r.strip_prefix('#')) else {
            return Err(Unfit("a reference outside the schema".into()));
        };
        if let Some(other) = schema
            .keys()
            .find(|k| !matches!(k.as_str(), "$ref" | "description" | "title" | "default"))
        {
            return Err(Unfit(format!("`{other}` beside `$ref`")));
        }
        if self.references.iter().any(|open| open == pointer) {
            return Err(Unfit("a recursive definition".into()));
        }
        let target = self.root.pointer(pointer).ok_or_else(|| {
            Unfit(format!(
                "`$ref` to `#{pointer}`, which is not in the schema"
            ))
        })?;
        self.references.push(pointer.to_owned());
        let translated = self.node(target, depth, root);
        self.references.pop();
        let (mut value, nulls) = translated?;
        if let (Some(description), Value::Object(object)) = (schema.get("description"), &mut value)
        {
            object.insert("description".into(), description.clone());
        }
        Ok((value, nulls))
    }

    fn all_of(
        &mut self,
        schema: &Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<(Value, NullFields), Unfit> {
        match schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([only]) if schema.len() == 1 => self.node(only, depth, root),
            _ => Err(Unfit("`allOf` of several schemas".into())),
        }
    }

    fn any_of(
        &mut self,
        schema: &Map<String, Value>,
        branches: &Value,
        depth: usize,
    ) -> Result<(Value, NullFields), Unfit> {
        let Some(branches) = branches.as_array().filter(|b| !b.is_empty()) else {
            return Err(Unfit("an empty choice of forms".into()));
        };
        if schema.contains_key("type") || schema.contains_key("properties") {
            return Err(Unfit("a choice of forms beside a type".into()));
        }
        let mut forms = Vec::with_capacity(branches.len());
        for branch in branches {
            // The model's `null`s inside a choice stay: which form it meant
            // is not known here, and the server's schema judges them.
            forms.push(self.node(branch, depth + 1, false)?.0);
        }
        let mut notes = Vec::new();
        if schema.contains_key("oneOf") {
            notes.push("exactly one of these forms".to_owned());
        }
        let mut out = Map::new();
        out.insert("anyOf".into(), Value::Array(forms));
        let description = schema.get("description").and_then(Value::as_str);
        if let Some(text) = with_notes(description, &notes) {
            out.insert("description".into(), Value::String(text));
        }
        Ok((Value::Object(out), NullFields::default()))
    }
}

mod typed;
