//! What the server offers: its tools (with their input schemas), its
//! resources and resource template, and its prompt.

use std::sync::{Arc, LazyLock};

use rmcp::{
    ErrorData as McpError,
    model::{
        GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Resource,
        ResourceContents, ResourceTemplate, Role, Tool, ToolAnnotations,
    },
};
use serde_json::{Value, json};

use crate::data::{self, LOGO_URI, README_URI, SALES_BY_REGION_TEMPLATE};

/// Name of the tool that `add_tool` makes visible.
pub const EXTRA_TOOL: &str = "extra";

/// A JSON Schema object whose listed properties are all required.
/// Each property is `(name, JSON type, description)`.
fn object_schema(properties: &[(&str, &str, &str)]) -> Arc<JsonObject> {
    let mut props = JsonObject::new();
    for (name, kind, description) in properties {
        let mut property = json!({ "type": kind, "description": description });
        if *kind == "integer"
            && let Some(property) = property.as_object_mut()
        {
            property.insert("minimum".into(), json!(0));
        }
        props.insert((*name).to_owned(), property);
    }
    let required: Vec<&str> = properties.iter().map(|(name, _, _)| *name).collect();
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("required".into(), json!(required));
    Arc::new(schema)
}

/// What a tool that only reads says of itself: read-only, not
/// destructive, idempotent, closed-world. Tools without annotations get
/// MCP's defaults (destructive, open-world), as policies tests rely on.
fn read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

pub(crate) static BASE_TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    vec![
        Tool::new(
            "echo",
            "Returns the given text.",
            object_schema(&[("text", "string", "Text to return")]),
        )
        .annotate(read_only()),
        Tool::new(
            "add",
            "Adds two numbers; the sum comes back as text and as structured content.",
            object_schema(&[
                ("a", "number", "First addend"),
                ("b", "number", "Second addend"),
            ]),
        )
        .with_raw_output_schema(object_schema(&[("sum", "number", "a + b")]))
        .annotate(read_only()),
        Tool::new(
            "fail",
            "Returns a tool error carrying the given message.",
            object_schema(&[("message", "string", "Error message")]),
        ),
        Tool::new(
            "sleep",
            "Sleeps for the given milliseconds; stops early when the call is cancelled.",
            object_schema(&[("ms", "integer", "Milliseconds to sleep")]),
        ),
        Tool::new(
            "big",
            "Returns one text block of exactly the given size in bytes.",
            object_schema(&[("bytes", "integer", "Size of the text in bytes")]),
        ),
        Tool::new(
            "mixed",
            "Returns one content block of each kind: text, image, audio, embedded resource and resource link.",
            object_schema(&[]),
        ),
        Tool::new(
            "counter",
            "Increments a counter kept per MCP session and returns its new value.",
            object_schema(&[]),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false)),
        Tool::new(
            "add_tool",
            "Makes the `extra` tool visible and notifies the client that the tool list changed.",
            object_schema(&[]),
        ),
        Tool::new(
            "stats",
            "Returns the server's statistics as JSON.",
            object_schema(&[]),
        )
        .annotate(read_only()),
        Tool::new(
            "process",
            "Returns the server's process id and the names of its environment variables.",
            object_schema(&[]),
        ),
    ]
});

/// A tool listed only when the server is asked to
/// ([`crate::ExampleServer::with_record_tool`]): it returns the arguments it
/// received, exactly, as its structured result and no text, for tests of
/// JSON that must travel unchanged (64-bit integers, `1.0`).
pub const RECORD_TOOL: &str = "record";

pub(crate) static RECORD: LazyLock<Tool> = LazyLock::new(|| {
    Tool::new(
        RECORD_TOOL,
        "Returns the arguments it received, exactly, as its structured result (and no text).",
        Arc::new(serde_json::Map::from_iter([
            ("type".to_owned(), json!("object")),
            ("additionalProperties".to_owned(), json!(true)),
        ])),
    )
});

pub(crate) static EXTRA: LazyLock<Tool> = LazyLock::new(|| {
    Tool::new(
        EXTRA_TOOL,
        "A tool that appears once `add_tool` has been called.",
        object_schema(&[]),
    )
});

