//! Results past the table size: stored as a data source when tabular, cut
//! otherwise or when the import refuses them; at the size, as they are.

use std::{sync::Arc, sync::Mutex, time::Duration};

use async_trait::async_trait;

use super::{ToolRouter, tests::outcome_with};
use crate::{
    domain::{
        datasource::{
            Column, ColumnType, DataSource, DataSources, ImportError, QueryError, QueryResult,
            Refusal,
        },
        ids::{DataSourceId, IntegrationId, ThreadId},
        ports::McpPort,
        texts,
    },
    fakes::{FakeMcp, ToolBehaviour},
};

const LIMIT: usize = 1024;

/// Data sources that keep what is imported, or refuse it.
#[derive(Default)]
struct Recording {
    imported: Mutex<Vec<(String, String, Vec<u8>)>>,
    refuse: bool,
}

#[async_trait]
impl DataSources for Recording {
    async fn import_csv(
        &self,
        thread_id: ThreadId,
        name: &str,
        origin: &str,
        integration_id: Option<IntegrationId>,
        csv: bytes::Bytes,
    ) -> Result<DataSource, ImportError> {
        if self.refuse {
            return Err(ImportError::TooManyRows {
                limit: 2,
                actual: 3,
            });
        }
        self.imported.lock().expect("not poisoned").push((
            name.to_owned(),
            origin.to_owned(),
            csv.to_vec(),
        ));
        let text = String::from_utf8_lossy(&csv);
        let header = text.lines().next().unwrap_or_default();
        Ok(DataSource {
            id: DataSourceId::fixed(1),
            thread_id,
            table_name: name.to_owned(),
            origin: origin.to_owned(),
            integration_id,
            columns: header
                .split(',')
                .map(|name| Column {
                    name: name.to_owned(),
                    column_type: ColumnType::Text,
                })
                .collect(),
            row_count: i64::try_from(text.lines().count() - 1).unwrap_or(0),
            size_bytes: 0,
            created_at: 0,
        })
    }

    async fn list(&self, _thread_id: ThreadId) -> Result<Vec<DataSource>, anyhow::Error> {
        Ok(Vec::new())
    }

    async fn query(&self, _thread_id: ThreadId, _sql: &str) -> Result<QueryResult, QueryError> {
        Err(QueryError::Refused(Refusal::NoDataSources))
    }
}

/// What the model reads of the tool `rows` answering `text`, with `sources`.
async fn read(text: String, sources: Arc<Recording>) -> super::ToolOutcome {
    let mcp = FakeMcp::default().tool("shop", "rows", ToolBehaviour::Answer(text, Duration::ZERO));
    let router = move |mcp: Arc<dyn McpPort>| {
        ToolRouter::new(mcp, sources, Duration::from_secs(1)).with_table_bytes(LIMIT)
    };
    outcome_with(mcp, router, "shop__rows", serde_json::json!({})).await
}

/// A JSON array of objects of exactly `bytes` (padded with spaces).
fn json_rows(bytes: usize) -> String {
    let mut text = String::from("[");
    let mut id = 0;
    while text.len() + 40 < bytes {
        if id > 0 {
            text.push(',');
        }
        text.push_str(&format!("{{\"id\":{id},\"region\":\"north\"}}"));
        id += 1;
    }
    text.push(']');
    text.push_str(&" ".repeat(bytes - text.len()));
    text
}

#[tokio::test]
async fn a_result_at_the_size_is_read_as_it_is() {
    let sources = Arc::new(Recording::default());
    let text = json_rows(LIMIT);
    let outcome = read(text.clone(), Arc::clone(&sources)).await;
    assert_eq!(outcome.text, text);
    assert!(!outcome.sources_changed);
    assert!(sources.imported.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn a_json_array_one_byte_over_becomes_a_table_of_the_thread() {
    let sources = Arc::new(Recording::default());
    let outcome = read(json_rows(LIMIT + 1), Arc::clone(&sources)).await;
    assert!(!outcome.is_error, "{}", outcome.text);
    assert!(outcome.sources_changed, "source_query is offered next");
    let imported = sources.imported.lock().expect("not poisoned").clone();
    assert_eq!(imported.len(), 1);
    let (name, origin, csv) = &imported[0];
    assert_eq!((name.as_str(), origin.as_str()), ("rows", "tool:rows"));
    let csv = String::from_utf8(csv.clone()).expect("UTF-8");
    assert!(csv.starts_with("id,region\n0,north\n1,north\n"), "{csv}");
    let rows = csv.lines().count() - 1;
    assert!(
        outcome.text.starts_with(&format!(
            "The result of rows is {} bytes of a JSON array of objects, too large to read here",
            LIMIT + 1
        )),
        "{}",
        outcome.text
    );
    assert!(
        outcome.text.contains(&format!(
            "Rows: {rows}\nFirst 5 rows:\nid | region\n0 | north\n"
        )),
        "{}",
        outcome.text
    );
}

#[tokio::test]
async fn text_over_the_size_is_cut_with_a_note() {
    let sources = Arc::new(Recording::default());
    let text = "All quiet on the western front.\n".repeat(40);
    let outcome = read(text.clone(), Arc::clone(&sources)).await;
    let cut = crate::domain::oversized::Cut::of(&text, LIMIT);
    assert_eq!(outcome.text, texts::result_cut(&cut, LIMIT, None));
    assert!(outcome.text.ends_with(
        "[The result was cut: it is 1280 bytes, more than the 1024 bytes a result may take here. Shown: its first 1024 bytes, up to line 33; left out: the 256 bytes after them, up to line 40.]"
    ));
    assert!(!outcome.is_error && !outcome.sources_changed);
    assert!(sources.imported.lock().expect("not poisoned").is_empty());
}

#[tokio::test]
async fn a_table_the_import_refuses_is_cut_with_the_reason() {
    let sources = Arc::new(Recording {
        refuse: true,
        ..Recording::default()
    });
    let outcome = read(json_rows(2 * LIMIT), sources).await;
    assert!(
        outcome.text.ends_with(
            " It could not be stored as a table: the CSV has 3 data rows; the limit is 2 rows.]"
        ),
        "{}",
        outcome.text
    );
    assert!(outcome.text.starts_with("[{\"id\":0,\"region\":\"north\"}"));
    assert!(!outcome.sources_changed);
}

#[tokio::test]
async fn malformed_json_over_the_size_is_cut_with_where_it_breaks() {
    let mut text = json_rows(2 * LIMIT);
    text.insert_str(1, "{\"id\": }, ");
    let outcome = read(text, Arc::new(Recording::default())).await;
    assert!(
        outcome.text.ends_with(
            " It could not be stored as a table: it is not a JSON array of objects: expected value at line 1 column 9.]"
        ),
        "{}",
        outcome.text
    );
}
