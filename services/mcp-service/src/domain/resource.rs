//! Resource URIs: RFC 6570 template expansion with caller parameters, and the
//! kind of a read resource (CSV, text, binary), decided once when it is read.

use iri_string::{
    spec::UriSpec,
    template::{
        UriTemplateStr,
        simple_context::{SimpleContext, Value},
    },
};
use rmcp::model::{ReadResourceResult, ResourceContents};
use serde_json::Map;
use switchboard_server::FieldViolation;

use super::{guardrails::Finding, outcome::Outcome};

/// What a resource holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// CSV: MIME type `text/csv` or a URI path ending in `.csv`.
    Csv,
    /// Other text.
    Text,
    /// Binary.
    Binary,
}

/// A resource read: the URI after template expansion, the server's answer,
/// and what the resource holds, decided here once so that every caller
/// reads the same kind.
#[derive(Debug)]
pub struct ResourceRead {
    /// The URI that was read.
    pub uri: String,
    /// The contents read, or the input the server asks for first.
    pub result: Outcome<ReadResourceResult>,
    /// What the resource holds, from its first contents item.
    pub kind: ResourceKind,
    /// What the guardrails found in its text.
    pub findings: Vec<Finding>,
}

impl ResourceRead {
    /// The read of `uri` that answered `result`, its kind decided from the
    /// first contents item's MIME type and whether it is text (no contents
    /// at all, or no contents yet, count as text).
    pub fn new(uri: String, result: Outcome<ReadResourceResult>) -> Self {
        let first = match &result {
            Outcome::Complete(read) => read.contents.first(),
            Outcome::InputRequired(_) => None,
        };
        let (mime_type, is_text) = match first {
            Some(ResourceContents::TextResourceContents { mime_type, .. }) => (mime_type, true),
            Some(ResourceContents::BlobResourceContents { mime_type, .. }) => (mime_type, false),
            _ => (&None, true),
        };
        let mime_type = mime_type.as_deref().filter(|mime| !mime.is_empty());
        let kind = resource_kind(&uri, mime_type, is_text);
        Self {
            uri,
            result,
            kind,
            findings: Vec::new(),
        }
    }

    /// The read with what the guardrails found in it.
    #[must_use]
    pub fn with_findings(mut self, findings: Vec<Finding>) -> Self {
        self.findings = findings;
        self
    }
}

