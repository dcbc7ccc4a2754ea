//! The fixed content the server serves.

use base64::Engine as _;

/// URI of the full sales table.
pub const SALES_URI: &str = "data://sales.csv";
/// URI of the plain-text readme.
pub const README_URI: &str = "docs://readme";
/// URI of the logo image.
pub const LOGO_URI: &str = "data://logo.png";
/// URI of the sales table sent as a blob with MIME type `text/csv`
/// (readable, not listed).
pub const SALES_BLOB_URI: &str = "data://sales-blob";
/// URI of a CSV sent as a blob that holds an (example) AWS access key, for
/// the guardrails' tests (readable, not listed).
pub const KEYS_BLOB_URI: &str = "data://keys-blob";
/// The CSV at [`KEYS_BLOB_URI`].
pub const KEYS_CSV: &str = "name,key\ndeploy,AKIAIOSFODNN7EXAMPLE\n";
/// URI of a CSV of 500 columns and a million one-field rows: 2 MB that pad
/// to 500 million cells (readable, not listed).
pub const SHORT_ROWS_URI: &str = "data://short-rows.csv";
/// URI template of the per-region sales tables.
pub const SALES_BY_REGION_TEMPLATE: &str = "data://sales/{region}.csv";
/// URI of the resource embedded in the `mixed` tool's result.
pub const EMBEDDED_URI: &str = "docs://embedded";

/// Header line of every sales table.
pub const SALES_HEADER: &str = "region,product,units,price";

/// Rows of the sales table, without the header.
pub const SALES_ROWS: &[&str] = &[
    "north,widget,12,2.50",
    "north,gadget,4,10.00",
    "north,gizmo,7,4.25",
    "south,widget,9,2.50",
    "south,gadget,15,10.00",
    "south,gizmo,3,4.25",
];

/// Text of the readme resource.
pub const README_TEXT: &str = "Switchboard example server. It offers tools that echo, add, \
fail, sleep, and return large or mixed content; a sales table as CSV, also split by region \
through a resource template; a logo image; and a prompt that asks for a summary. Tests use \
it as an upstream MCP server and the local demo bundles it.";

/// Text of the resource embedded in the `mixed` tool's result.
pub const EMBEDDED_TEXT: &str = "Embedded resource text.";

/// A valid 1x1 PNG image.
pub const PNG_BYTES: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A valid WAV file: 8 kHz, mono, 8-bit, four samples.
pub const WAV_BYTES: &[u8] = &[
    0x52, 0x49, 0x46, 0x46, 0x28, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20,
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x40, 0x1f, 0x00, 0x00, 0x40, 0x1f, 0x00, 0x00,
    0x01, 0x00, 0x08, 0x00, 0x64, 0x61, 0x74, 0x61, 0x04, 0x00, 0x00, 0x00, 0x80, 0x90, 0x80, 0x70,
];

/// The full sales table.
pub fn sales_csv() -> String {
    table(SALES_ROWS.iter().copied())
}

/// The sales rows of one region, or `None` when no row has that region.
pub fn sales_csv_for_region(region: &str) -> Option<String> {
    let mut rows = SALES_ROWS
        .iter()
        .copied()
        .filter(|row| row.split(',').next() == Some(region))
        .peekable();
    rows.peek()?;
    Some(table(rows))
}

/// The CSV of [`SHORT_ROWS_URI`].
pub fn short_rows_csv() -> String {
    let header: Vec<String> = (0..500).map(|i| format!("c{i}")).collect();
    let mut csv = header.join(",");
    csv.push('\n');
    csv.push_str(&"x\n".repeat(1_000_000));
    csv
}

/// The region named by a URI of the form `data://sales/{region}.csv`.
pub fn region_from_uri(uri: &str) -> Option<&str> {
    uri.strip_prefix("data://sales/")?
        .strip_suffix(".csv")
        .filter(|region| !region.is_empty() && !region.contains('/'))
}

/// Base64, as MCP carries binary content.
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn table<'a>(rows: impl Iterator<Item = &'a str>) -> String {
    let mut csv = String::from(SALES_HEADER);
    csv.push('\n');
    for row in rows {
        csv.push_str(row);
        csv.push('\n');
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_tables_hold_only_that_region() {
        let south = sales_csv_for_region("south").expect("south has rows");
        let mut lines = south.lines();
        assert_eq!(lines.next(), Some(SALES_HEADER));
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|row| row.starts_with("south,")));
        assert_eq!(sales_csv_for_region("east"), None);
    }

    #[test]
    fn region_is_parsed_from_the_template_shape_only() {
        assert_eq!(region_from_uri("data://sales/north.csv"), Some("north"));
        assert_eq!(region_from_uri("data://sales/.csv"), None);
        assert_eq!(region_from_uri("data://sales/a/b.csv"), None);
        assert_eq!(region_from_uri("data://sales.csv"), None);
    }
}
