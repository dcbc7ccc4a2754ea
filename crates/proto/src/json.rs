//! Conversions between `google.protobuf.Struct`/`Value` and `serde_json`,
//! for the free-form JSON (tool arguments, schemas, structured results) that
//! the contracts carry.

use prost_types::{ListValue, Struct, Value, value::Kind};
use serde_json::{Map, Number};

/// Converts a protobuf `Value` into JSON. A number that is integral and fits an
/// `i64` becomes a JSON integer, since protobuf keeps every number as `f64`.
pub fn value_to_json(value: &Value) -> serde_json::Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
        Some(Kind::NumberValue(n)) => number_to_json(*n),
        Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
        Some(Kind::ListValue(list)) => {
            serde_json::Value::Array(list.values.iter().map(value_to_json).collect())
        }
        Some(Kind::StructValue(s)) => serde_json::Value::Object(struct_to_map(s)),
    }
}

fn number_to_json(n: f64) -> serde_json::Value {
    // Integers above 2^53 are not exactly representable in f64; keep the f64.
    const MAX_EXACT: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() <= MAX_EXACT {
        serde_json::Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// Converts a protobuf `Struct` into a JSON object map.
pub fn struct_to_map(s: &Struct) -> Map<String, serde_json::Value> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

/// Converts a protobuf `Struct` into a JSON object.
pub fn struct_to_json(s: &Struct) -> serde_json::Value {
    serde_json::Value::Object(struct_to_map(s))
}

/// Converts JSON into a protobuf `Value`.
pub fn json_to_value(json: &serde_json::Value) -> Value {
    let kind = match json {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(json_to_value).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(map_to_struct(map)),
    };
    Value { kind: Some(kind) }
}

/// Converts a JSON object map into a protobuf `Struct`.
pub fn map_to_struct(map: &Map<String, serde_json::Value>) -> Struct {
    Struct {
        fields: map
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
    }
}

/// Converts JSON into a protobuf `Struct`; `None` unless it is an object.
pub fn json_to_struct(json: &serde_json::Value) -> Option<Struct> {
    json.as_object().map(map_to_struct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_through_struct_keeping_integers() {
        let json = serde_json::json!({
            "name": "report", "count": 3, "ratio": 0.5, "tags": ["a", null, true],
            "nested": {"deep": {"n": -7}}
        });
        let s = json_to_struct(&json).expect("an object converts");
        assert_eq!(struct_to_json(&s), json);
    }

    #[test]
    fn non_objects_are_not_structs() {
        assert!(json_to_struct(&serde_json::json!([1, 2])).is_none());
    }
}