/// The kind of a resource read from `uri` with `mime_type`, whose contents
/// were text (`is_text`) or a blob.
pub fn resource_kind(uri: &str, mime_type: Option<&str>, is_text: bool) -> ResourceKind {
    let mime = mime_type
        .map(|m| {
            m.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let path = uri.split(['?', '#']).next().unwrap_or_default();
    if mime == "text/csv" || path.to_ascii_lowercase().ends_with(".csv") {
        ResourceKind::Csv
    } else if is_text {
        ResourceKind::Text
    } else {
        ResourceKind::Binary
    }
}

/// Expands `uri` as an RFC 6570 template with `parameters` when it has
/// template expressions; returns it unchanged otherwise. Every variable of the
/// template must be given: a missing one is a violation naming it under
/// `field`.
pub fn expand_uri(
    field: &str,
    uri: &str,
    parameters: &Map<String, serde_json::Value>,
) -> Result<String, Vec<FieldViolation>> {
    if !uri.contains('{') {
        return Ok(uri.to_owned());
    }
    let template = UriTemplateStr::new(uri).map_err(|e| {
        vec![FieldViolation::new(
            "uri",
            format!("is not a valid URI template: {e}"),
        )]
    })?;
    let mut context = SimpleContext::new();
    let mut missing = Vec::new();
    for variable in template.variables() {
        let name = variable.as_str();
        match parameters.get(name).and_then(template_value) {
            Some(value) => {
                context.insert(name, value);
            }
            None => missing.push(FieldViolation::new(
                format!("{field}.{name}"),
                format!("the URI template needs the parameter `{name}`"),
            )),
        }
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    template
        .expand::<UriSpec, _>(&context)
        .map(|expanded| expanded.to_string())
        .map_err(|e| {
            vec![FieldViolation::new(
                "uri",
                format!("could not be expanded: {e}"),
            )]
        })
}

fn scalar(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn template_value(value: &serde_json::Value) -> Option<Value> {
    match value {
        serde_json::Value::Array(items) => {
            Some(Value::List(items.iter().filter_map(scalar).collect()))
        }
        serde_json::Value::Object(map) => Some(Value::Assoc(
            map.iter()
                .filter_map(|(k, v)| scalar(v).map(|v| (k.clone(), v)))
                .collect(),
        )),
        serde_json::Value::Null => None,
        other => scalar(other).map(Value::String),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(value: serde_json::Value) -> Map<String, serde_json::Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn templates_expand_with_strings_numbers_and_lists() {
        let uri = expand_uri(
            "parameters",
            "data://sales/{region}.csv",
            &params(json!({"region": "south"})),
        );
        assert_eq!(uri.as_deref().ok(), Some("data://sales/south.csv"));
        let uri = expand_uri(
            "parameters",
            "api://items{?page,tags*}",
            &params(json!({"page": 2, "tags": ["a", "b"]})),
        );
        assert_eq!(
            uri.as_deref().ok(),
            Some("api://items?page=2&tags=a&tags=b")
        );
        let uri = expand_uri(
            "parameters",
            "docs://{name}",
            &params(json!({"name": "a b/c"})),
        );
        assert_eq!(uri.as_deref().ok(), Some("docs://a%20b%2Fc"));
    }

    #[test]
    fn a_missing_parameter_is_named() {
        let error = expand_uri(
            "parameters",
            "data://sales/{region}/{year}.csv",
            &params(json!({"region": "x"})),
        )
        .expect_err("year is missing");
        assert_eq!(error[0].field, "parameters.year");
    }

    #[test]
    fn plain_uris_are_left_alone() {
        let uri = expand_uri("parameters", "docs://readme", &Map::new());
        assert_eq!(uri.as_deref().ok(), Some("docs://readme"));
    }

    #[test]
    fn a_read_takes_its_kind_from_its_first_contents_item() {
        let kind = |uri: &str, result: serde_json::Value| {
            let read = serde_json::from_value(result).expect("a ReadResourceResult");
            ResourceRead::new(uri.into(), Outcome::Complete(read)).kind
        };
        let blob = json!({"contents": [{"uri": "x://a", "blob": "AAE=", "mimeType": "image/png"}]});
        assert_eq!(kind("x://a", blob), ResourceKind::Binary);
        let csv_blob =
            json!({"contents": [{"uri": "x://a", "blob": "YQ==", "mimeType": "text/csv"}]});
        assert_eq!(kind("x://a", csv_blob), ResourceKind::Csv);
        let text = json!({"contents": [{"uri": "x://a", "text": "hi", "mimeType": ""}]});
        assert_eq!(kind("x://a", text), ResourceKind::Text);
        assert_eq!(
            kind("x://a.csv", json!({"contents": []})),
            ResourceKind::Csv
        );
        assert_eq!(kind("x://a", json!({"contents": []})), ResourceKind::Text);
        let asked = Outcome::InputRequired(crate::domain::outcome::InputRequired::default());
        assert_eq!(
            ResourceRead::new("x://a".into(), asked).kind,
            ResourceKind::Text,
            "no contents yet"
        );
    }

    #[test]
    fn kinds_follow_mime_type_then_extension() {
        assert_eq!(
            resource_kind("x://a", Some("text/csv; charset=utf-8"), true),
            ResourceKind::Csv
        );
        assert_eq!(
            resource_kind("x://a.CSV?v=1", None, true),
            ResourceKind::Csv
        );
        assert_eq!(
            resource_kind("x://a.txt", Some("text/plain"), true),
            ResourceKind::Text
        );
        assert_eq!(
            resource_kind("x://a.png", Some("image/png"), false),
            ResourceKind::Binary
        );
    }
}