pub(crate) fn sales_resource() -> Resource {
    Resource::new(data::SALES_URI, "sales")
        .with_description("Sales by region and product")
        .with_mime_type("text/csv")
}

pub(crate) fn resources() -> Vec<Resource> {
    vec![
        sales_resource(),
        Resource::new(README_URI, "readme")
            .with_description("What this server offers")
            .with_mime_type("text/plain"),
        Resource::new(LOGO_URI, "logo")
            .with_description("A tiny logo")
            .with_mime_type("image/png")
            .with_size(data::PNG_BYTES.len() as u64),
    ]
}

pub(crate) fn summarize_prompt() -> Prompt {
    Prompt::new(
        SUMMARIZE_PROMPT,
        Some("Asks for a summary of a topic"),
        Some(vec![
            PromptArgument::new("topic")
                .with_description("What to summarize")
                .with_required(true),
            PromptArgument::new("style")
                .with_description("How to write the summary (default: concise)")
                .with_required(false),
        ]),
    )
}

pub(crate) fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(SALES_BY_REGION_TEMPLATE, "sales_by_region")
            .with_description("Sales of one region")
            .with_mime_type("text/csv"),
    ]
}

/// The contents of the resource at `uri`: a listed one, one of the
/// template, or one of the unlisted resources tests read.
pub(crate) fn read(uri: &str) -> Result<ResourceContents, McpError> {
    let contents = match uri {
        data::SALES_URI => {
            ResourceContents::text(data::sales_csv(), uri).with_mime_type("text/csv")
        }
        README_URI => ResourceContents::text(data::README_TEXT, uri),
        LOGO_URI => {
            ResourceContents::blob(data::base64(data::PNG_BYTES), uri).with_mime_type("image/png")
        }
        // Unlisted, for tests: CSV as a blob, and CSV built to amplify.
        data::SALES_BLOB_URI => {
            ResourceContents::blob(data::base64(data::sales_csv().as_bytes()), uri)
                .with_mime_type("text/csv")
        }
        data::KEYS_BLOB_URI => ResourceContents::blob(data::base64(data::KEYS_CSV.as_bytes()), uri)
            .with_mime_type("text/csv"),
        data::SHORT_ROWS_URI => {
            ResourceContents::text(data::short_rows_csv(), uri).with_mime_type("text/csv")
        }
        other => match data::region_from_uri(other).and_then(data::sales_csv_for_region) {
            Some(csv) => ResourceContents::text(csv, uri).with_mime_type("text/csv"),
            None => {
                return Err(McpError::resource_not_found(
                    format!("resource not found: {uri}"),
                    Some(json!({ "uri": uri })),
                ));
            }
        },
    };
    Ok(contents)
}

/// The name of the one prompt.
pub(crate) const SUMMARIZE_PROMPT: &str = "summarize";

/// The `summarize` prompt rendered with `arguments`.
pub(crate) fn summarize(arguments: Option<&JsonObject>) -> Result<GetPromptResult, McpError> {
    let topic = string_argument(arguments, "topic")?
        .ok_or_else(|| McpError::invalid_params("missing required argument: topic", None))?;
    let style = string_argument(arguments, "style")?.unwrap_or("concise");
    Ok(GetPromptResult::new(vec![
        PromptMessage::new_text(Role::User, format!("Summarize {topic} in a {style} style.")),
        PromptMessage::new_text(Role::Assistant, format!("Here is a summary of {topic}:")),
    ])
    .with_description(format!("Summary of {topic}")))
}

fn string_argument<'a>(
    arguments: Option<&'a JsonObject>,
    name: &str,
) -> Result<Option<&'a str>, McpError> {
    match arguments.and_then(|arguments| arguments.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(_) => Err(McpError::invalid_params(
            format!("argument {name} must be a string"),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_has_ten_tools_with_unique_names() {
        let mut names: Vec<&str> = BASE_TOOLS.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names.len(), 10);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 10);
        assert!(!names.contains(&EXTRA_TOOL));
    }
}
