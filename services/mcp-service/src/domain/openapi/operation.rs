//! One operation of a document as a tool: its name, its description, and
//! an input schema that joins its path, query and header parameters and
//! its JSON body (as the property `body`).

use serde_json::{Map, Value, json};

use super::{DocumentError, OpenApiLimits, Skip, schema::inline};

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Into the path template, percent-encoded.
    Path,
    /// Into the query string.
    Query,
    /// Into a request header.
    Header,
}

/// A parameter of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    /// Its name, in the input schema and on the wire.
    pub name: String,
    /// Where it goes.
    pub location: Location,
    /// Whether the document requires it.
    pub required: bool,
}

/// An operation offered as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// The tool's name: the `operationId`, or the method and path.
    pub tool: String,
    /// `GET`, `POST`, …
    pub method: String,
    /// The path template, `/pets/{id}`.
    pub path: String,
    /// The summary and description.
    pub description: String,
    /// The parameters.
    pub parameters: Vec<Parameter>,
    /// Whether it takes a JSON body (`Some`), and whether it is required.
    pub body: Option<bool>,
    /// The tool's input schema.
    pub input_schema: Map<String, Value>,
}

/// The longest description kept, in bytes.
const MAX_DESCRIPTION_BYTES: usize = 4096;

/// Headers an operation may not set: the service sets them, or they carry
/// credentials and connection state.
const RESERVED_HEADERS: [&str; 12] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "traceparent",
    "tracestate",
];

impl Operation {
    /// `GET /pets/{id}`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    pub(super) fn read(
        document: &Value,
        path: &str,
        method: &str,
        item: &Value,
        spec: &Value,
        limits: &OpenApiLimits,
    ) -> Result<Self, Skip> {
        let label = format!("{} {path}", method.to_uppercase());
        let unsupported = |message: String| Skip::Unsupported(DocumentError::at(&label, message));
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut parameters = Vec::new();
        for declared in declared_parameters(document, item, spec) {
            let (parameter, schema) = read_parameter(document, declared, limits, &label)?;
            if parameter.name == "body" || properties.contains_key(&parameter.name) {
                return Err(unsupported(format!(
                    "its parameter name {:?} is `body` or used twice",
                    parameter.name
                )));
            }
            if parameter.required {
                required.push(Value::String(parameter.name.clone()));
            }
            properties.insert(parameter.name.clone(), schema);
            parameters.push(parameter);
        }
        let body = match json_body(document, spec) {
            Body::None => None,
            Body::Json {
                schema,
                required: is_required,
            } => {
                let schema = inline(document, &schema, limits, &label).map_err(Skip::Refused)?;
                properties.insert("body".to_owned(), schema);
                if is_required {
                    required.push(Value::String("body".to_owned()));
                }
                Some(is_required)
            }
            Body::NotJson(kind) => {
                return Err(unsupported(format!(
                    "its body is {kind}; only application/json bodies are supported"
                )));
            }
        };
        let input_schema = json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        Ok(Self {
            tool: tool_name(spec, method, path),
            method: method.to_uppercase(),
            path: path.to_owned(),
            description: description(spec),
            parameters,
            body,
            input_schema: match input_schema {
                Value::Object(object) => object,
                _ => Map::new(),
            },
        })
    }
}

/// A declared parameter and its schema, or why its operation is not
/// offered.
fn read_parameter(
    document: &Value,
    declared: &Value,
    limits: &OpenApiLimits,
    label: &str,
) -> Result<(Parameter, Value), Skip> {
    let unsupported = |message: String| Skip::Unsupported(DocumentError::at(label, message));
    let name = declared["name"].as_str().unwrap_or_default().to_owned();
    let location = match declared["in"].as_str() {
        Some("path") => Location::Path,
        Some("query") => Location::Query,
        Some("header") if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) => {
            return Err(unsupported(format!(
                "it sets the header {name}, which the service sets"
            )));
        }
        Some("header") => Location::Header,
        other => {
            return Err(unsupported(format!(
                "its parameter {name} is in {}, which is not supported",
                other.unwrap_or("no place")
            )));
        }
    };
    if name.is_empty() {
        return Err(unsupported("a parameter has no name".to_owned()));
    }
    let schema = inline(document, &declared["schema"], limits, label).map_err(Skip::Refused)?;
    let schema = with_description(schema, declared["description"].as_str());
    let required = location == Location::Path || declared["required"] == true;
    Ok((
        Parameter {
            name,
            location,
            required,
        },
        schema,
    ))
}

/// The path item's parameters, then the operation's (which replace one of
/// the same name and place); a `$ref` to `#/components/parameters/…`
/// followed one step.
fn declared_parameters<'a>(
    document: &'a Value,
    item: &'a Value,
    spec: &'a Value,
) -> Vec<&'a Value> {
    let resolve = |p: &'a Value| match p["$ref"].as_str().and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => document.pointer(pointer).unwrap_or(&Value::Null),
        None => p,
    };
    let mut all: Vec<&Value> = Vec::new();
    let listed = |v: &'a Value| {
        v["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(resolve)
    };
    for parameter in listed(item).chain(listed(spec)) {
        all.retain(|p| !(p["name"] == parameter["name"] && p["in"] == parameter["in"]));
        all.push(parameter);
    }
    all
}

enum Body {
    None,
    Json { schema: Value, required: bool },
    NotJson(String),
}

fn json_body(document: &Value, spec: &Value) -> Body {
    let mut body = &spec["requestBody"];
    if let Some(pointer) = body["$ref"].as_str().and_then(|r| r.strip_prefix('#')) {
        body = document.pointer(pointer).unwrap_or(&Value::Null);
    }
    let Some(content) = body["content"].as_object() else {
        return Body::None;
    };
    let required = body["required"] == true;
    match content.get("application/json") {
        Some(json) => Body::Json {
            schema: json["schema"].clone(),
            required,
        },
        None if required => Body::NotJson(content.keys().cloned().collect::<Vec<_>>().join(", ")),
        None => Body::None,
    }
}

fn with_description(schema: Value, description: Option<&str>) -> Value {
    match (schema, description) {
        (Value::Object(mut object), Some(description)) if !object.contains_key("description") => {
            object.insert(
                "description".to_owned(),
                Value::String(description.to_owned()),
            );
            Value::Object(object)
        }
        (Value::Null, _) => json!({}),
        (schema, _) => schema,
    }
}

/// The `operationId` when it is a valid tool name (`^[a-zA-Z0-9_-]{1,64}$`),
/// else the method and the path's words: `get_pets_id`.
fn tool_name(spec: &Value, method: &str, path: &str) -> String {
    let valid = |name: &str| {
        (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if let Some(id) = spec["operationId"].as_str().filter(|id| valid(id)) {
        return id.to_owned();
    }
    let words = path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty());
    let mut name = std::iter::once(method)
        .chain(words)
        .collect::<Vec<_>>()
        .join("_");
    name.truncate(64);
    name
}

fn description(spec: &Value) -> String {
    let parts: Vec<&str> = ["summary", "description"]
        .iter()
        .filter_map(|k| spec[*k].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    let mut text = parts.join("\n\n");
    if text.len() > MAX_DESCRIPTION_BYTES {
        let mut cut = MAX_DESCRIPTION_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}
