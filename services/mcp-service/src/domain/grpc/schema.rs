//! A request message as a JSON Schema under the proto3 JSON mapping:
//! fields by JSON name, 64-bit integers as decimal strings, enums by name,
//! maps as objects, repeated fields as arrays, well-known types as the
//! mapping writes them. A message that contains itself has no finite
//! schema: its method is left out, naming the field that closes the loop.
//! Nodes, depth and enum sizes are bounded; past a bound the set is
//! refused.

use prost_reflect::{EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value, json};

use super::bounds::{GrpcLimits, SchemaError, Skip};

/// `message`'s schema, as a method's input schema.
pub(super) fn input_schema(
    label: &str,
    message: &MessageDescriptor,
    limits: &GrpcLimits,
) -> Result<Map<String, Value>, Skip> {
    let mut walk = Walk {
        label,
        limits,
        nodes: 0,
        open: Vec::new(),
    };
    match walk.message(message)? {
        Value::Object(schema) => Ok(schema),
        other => Ok(Map::from_iter([
            ("type".to_owned(), json!("object")),
            ("description".to_owned(), other),
        ])),
    }
}

struct Walk<'a> {
    label: &'a str,
    limits: &'a GrpcLimits,
    nodes: usize,
    /// The messages being walked, outermost first.
    open: Vec<String>,
}

impl Walk<'_> {
    fn refused(&self, message: String) -> Skip {
        Skip::Refused(SchemaError::at(self.label, message))
    }

    fn node(&mut self) -> Result<(), Skip> {
        self.nodes += 1;
        if self.nodes > self.limits.max_schema_nodes {
            return Err(self.refused(format!(
                "its input schema has more than {} nodes",
                self.limits.max_schema_nodes
            )));
        }
        Ok(())
    }

    fn message(&mut self, message: &MessageDescriptor) -> Result<Value, Skip> {
        self.node()?;
        if let Some(schema) = well_known(message.full_name()) {
            return Ok(schema);
        }
        let name = message.full_name().to_owned();
        if let Some(start) = self.open.iter().position(|m| *m == name) {
            let mut path = self.open[start..].to_vec();
            path.push(name);
            return Err(Skip::Unsupported(SchemaError::at(
                self.label,
                format!(
                    "its request contains itself ({}), which no finite schema describes",
                    path.join(" → ")
                ),
            )));
        }
        if self.open.len() >= self.limits.max_schema_depth {
            return Err(self.refused(format!(
                "its input schema nests more than {} messages",
                self.limits.max_schema_depth
            )));
        }
        self.open.push(name);
        let mut properties = Map::new();
        for field in message.fields() {
            let schema = self.field(&field)?;
            properties.insert(field.json_name().to_owned(), schema);
        }
        self.open.pop();
        let mut schema = json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        });
        let groups: Vec<String> = message
            .oneofs()
            .filter(|o| !o.is_synthetic())
            .map(|o| {
                let names: Vec<String> = o.fields().map(|f| f.json_name().to_owned()).collect();
                names.join(", ")
            })
            .collect();
        if !groups.is_empty() {
            schema["description"] = json!(format!(
                "Set at most one of each group: {}.",
                groups.join("; ")
            ));
        }
        Ok(schema)
    }

    fn field(&mut self, field: &FieldDescriptor) -> Result<Value, Skip> {
        self.node()?;
        if field.is_map() {
            let Kind::Message(entry) = field.kind() else {
                return Ok(json!({"type": "object"}));
            };
            let value = self.kind(&entry.map_entry_value_field().kind())?;
            return Ok(json!({"type": "object", "additionalProperties": value}));
        }
        let schema = self.kind(&field.kind())?;
        if field.is_list() {
            return Ok(json!({"type": "array", "items": schema}));
        }
        Ok(schema)
    }

    fn kind(&mut self, kind: &Kind) -> Result<Value, Skip> {
        Ok(match kind {
            Kind::Double | Kind::Float => json!({"type": "number"}),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
            }
            Kind::Uint32 | Kind::Fixed32 => {
                json!({"type": "integer", "minimum": 0, "maximum": u32::MAX})
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => int64(true),
            Kind::Uint64 | Kind::Fixed64 => int64(false),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::String => json!({"type": "string"}),
            Kind::Bytes => bytes(),
            Kind::Message(message) => self.message(message)?,
            Kind::Enum(enumeration) => self.enumeration(enumeration)?,
        })
    }

    fn enumeration(&mut self, enumeration: &EnumDescriptor) -> Result<Value, Skip> {
        if enumeration.full_name() == "google.protobuf.NullValue" {
            return Ok(json!({"type": "null"}));
        }
        let count = enumeration.values().len();
        if count > self.limits.max_enum_values {
            return Err(self.refused(format!(
                "enum {} has {count} values, more than {}",
                enumeration.full_name(),
                self.limits.max_enum_values
            )));
        }
        self.nodes += count;
        self.node()?;
        let names: Vec<String> = enumeration.values().map(|v| v.name().to_owned()).collect();
        Ok(json!({"type": "string", "enum": names}))
    }
}

/// A 64-bit integer: a decimal string, as the mapping writes it (a JSON
/// number loses precision past 2^53).
fn int64(signed: bool) -> Value {
    let pattern = if signed {
        "^-?[0-9]{1,19}$"
    } else {
        "^[0-9]{1,20}$"
    };
    json!({
        "type": "string",
        "pattern": pattern,
        "description": "a 64-bit integer, as a decimal string",
    })
}

fn bytes() -> Value {
    json!({"type": "string", "contentEncoding": "base64"})
}

/// The well-known types' schemas, as the JSON mapping writes them.
fn well_known(name: &str) -> Option<Value> {
    let number = || json!({"type": "number"});
    Some(match name {
        "google.protobuf.Timestamp" => json!({
            "type": "string",
            "format": "date-time",
            "description": "an RFC 3339 time, e.g. 2026-01-31T09:30:00Z",
        }),
        "google.protobuf.Duration" => json!({
            "type": "string",
            "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?s$",
            "description": "a duration in seconds, e.g. 1.5s",
        }),
        "google.protobuf.Struct" => json!({"type": "object"}),
        "google.protobuf.ListValue" => json!({"type": "array"}),
        "google.protobuf.Value" => json!({"description": "any JSON value"}),
        "google.protobuf.Empty" => json!({"type": "object", "additionalProperties": false}),
        "google.protobuf.FieldMask" => json!({
            "type": "string",
            "description": "field paths, comma-separated",
        }),
        "google.protobuf.Any" => json!({
            "type": "object",
            "properties": {"@type": {"type": "string"}},
            "required": ["@type"],
        }),
        "google.protobuf.DoubleValue" | "google.protobuf.FloatValue" => number(),
        "google.protobuf.Int32Value" => {
            json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
        }
        "google.protobuf.UInt32Value" => {
            json!({"type": "integer", "minimum": 0, "maximum": u32::MAX})
        }
        "google.protobuf.Int64Value" => int64(true),
        "google.protobuf.UInt64Value" => int64(false),
        "google.protobuf.BoolValue" => json!({"type": "boolean"}),
        "google.protobuf.StringValue" => json!({"type": "string"}),
        "google.protobuf.BytesValue" => bytes(),
        _ => return None,
    })
}
