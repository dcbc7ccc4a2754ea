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

/// The deepest JSON nesting carried as protobuf structure; an array or
/// object below it is carried as its JSON text.
///
/// Each level of JSON costs two or three nested protobuf messages, and the
/// decoder on the other side of a gRPC hop refuses more than 100, so deeper
/// JSON (a tool result or schema from an MCP server, a model's arguments)
/// would be sent and then never read. 24 levels leave room for the messages
/// that hold the JSON.
pub const MAX_STRUCT_DEPTH: usize = 24;

fn value_at(json: &serde_json::Value, depth: usize) -> Value {
    let kind = match json {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) if depth >= MAX_STRUCT_DEPTH => {
            Kind::StringValue(json.to_string())
        }
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(|item| value_at(item, depth + 1)).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(struct_at(map, depth + 1)),
    };
    Value { kind: Some(kind) }
}

/// Converts a JSON object map into a protobuf `Struct`.
pub fn map_to_struct(map: &Map<String, serde_json::Value>) -> Struct {
    struct_at(map, 1)
}

fn struct_at(map: &Map<String, serde_json::Value>, depth: usize) -> Struct {
    Struct {
        fields: map
            .iter()
            .map(|(k, v)| (k.clone(), value_at(v, depth)))
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

    fn nested(
        depth: usize,
        wrap: impl Fn(serde_json::Value) -> serde_json::Value,
    ) -> serde_json::Value {
        (0..depth).fold(serde_json::json!("leaf"), |inner, _| wrap(inner))
    }

    /// A tool result whose structured content nests 34 objects deep (a few
    /// hundred bytes) was encoded by mcp-service and then refused by
    /// runs-service's decoder ("recursion limit reached"), so the result was
    /// lost; the `mcp_results` fuzz target checks this round trip.
    #[test]
    fn deeply_nested_json_still_decodes_after_the_grpc_hop() {
        use prost::Message as _;

        use crate::mcp::v1::{DiscoverResponse, ExecuteToolResponse, Tool};

        for depth in [33, 34, 60, 127] {
            for json in [
                nested(depth, |inner| serde_json::json!({ "a": inner })),
                serde_json::json!({ "list": nested(depth, |inner| serde_json::json!([inner])) }),
            ] {
                let result = ExecuteToolResponse {
                    structured_content: json_to_struct(&json),
                    ..Default::default()
                };
                let bytes = result.encode_to_vec();
                assert_eq!(ExecuteToolResponse::decode(bytes.as_slice()), Ok(result));

                let discovery = DiscoverResponse {
                    tools: vec![Tool {
                        input_schema: json_to_struct(&json),
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                let bytes = discovery.encode_to_vec();
                assert_eq!(DiscoverResponse::decode(bytes.as_slice()), Ok(discovery));
            }
        }
    }

    #[test]
    fn json_below_the_depth_limit_is_carried_as_its_text() {
        let json = nested(
            MAX_STRUCT_DEPTH + 2,
            |inner| serde_json::json!({ "a": inner }),
        );
        let s = json_to_struct(&json).expect("an object converts");
        let mut cursor = struct_to_json(&s);
        for _ in 0..MAX_STRUCT_DEPTH {
            cursor = cursor["a"].take();
        }
        let text = cursor.as_str().expect("the deep part is text");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(text).ok(),
            Some(nested(2, |inner| serde_json::json!({ "a": inner })))
        );
        // Up to the limit, the structure is kept as it was.
        let shallow = nested(MAX_STRUCT_DEPTH, |inner| serde_json::json!({ "a": inner }));
        let s = json_to_struct(&shallow).expect("an object converts");
        assert_eq!(struct_to_json(&s), shallow);
    }
}
