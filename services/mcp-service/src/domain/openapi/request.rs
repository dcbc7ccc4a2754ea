//! A tool call's arguments as the HTTP request of its operation: path
//! parameters percent-encoded into their segment (a value can never add a
//! segment or climb out of the path: `/` is encoded, `.` and `..` are
//! refused), query parameters form-encoded, header parameters checked as
//! header values, and the JSON body. What the operation does not declare is
//! refused, never sent.

use serde_json::{Map, Value};

use super::{Location, Operation, Parameter};

/// The request an operation's call makes, relative to the pinned base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path with its parameters, and the query string if any.
    pub path_and_query: String,
    /// The header parameters.
    pub headers: Vec<(String, String)>,
    /// The JSON body, if any.
    pub body: Option<Value>,
}

/// The request `arguments` make of `operation`, or what is wrong with them
/// (in words for a model).
pub fn build(operation: &Operation, arguments: &Map<String, Value>) -> Result<ApiRequest, String> {
    if let Some(unknown) = arguments
        .keys()
        .find(|k| *k != "body" && !operation.parameters.iter().any(|p| &p.name == *k))
    {
        return Err(format!("unknown argument `{unknown}`"));
    }
    let mut request = ApiRequest {
        method: operation.method.clone(),
        path_and_query: operation.path.clone(),
        headers: Vec::new(),
        body: None,
    };
    let mut query: Vec<String> = Vec::new();
    for parameter in &operation.parameters {
        let name = &parameter.name;
        match arguments.get(name).filter(|v| !v.is_null()) {
            Some(value) => place(parameter, value, &mut request, &mut query)?,
            None if parameter.required => {
                return Err(format!("missing required argument `{name}`"));
            }
            None => {}
        }
    }
    let path = request.path_and_query;
    if path.contains('{') {
        return Err(format!(
            "the path {path} has a parameter the document does not declare"
        ));
    }
    let body = match (operation.body, arguments.get("body")) {
        (Some(_), Some(body)) => Some(body.clone()),
        (Some(true), None) => return Err("missing required argument `body`".to_owned()),
        (None, Some(_)) => return Err("unknown argument `body`".to_owned()),
        _ => None,
    };
    request.path_and_query = if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    };
    request.body = body;
    Ok(request)
}

/// One argument put where its parameter goes.
fn place(
    parameter: &Parameter,
    value: &Value,
    request: &mut ApiRequest,
    query: &mut Vec<String>,
) -> Result<(), String> {
    let name = &parameter.name;
    match parameter.location {
        Location::Path => {
            let text = scalar(name, value)?;
            if text.is_empty() || text == "." || text == ".." {
                return Err(format!("argument `{name}` may not be {text:?} in a path"));
            }
            request.path_and_query = request
                .path_and_query
                .replace(&format!("{{{name}}}"), &encode_segment(&text));
        }
        Location::Query => {
            let values = match value {
                Value::Array(items) => items
                    .iter()
                    .map(|v| scalar(name, v))
                    .collect::<Result<Vec<_>, _>>()?,
                other => vec![scalar(name, other)?],
            };
            for v in values {
                query.push(format!("{}={}", form(name), form(&v)));
            }
        }
        Location::Header => {
            let text = scalar(name, value)?;
            if !text
                .bytes()
                .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
            {
                return Err(format!("argument `{name}` is not a valid header value"));
            }
            request.headers.push((name.clone(), text));
        }
    }
    Ok(())
}

/// A value that goes into a path, query or header as text: a string, a
/// number (exact, as written: a 64-bit integer stays exact) or a bool.
fn scalar(name: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        _ => Err(format!(
            "argument `{name}` must be a string, a number or a bool"
        )),
    }
}

/// Every byte but RFC 3986's unreserved ones percent-encoded: a value stays
/// one path segment.
fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn form(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
