//! A schema of an OpenAPI document made self-contained for a tool's input:
//! every local `$ref` (`#/components/schemas/Pet`) replaced by what it
//! points to, bounded so that a hostile document can neither loop (a
//! `$ref` cycle is refused, naming it) nor amplify (refs to refs, each
//! used twice, would double at every level: the nodes written are counted
//! and refused past the bound).

use serde_json::{Map, Value};

use super::{DocumentError, OpenApiLimits};

/// Inlines the `$ref`s of `schema` against `document`.
pub fn inline(
    document: &Value,
    schema: &Value,
    limits: &OpenApiLimits,
    at: &str,
) -> Result<Value, DocumentError> {
    let mut inliner = Inliner {
        document,
        limits,
        nodes: 0,
        trail: Vec::new(),
        at,
    };
    inliner.value(schema, 0)
}

struct Inliner<'a> {
    document: &'a Value,
    limits: &'a OpenApiLimits,
    nodes: usize,
    /// The refs being inlined, outermost first: a ref met again is a cycle.
    trail: Vec<String>,
    at: &'a str,
}

impl Inliner<'_> {
    fn value(&mut self, value: &Value, depth: usize) -> Result<Value, DocumentError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_schema_nodes {
            return Err(DocumentError::at(
                self.at,
                format!(
                    "its input schema grows past {} nodes once its $refs are inlined",
                    self.limits.max_schema_nodes
                ),
            ));
        }
        if depth > self.limits.max_schema_depth {
            return Err(DocumentError::at(
                self.at,
                format!(
                    "its input schema nests deeper than {} levels",
                    self.limits.max_schema_depth
                ),
            ));
        }
        match value {
            Value::Object(object) => match object.get("$ref").and_then(Value::as_str) {
                Some(reference) => self.reference(reference, depth),
                None => self.object(object, depth),
            },
            Value::Array(items) => items
                .iter()
                .map(|item| self.value(item, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn object(
        &mut self,
        object: &Map<String, Value>,
        depth: usize,
    ) -> Result<Value, DocumentError> {
        let mut out = Map::new();
        for (key, value) in object {
            out.insert(key.clone(), self.value(value, depth + 1)?);
        }
        Ok(Value::Object(out))
    }

    fn reference(&mut self, reference: &str, depth: usize) -> Result<Value, DocumentError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(DocumentError::at(
                self.at,
                format!(
                    "$ref {reference:?} is not within the document (only #/… refs are followed)"
                ),
            ));
        };
        if self.trail.iter().any(|r| r == reference) {
            return Err(DocumentError::at(
                self.at,
                format!(
                    "its schema refers to itself ({} → {reference}); recursive schemas are not supported",
                    self.trail.join(" → ")
                ),
            ));
        }
        let target = self.document.pointer(pointer).ok_or_else(|| {
            DocumentError::at(self.at, format!("$ref {reference:?} points to nothing"))
        })?;
        self.trail.push(reference.to_owned());
        let inlined = self.value(target, depth + 1);
        self.trail.pop();
        inlined
    }
}
