//! What the model reads of a result too large for its context, word for
//! word.

use super::*;
use crate::domain::{
    datasource::{Column, ColumnType, DataSource},
    ids::{DataSourceId, ThreadId},
    oversized::{Cut, NotTable, Shape},
    ports::{Content, ToolOutput},
};

fn source() -> DataSource {
    DataSource {
        columns: vec![
            Column {
                name: "id".into(),
                column_type: ColumnType::Integer,
            },
            Column {
                name: "note".into(),
                column_type: ColumnType::Text,
            },
        ],
        row_count: 120_000,
        table_name: "orders".into(),
        id: DataSourceId::fixed(1),
        thread_id: ThreadId::fixed(1),
        origin: "tool:orders".into(),
        integration_id: None,
        size_bytes: 10,
        created_at: 0,
    }
}

#[test]
fn a_stored_result_names_its_table_schema_rows_and_first_rows() {
    let rows = vec![
        vec!["1".to_owned(), "a | b".to_owned()],
        vec!["2".to_owned(), "NULL".to_owned()],
    ];
    assert_eq!(
        result_table("orders", Shape::JsonArray, 5_000_000, &source(), &rows),
        "The result of orders is 5000000 bytes of a JSON array of objects, too large to read here, so it was stored as a data source of this conversation.\n\
         Table: orders\n\
         Columns: id (integer), note (text)\n\
         Rows: 120000\n\
         First 2 rows:\n\
         id | note\n\
         1 | a \\| b\n\
         2 | NULL\n\
         Query the whole result with the source_query tool, for example: SELECT * FROM orders LIMIT 10"
    );
    assert!(
        result_table("t", Shape::Ndjson, 1, &source(), &[])
            .contains("1 bytes of newline-delimited JSON")
    );
    assert!(result_table("t", Shape::Csv, 1, &source(), &[]).contains("1 bytes of CSV, too large"));
}

#[test]
fn a_cut_result_says_where_how_much_and_why() {
    let cut = Cut::of("line one\nline two\nline three\n", 12);
    assert_eq!(
        result_cut(&cut, 12, None),
        "line one\nlin\n[The result was cut: it is 29 bytes, more than the 12 bytes a result may take here. Shown: its first 12 bytes, up to line 2; left out: the 17 bytes after them, up to line 3.]"
    );
    let reason = not_a_table(&NotTable::Json {
        shape: Shape::JsonArray,
        message: "expected value at line 2 column 8".into(),
    });
    assert_eq!(
        reason,
        "it is not a JSON array of objects: expected value at line 2 column 8"
    );
    assert_eq!(
        result_cut(&cut, 12, Some(&reason)),
        "line one\nlin\n[The result was cut: it is 29 bytes, more than the 12 bytes a result may take here. Shown: its first 12 bytes, up to line 2; left out: the 17 bytes after them, up to line 3. It could not be stored as a table: it is not a JSON array of objects: expected value at line 2 column 8.]"
    );
    assert_eq!(
        not_a_table(&NotTable::TooManyKeys { limit: 500 }),
        "its objects name more than 500 different keys, the most columns a table may have"
    );
}

#[test]
fn the_rendered_length_is_the_rendered_texts() {
    let outputs = [
        vec![Content::Text("abc".into())],
        vec![Content::Text("abc".into()), Content::Text("de".into())],
        vec![
            Content::Resource {
                uri: "data://x".into(),
                mime_type: "text/plain".into(),
                text: Some("hello".into()),
                blob_bytes: None,
            },
            Content::ResourceLink {
                uri: "data://y".into(),
                name: "y".into(),
            },
        ],
        vec![],
    ];
    for content in outputs {
        for structured in [None, Some("{\"a\":1}".to_owned())] {
            let output = ToolOutput {
                content: content.clone(),
                structured,
                ..ToolOutput::default()
            };
            let (text, _) = tool_output("t", &output);
            let expected = if content.is_empty() && output.structured.is_none() {
                0
            } else {
                text.len()
            };
            assert_eq!(rendered_len(&output), expected, "{content:?}");
            if expected > 0 {
                assert_eq!(into_rendered(output), text);
            }
        }
    }
}
