//! What the built-in tools answer: resources, data-source imports, prompts
//! and queries.

use super::render_content;
use crate::domain::{
    datasource::{ColumnType, DataSource},
    ports::PromptLine,
};

/// `retrieve_mcp_resource` could not do its job.
pub fn resource_failed(message: impl std::fmt::Display) -> String {
    format!("Resource retrieval failed: {message}")
}

/// `retrieve_mcp_prompt` could not do its job.
pub fn prompt_failed(message: impl std::fmt::Display) -> String {
    format!("Prompt retrieval failed: {message}")
}

fn type_name(column_type: ColumnType) -> &'static str {
    match column_type {
        ColumnType::Text => "text",
        ColumnType::Integer => "integer",
        ColumnType::Float => "float",
        ColumnType::Boolean => "boolean",
        ColumnType::Date => "date",
        ColumnType::Timestamp => "timestamp",
    }
}

/// A data source's columns as the model reads them: `units (integer), …`.
pub(super) fn column_list(source: &DataSource) -> String {
    let columns: Vec<String> = source
        .columns
        .iter()
        .map(|c| format!("{} ({})", c.name, type_name(c.column_type)))
        .collect();
    columns.join(", ")
}

/// A CSV resource became a data source.
pub fn csv_imported(uri: &str, source: &DataSource) -> String {
    format!(
        "CSV resource imported as data source: {uri}\nTable: {table}\nColumns: {columns}\nRows: {rows}\nYou can now query this data using the source_query tool, for example: SELECT * FROM {table} LIMIT 10",
        table = source.table_name,
        columns = column_list(source),
        rows = source.row_count,
    )
}

/// A text resource, cut at `cap` characters.
pub fn text_resource(text: String, cap: usize) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text;
    }
    let cut: String = text.chars().take(cap).collect();
    format!("{cut}\n[The resource was cut at {cap} of {total} characters.]")
}

/// A binary resource, described.
pub fn binary_resource(uri: &str, mime_type: &str, bytes: usize) -> String {
    let mime_type = if mime_type.is_empty() {
        "unknown type"
    } else {
        mime_type
    };
    format!(
        "Binary resource {uri}: {mime_type}, {bytes} bytes. Its content cannot be shown as text."
    )
}

/// A prompt rendered with role labels.
pub fn prompt_rendered(name: &str, description: &str, lines: &[PromptLine]) -> String {
    let mut out = format!("Prompt: {name}\n");
    if !description.is_empty() {
        out.push_str(&format!("Description: {description}\n"));
    }
    for (i, line) in lines.iter().enumerate() {
        let mut role = line.role.clone();
        if let Some(first) = role.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        out.push_str(&format!(
            "\n{}. {role}: {}",
            i + 1,
            render_content(&line.content)
        ));
    }
    out
}

/// `source_query` failed in the engine (or was not given a query).
pub fn query_failed(message: impl std::fmt::Display) -> String {
    format!("Query failed: {message}")
}

/// `source_query` refused the query before running it.
pub fn query_refused(message: impl std::fmt::Display) -> String {
    format!("Query refused: {message}")
}

/// `source_query` ran past its time limit.
pub fn query_timed_out(limit: std::time::Duration) -> String {
    query_failed(format_args!(
        "it ran longer than {}s and was stopped",
        limit.as_secs_f64()
    ))
}

/// `source_query` failed for a reason the model cannot act on.
pub fn query_internal_error() -> String {
    query_failed("internal error")
}
