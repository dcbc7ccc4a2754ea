//! `switchboard sources`: a thread's data sources (CSV tables for `source_query`).

use std::{
    io::Read as _,
    path::{Path, PathBuf},
};

use clap::Subcommand;
use switchboard_proto::runs::v1 as runs;

use super::Context;
use crate::{
    args::PageArgs,
    error::{CliError, Service},
    output::{table, time},
};

/// Largest CSV read from disk; the service's own limit is lower (15 MiB by
/// default) and answers with a clear error.
const MAX_CSV_BYTES: u64 = 64 * 1024 * 1024;

/// The data source commands.
#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// List a thread's data sources
    List {
        /// The thread id.
        #[arg(long)]
        thread: String,
        /// Paging.
        #[command(flatten)]
        page: PageArgs,
    },
    /// Import a CSV file (with a header row) as a data source of a thread
    Import {
        /// The thread id.
        #[arg(long)]
        thread: String,
        /// Its name; the table name derives from it [default: the file name without extension]
        #[arg(long)]
        name: Option<String>,
        /// The CSV file.
        file: PathBuf,
    },
}

/// Runs a data source command.
pub async fn run(ctx: &Context, command: SourcesCommand) -> Result<(), CliError> {
    let mut client = ctx.clients.runs()?;
    let failed = CliError::from(Service::Runs);
    match command {
        SourcesCommand::List { thread, page } => {
            let response = client
                .list_data_sources(ctx.clients.unary(runs::ListDataSourcesRequest {
                    thread_id: thread,
                    page_size: page.page_size,
                    page_token: page.page_token,
                }))
                .await
                .map_err(failed)?
                .into_inner();
            ctx.out.either(&response, || {
                let mut rows = table(&["TABLE", "ROWS", "COLUMNS", "ORIGIN", "CREATED"]);
                for source in &response.data_sources {
                    rows.add_row(vec![
                        source.table_name.clone(),
                        source.row_count.to_string(),
                        columns(source),
                        source.origin.clone(),
                        time(source.create_time.as_ref()),
                    ]);
                }
                ctx.out.line(rows)?;
                ctx.out.next_page(&response.next_page_token)
            })
        }
        SourcesCommand::Import { thread, name, file } => {
            let csv = read_csv(&file)?;
            let name = name.unwrap_or_else(|| {
                file.file_stem()
                    .map(|stem| stem.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "data".into())
            });
            let source = client
                .import_data_source(ctx.clients.unary(runs::ImportDataSourceRequest {
                    thread_id: thread,
                    name,
                    csv,
                    request_id: ctx.request_id.clone(),
                }))
                .await
                .map_err(failed)?
                .into_inner()
                .data_source
                .unwrap_or_default();
            ctx.out.either(&source, || {
                ctx.out.line(format!(
                    "imported {} rows as table {} ({})",
                    source.row_count,
                    source.table_name,
                    columns(&source)
                ))
            })
        }
    }
}

fn read_csv(path: &Path) -> Result<Vec<u8>, CliError> {
    let unreadable =
        |error: std::io::Error| CliError::Usage(format!("cannot read {}: {error}", path.display()));
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut csv = Vec::new();
    file.take(MAX_CSV_BYTES + 1)
        .read_to_end(&mut csv)
        .map_err(unreadable)?;
    if csv.len() as u64 > MAX_CSV_BYTES {
        return Err(CliError::Usage(format!(
            "{} is larger than {MAX_CSV_BYTES} bytes",
            path.display()
        )));
    }
    Ok(csv)
}

fn columns(source: &runs::DataSource) -> String {
    source
        .columns
        .iter()
        .map(|c| {
            let kind = runs::ColumnType::try_from(c.r#type)
                .map(|t| {
                    t.as_str_name()
                        .trim_start_matches("COLUMN_TYPE_")
                        .to_lowercase()
                })
                .unwrap_or_else(|_| "?".into());
            format!("{} {kind}", c.name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}
