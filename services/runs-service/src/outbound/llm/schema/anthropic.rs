//! A tool's input schema as Anthropic's Messages API accepts it.
//!
//! Anthropic takes JSON Schema as it is (`$ref`, `$defs`, `oneOf`, formats
//! and open objects included) with two exceptions: the root must be
//! `"type": "object"`, and `oneOf`, `anyOf` and `allOf` are refused at the
//! root. So a schema passes untouched unless it has one of those; then the
//! root's forms are merged into one object — all of `allOf`'s properties and
//! required ones; for `oneOf`/`anyOf`, every form's properties, required
//! when every form requires them, and the forms named in the description.
//! The server's own schema still judges the arguments before the call.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::with_notes;

const CHOICES: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// `schema` in the form Anthropic accepts; borrowed when it already is.
pub fn anthropic_form(schema: &Value) -> Cow<'_, Value> {
    let Value::Object(object) = schema else {
        return Cow::Owned(json!({"type": "object"}));
    };
    let typed = object.get("type") == Some(&json!("object"));
    if typed && !CHOICES.iter().any(|k| object.contains_key(*k)) {
        return Cow::Borrowed(schema);
    }
    let mut out = object.clone();
    out.insert("type".into(), json!("object"));
    let mut notes = Vec::new();
    for keyword in CHOICES {
        if let Some(Value::Array(listed)) = out.remove(keyword) {
            let forms: Vec<&Map<String, Value>> = listed
                .iter()
                .filter_map(|form| resolve(schema, form))
                .filter_map(Value::as_object)
                .collect();
            let mut merged = merge(&mut out, &forms, keyword == "allOf");
            notes.append(&mut merged);
        }
    }
    let description = out.get("description").and_then(Value::as_str);
    if let Some(text) = with_notes(description, &notes) {
        out.insert("description".into(), Value::String(text));
    }
    Cow::Owned(Value::Object(out))
}

/// `form`, or the definition its local `$ref` names.
fn resolve<'a>(root: &'a Value, form: &'a Value) -> Option<&'a Value> {
    match form.get("$ref").and_then(Value::as_str) {
        Some(reference) => root.pointer(reference.strip_prefix('#')?),
        None => Some(form),
    }
}

/// Merges `forms`' properties and required names into `out`; the notes
/// that say which forms there were, for a choice.
fn merge(out: &mut Map<String, Value>, forms: &[&Map<String, Value>], all: bool) -> Vec<String> {
    let mut properties = match out.remove("properties") {
        Some(Value::Object(properties)) => properties,
        _ => Map::new(),
    };
    let mut required: Vec<Value> = match out.remove("required") {
        Some(Value::Array(names)) => names,
        _ => Vec::new(),
    };
    let required_of = |form: &Map<String, Value>| -> Vec<Value> {
        form.get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut shared: Option<Vec<Value>> = None;
    let mut described = Vec::new();
    for form in forms {
        if let Some(Value::Object(own)) = form.get("properties") {
            for (name, property) in own {
                properties
                    .entry(name.clone())
                    .or_insert_with(|| property.clone());
            }
        }
        let names = required_of(form);
        described.push(format!(
            "{{{}}}",
            names
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if all {
            required.extend(names);
        } else {
            shared = Some(match shared {
                None => names,
                Some(before) => before.into_iter().filter(|n| names.contains(n)).collect(),
            });
        }
    }
    required.extend(shared.unwrap_or_default());
    let mut seen = Vec::with_capacity(required.len());
    required.retain(|name| {
        let first = !seen.contains(name);
        seen.push(name.clone());
        first
    });
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    if all || forms.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "give one of these sets of properties: {}",
        described.join(" or ")
    )]
}
