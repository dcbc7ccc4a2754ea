//! Strict forms of schemas with a type (or an enum): objects, arrays and
//! scalars.

use serde_json::{Map, Value, json};

use super::{
    FORMATS, KEPT, MAX_ENUM_VALUES, MAX_NAME_CHARS, MAX_PROPERTIES, NOTED, Translation, Unfit,
};
use crate::outbound::llm::schema::{NullFields, with_notes};

impl Translation<'_> {
    pub(super) fn typed(
        &mut self,
        schema: &Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<(Value, NullFields), Unfit> {
        let types = types_of(schema)?;
        let mut out = Map::new();
        let mut notes = Vec::new();
        let mut nulls = NullFields::default();
        if let Some(types) = &types {
            out.insert("type".into(), types.clone());
        }
        for keyword in KEPT {
            if let Some(value) = schema.get(keyword) {
                out.insert(keyword.into(), value.clone());
            }
        }
        if let Some(value) = schema.get("const") {
            out.insert("enum".into(), Value::Array(vec![value.clone()]));
        }
        if let Some(Value::Array(values)) = out.get("enum") {
            self.count_enum(values)?;
        }
        for keyword in NOTED {
            if let Some(value) = schema.get(keyword) {
                notes.push(format!("{keyword}: {value}"));
            }
        }
        if let Some(format) = schema.get("format").and_then(Value::as_str) {
            if FORMATS.contains(&format) {
                out.insert("format".into(), json!(format));
            } else {
                notes.push(format!("format: {format}"));
            }
        }
        let has = |name: &str| type_list(types.as_ref()).any(|t| t == name);
        if has("object") {
            nulls = self.object(schema, &mut out, depth, root)?;
        }
        if has("array") {
            nulls = self.array(schema, &mut out, depth)?;
        }
        let description = schema.get("description").and_then(Value::as_str);
        if let Some(text) = with_notes(description, &notes) {
            out.insert("description".into(), Value::String(text));
        }
        Ok((Value::Object(out), nulls))
    }

    fn object(
        &mut self,
        schema: &Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
        root: bool,
    ) -> Result<NullFields, Unfit> {
        let empty = Map::new();
        let properties = match schema.get("properties") {
            Some(Value::Object(properties)) => properties,
            None => &empty,
            Some(_) => return Err(Unfit("`properties` that is not an object".into())),
        };
        // Absent or `true` beside listed properties: the properties are what
        // the tool documents, and the object is closed to them. A schema for
        // the other keys is a map the strict subset cannot say; so is an
        // object with no properties below the root (the root's is a tool
        // without arguments).
        match schema.get("additionalProperties") {
            None | Some(Value::Bool(true)) if properties.is_empty() && !root => {
                return Err(Unfit("an object open to any key".into()));
            }
            None | Some(Value::Bool(_)) => {}
            Some(_) => return Err(Unfit("an object whose other keys have a schema".into())),
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        self.properties += properties.len();
        if self.properties > MAX_PROPERTIES {
            return Err(Unfit(format!("more than {MAX_PROPERTIES} properties")));
        }
        let mut translated = Map::new();
        let mut nulls = NullFields::default();
        for (name, property) in properties {
            self.count_name(name)?;
            let (mut value, inner) = self.node(property, depth + 1, false)?;
            if required.contains(&name.as_str()) || accepts_null(&value) {
                nulls.nested(name, inner);
            } else {
                make_nullable(&mut value);
                nulls.optional(name, inner);
            }
            translated.insert(name.clone(), value);
        }
        let names = translated.keys().cloned().map(Value::String).collect();
        out.insert("properties".into(), Value::Object(translated));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), json!(false));
        Ok(nulls)
    }

    fn array(
        &mut self,
        schema: &Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
    ) -> Result<NullFields, Unfit> {
        let Some(items) = schema.get("items") else {
            return Err(Unfit("an array of any values".into()));
        };
        let (items, inner) = self.node(items, depth + 1, false)?;
        out.insert("items".into(), items);
        Ok(NullFields::in_items(inner))
    }

    fn count_enum(&mut self, values: &[Value]) -> Result<(), Unfit> {
        self.enum_values += values.len();
        if self.enum_values > MAX_ENUM_VALUES {
            return Err(Unfit(format!("more than {MAX_ENUM_VALUES} enum values")));
        }
        for value in values {
            match value {
                Value::String(text) => self.count_name(text)?,
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
                _ => return Err(Unfit("an enum value that is not a scalar".into())),
            }
        }
        Ok(())
    }

    fn count_name(&mut self, name: &str) -> Result<(), Unfit> {
        self.name_chars += name.chars().count();
        if self.name_chars > MAX_NAME_CHARS {
            return Err(Unfit(format!(
                "more than {MAX_NAME_CHARS} characters of names and enum values"
            )));
        }
        Ok(())
    }
}

/// The schema's `type`, checked, or `None` for an enum or constant alone.
fn types_of(schema: &Map<String, Value>) -> Result<Option<Value>, Unfit> {
    const TYPES: [&str; 7] = [
        "string", "number", "integer", "boolean", "object", "array", "null",
    ];
    match schema.get("type") {
        Some(Value::String(name)) if TYPES.contains(&name.as_str()) => Ok(Some(json!(name))),
        Some(Value::Array(names))
            if !names.is_empty()
                && names
                    .iter()
                    .all(|n| n.as_str().is_some_and(|n| TYPES.contains(&n))) =>
        {
            Ok(Some(Value::Array(names.clone())))
        }
        Some(other) => Err(Unfit(format!("type {other}"))),
        None if schema.contains_key("properties") => Ok(Some(json!("object"))),
        None if schema.contains_key("enum") || schema.contains_key("const") => Ok(None),
        None => Err(Unfit("a schema that accepts any value".into())),
    }
}

fn type_list(types: Option<&Value>) -> impl Iterator<Item = &str> {
    let list: Vec<&str> = match types {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    list.into_iter()
}

/// True when the translated `schema` already accepts `null`.
fn accepts_null(schema: &Value) -> bool {
    let null = json!("null");
    match schema.get("type") {
        Some(Value::String(name)) if name == "null" => return true,
        Some(Value::Array(names)) if names.contains(&null) => return true,
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum")
        && values.contains(&Value::Null)
    {
        return true;
    }
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|forms| forms.iter().any(accepts_null))
}

/// `schema`, translated, widened by `null` — for a property the model may
/// leave out, which strict mode requires.
fn make_nullable(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Array(forms)) = object.get_mut("anyOf") {
        forms.push(json!({"type": "null"}));
        return;
    }
    match object.get_mut("type") {
        Some(Value::String(name)) => {
            let name = std::mem::take(name);
            object.insert("type".into(), json!([name, "null"]));
        }
        Some(Value::Array(names)) => names.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.push(Value::Null);
    }
}
