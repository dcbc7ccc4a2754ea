use rmcp::model::{ErrorCode, ReadResourceRequestParams, ResourceContents};
use switchboard_example_mcp_server::data;

use crate::common::{connect, mcp_error, start_server};

fn only_text(contents: &[ResourceContents]) -> (&str, Option<&str>) {
    let [
        ResourceContents::TextResourceContents {
            text, mime_type, ..
        },
    ] = contents
    else {
        panic!("one text content: {contents:?}");
    };
    (text, mime_type.as_deref())
}

#[tokio::test]
async fn resources_and_the_region_template_are_listed() {
    let server = start_server().await;
    let client = connect(&server).await;

    let resources = client.list_all_resources().await.expect("resources");
    let listed: Vec<(&str, &str, Option<&str>)> = resources
        .iter()
        .map(|resource| {
            (
                resource.uri.as_str(),
                resource.name.as_str(),
                resource.mime_type.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("data://sales.csv", "sales", Some("text/csv")),
            ("docs://readme", "readme", Some("text/plain")),
            ("data://logo.png", "logo", Some("image/png")),
        ]
    );

    let templates = client
        .list_all_resource_templates()
        .await
        .expect("templates");
    let [template] = templates.as_slice() else {
        panic!("one template: {templates:?}");
    };
    assert_eq!(template.uri_template, "data://sales/{region}.csv");
    assert_eq!(template.name, "sales_by_region");
    assert_eq!(template.mime_type.as_deref(), Some("text/csv"));

    server.shutdown().await;
}

#[tokio::test]
async fn sales_csv_is_read_whole() {
    let server = start_server().await;
    let client = connect(&server).await;

    let read = client
        .read_resource(ReadResourceRequestParams::new("data://sales.csv"))
        .await
        .expect("read");
    let (text, mime_type) = only_text(&read.contents);
    assert_eq!(mime_type, Some("text/csv"));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("region,product,units,price"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().any(|row| row.starts_with("north,")));
    assert!(rows.iter().any(|row| row.starts_with("south,")));

    server.shutdown().await;
}

#[tokio::test]
async fn region_template_returns_only_that_region() {
    let server = start_server().await;
    let client = connect(&server).await;

    let read = client
        .read_resource(ReadResourceRequestParams::new("data://sales/south.csv"))
        .await
        .expect("read");
    let (text, mime_type) = only_text(&read.contents);
    assert_eq!(mime_type, Some("text/csv"));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("region,product,units,price"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|row| row.starts_with("south,")));

    server.shutdown().await;
}

#[tokio::test]
async fn readme_is_plain_text() {
    let server = start_server().await;
    let client = connect(&server).await;

    let read = client
        .read_resource(ReadResourceRequestParams::new("docs://readme"))
        .await
        .expect("read");
    let (text, mime_type) = only_text(&read.contents);
    assert_eq!(mime_type, Some("text/plain"));
    assert_eq!(text, data::README_TEXT);

    server.shutdown().await;
}

#[tokio::test]
async fn logo_is_a_png_blob() {
    let server = start_server().await;
    let client = connect(&server).await;

    let read = client
        .read_resource(ReadResourceRequestParams::new("data://logo.png"))
        .await
        .expect("read");
    let [
        ResourceContents::BlobResourceContents {
            blob, mime_type, ..
        },
    ] = read.contents.as_slice()
    else {
        panic!("one blob content: {:?}", read.contents);
    };
    assert_eq!(mime_type.as_deref(), Some("image/png"));
    assert_eq!(blob, &data::base64(data::PNG_BYTES));

    server.shutdown().await;
}

#[tokio::test]
async fn unknown_resources_are_not_found() {
    let server = start_server().await;
    let client = connect(&server).await;

    for uri in ["data://missing.csv", "data://sales/east.csv"] {
        let error = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .expect_err("no such resource");
        assert_eq!(
            mcp_error(error).code,
            ErrorCode::RESOURCE_NOT_FOUND,
            "{uri}"
        );
    }

    server.shutdown().await;
}
