//! A call's arguments as its request message, and its response messages
//! as JSON, both under the proto3 JSON mapping.

use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions};
use serde_json::{Map, Value};

/// `arguments` as a `descriptor` message; a field the message does not
/// have is refused, as is a value of the wrong type (the error, for the
/// model, names the field).
pub fn request(
    descriptor: &MessageDescriptor,
    arguments: &Map<String, Value>,
) -> Result<DynamicMessage, String> {
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    DynamicMessage::deserialize_with_options(
        descriptor.clone(),
        Value::Object(arguments.clone()),
        &options,
    )
    .map_err(|e| {
        format!(
            "the arguments do not fit the request message {}: {e}",
            descriptor.full_name()
        )
    })
}

/// `message` as JSON: fields by JSON name, defaults left out, 64-bit
/// integers as strings, enums by name.
pub fn to_json(message: &DynamicMessage) -> Value {
    message
        .serialize_with_options(serde_json::value::Serializer, &SerializeOptions::new())
        .unwrap_or_else(|e| Value::String(format!("the message could not be written as JSON: {e}")))
}

/// `value` as a result's structured content, which is an object: a message
/// written as another JSON type (a well-known type) under `value`.
pub fn as_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(object) => object,
        other => Map::from_iter([("value".to_owned(), other)]),
    }
}
