//! `sales_rows`, listed on request: a JSON array of as many sales objects
//! as asked for (up to [`MAX_SALES_ROWS`]), for tests of results too large
//! for a model's context.

use std::{fmt::Write as _, sync::Arc};

use rmcp::{
    ErrorData as McpError,
    model::{CallToolResult, JsonObject, Tool},
};
use serde::Deserialize;
use serde_json::json;

use crate::calls::{parse_args, text_result};

/// The name of the tool.
pub const SALES_ROWS_TOOL: &str = "sales_rows";

/// Most rows one call returns (about 60 MB of JSON), so that a caller
/// cannot make the server allocate without bound.
pub const MAX_SALES_ROWS: usize = 500_000;

const REGIONS: [&str; 4] = ["north", "south", "east", "west"];

/// The tool as listed.
pub(crate) fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {"rows": {"type": "integer", "description": "How many rows to return"}},
        "required": ["rows"],
    });
    let schema: JsonObject = match schema {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(
        SALES_ROWS_TOOL,
        "Returns the given number of sales rows as one JSON array of objects.",
        Arc::new(schema),
    )
}

#[derive(Deserialize)]
struct RowsArgs {
    rows: usize,
}

/// Row `i`: `id` is `i`, `units` is `i % 100`, `region` cycles through
/// north, south, east and west.
fn push_row(out: &mut String, i: usize) {
    let _ = write!(
        out,
        r#"{{"id":{i},"region":"{}","units":{},"price":{}.25,"shipped":{},"note":"order {i} of the example server's sales rows"}}"#,
        REGIONS[i % REGIONS.len()],
        i % 100,
        i % 50,
        i.is_multiple_of(2),
    );
}

/// `sales_rows`: the rows as one text block holding a JSON array.
pub(crate) fn call(arguments: Option<JsonObject>) -> Result<CallToolResult, McpError> {
    let RowsArgs { rows } = parse_args(arguments)?;
    if rows > MAX_SALES_ROWS {
        return Err(McpError::invalid_params(
            format!("rows must be at most {MAX_SALES_ROWS}"),
            None,
        ));
    }
    let mut text = String::with_capacity(rows.saturating_mul(130) + 2);
    text.push('[');
    for i in 0..rows {
        if i > 0 {
            text.push(',');
        }
        push_row(&mut text, i);
    }
    text.push(']');
    Ok(text_result(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_a_json_array_of_objects_and_bounded() {
        let arguments = |rows: usize| json!({ "rows": rows }).as_object().cloned();
        let result = call(arguments(3)).expect("three rows");
        let text = result.content[0].as_text().expect("text").text.clone();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&text).expect("JSON");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2]["region"], "east");
        assert_eq!(rows[2]["units"], 2);
        assert!(call(arguments(MAX_SALES_ROWS + 1)).is_err());
    }
}
