//! Data sources at size: import a 1,000,000-row CSV into SQLite and run a
//! GROUP BY over it, next to DuckDB (Python) doing the same.
//!
//! `cargo bench -p switchboard-runs-service --bench data_sources`
//! Targets on a 2-core machine: import ≤ 3 s, query ≤ 300 ms.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use switchboard_db::DatabaseArgs;
use switchboard_runs_service::{
    domain::{
        datasource::{DataSources, ImportLimits, QueryLimits},
        entities::Thread,
        ids::{AgentId, ThreadId},
        ports::RunsRepository,
        texts,
    },
    outbound::{
        datasource::SqlDataSources,
        sql::{MIGRATIONS, SqlRunsRepository},
    },
};

const ROWS: usize = 1_000_000;
const QUERY: &str = "SELECT region, SUM(units * price) AS revenue, COUNT(*) AS n \
                     FROM sales GROUP BY region ORDER BY region";
const QUERY_RUNS: usize = 5;
const IMPORT_TARGET: Duration = Duration::from_secs(3);
const QUERY_TARGET: Duration = Duration::from_millis(300);

const REGIONS: [&str; 8] = [
    "north",
    "south",
    "east",
    "west",
    "central",
    "north_east",
    "south_west",
    "islands",
];

/// A deterministic 1,000,000-row, 6-column CSV.
fn write_csv(path: &Path) -> anyhow::Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "id,region,product,units,price,day")?;
    // xorshift: reproducible data without a random-number crate.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for id in 1..=ROWS {
        let region = REGIONS[(next() % 8) as usize];
        let product = next() % 50;
        let units = next() % 100 + 1;
        let cents = next() % 100_000 + 99;
        let day = next() % 365;
        let (month, dom) = (day / 31 + 1, day % 28 + 1);
        writeln!(
            out,
            "{id},{region},product_{product:02},{units},{}.{:02},2024-{month:02}-{dom:02}",
            cents / 100,
            cents % 100
        )?;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Peak resident memory of this process (VmHWM), in MiB.
fn peak_rss_mib() -> anyhow::Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM in /proc/self/status")?;
    let kib: f64 = line
        .split_whitespace()
        .nth(1)
        .context("VmHWM has no value")?
        .parse()?;
    Ok(kib / 1024.0)
}

/// The workspace's Python venv, `.tools/venv`, found above this package.
fn venv_python() -> Option<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join(".tools/venv/bin/python3"))
        .find(|p| p.exists())
}

/// DuckDB's numbers on the same file, installing its Python package into the
/// venv when missing.
fn duckdb(csv: &Path) -> anyhow::Result<String> {
    let python = venv_python().context("no .tools/venv (run `make tools`)")?;
    let has_duckdb = Command::new(&python)
        .args(["-c", "import duckdb"])
        .status()?
        .success();
    if !has_duckdb {
        let pip = python.with_file_name("pip");
        eprintln!("installing duckdb into {}", pip.display());
        if !Command::new(&pip)
            .args(["install", "duckdb"])
            .status()?
            .success()
        {
            bail!("`pip install duckdb` failed");
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/bench_duckdb.py");
    let output = Command::new(&python).arg(script).arg(csv).output()?;
    if !output.status.success() {
        bail!(
            "bench_duckdb.py failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn verdict(took: Duration, target: Duration) -> &'static str {
    if took <= target { "met" } else { "MISSED" }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let csv_path = dir.path().join("sales.csv");
    let csv_bytes = write_csv(&csv_path)?;
    let csv = std::fs::read(&csv_path)?;

    let url = format!("sqlite://{}?mode=rwc", dir.path().join("runs.db").display());
    let pool = DatabaseArgs::for_url(&url)
        .open("runs", MIGRATIONS)
        .await?
        .pool;
    let thread = Thread {
        id: ThreadId::new(),
        org_id: "bench".into(),
        user_id: "bench".into(),
        agent_id: AgentId::new(),
        title: "bench".into(),
        created_at: 0,
        updated_at: 0,
    };
    SqlRunsRepository::new(pool.clone())
        .insert_thread(&thread)
        .await?;
    let thread_id = thread.id;
    let sources = SqlDataSources::new(
        pool.clone(),
        ImportLimits::default(),
        QueryLimits::default(),
    );

    let start = Instant::now();
    let source = sources
        .import_csv(
            thread_id,
            "sales",
            "bench",
            None,
            bytes::Bytes::copy_from_slice(&csv),
        )
        .await?;
    let import = start.elapsed();
    drop(csv);
    let stored: i64 = sqlx::query_scalar("SELECT LENGTH(content) FROM data_sources WHERE id = $1")
        .bind(source.id.to_string())
        .fetch_one(&pool)
        .await?;

    // Cold: a fresh adapter decodes the stored table first.
    let cold_sources = SqlDataSources::new(
        pool.clone(),
        ImportLimits::default(),
        QueryLimits::default(),
    );
    let start = Instant::now();
    let result = cold_sources.query(thread_id, QUERY).await?;
    let cold = start.elapsed();

    let mut warm = Duration::MAX;
    for _ in 0..QUERY_RUNS {
        let start = Instant::now();
        let again = sources.query(thread_id, QUERY).await?;
        warm = warm.min(start.elapsed());
        assert_eq!(again, result);
    }
    let rss = peak_rss_mib()?;

    println!(
        "data sources: {ROWS} rows, {csv_bytes} bytes of CSV, {stored} bytes stored (Parquet)"
    );
    println!("{}", texts::query_table(&result));
    println!();
    let duck = duckdb(&csv_path);
    let (duck_import, duck_query, duck_rss) = match &duck {
        Ok(line) => (
            format!("{} s", field(line, "import_s").unwrap_or("?")),
            format!(
                "{} ms",
                field(line, "query_s")
                    .and_then(|s| s.parse::<f64>().ok())
                    .map_or("?".into(), |s| format!("{:.1}", s * 1000.0))
            ),
            format!("{} MiB", field(line, "peak_rss_mib").unwrap_or("?")),
        ),
        Err(error) => {
            println!("DuckDB comparison skipped: {error:#}");
            ("-".into(), "-".into(), "-".into())
        }
    };
    println!(
        "{:<34} {:>22} {:>16}",
        "", "switchboard/DataFusion", "DuckDB (Python)"
    );
    println!(
        "{:<34} {:>22} {:>16}",
        "import (parse+infer+encode+store)",
        format!("{:.3} s", import.as_secs_f64()),
        duck_import
    );
    println!(
        "{:<34} {:>22} {:>16}",
        format!("GROUP BY, warm (best of {QUERY_RUNS})"),
        format!("{:.1} ms", warm.as_secs_f64() * 1000.0),
        duck_query
    );
    println!(
        "{:<34} {:>22} {:>16}",
        "GROUP BY, cold (decode from DB)",
        format!("{:.1} ms", cold.as_secs_f64() * 1000.0),
        "-"
    );
    println!(
        "{:<34} {:>22} {:>16}",
        "peak RSS (VmHWM)",
        format!("{rss:.0} MiB"),
        duck_rss
    );
    if let Ok(line) = &duck {
        println!("duckdb: {line}");
    }
    println!(
        "targets: import ≤ {:?} {}, query ≤ {:?} {}",
        IMPORT_TARGET,
        verdict(import, IMPORT_TARGET),
        QUERY_TARGET,
        verdict(warm, QUERY_TARGET)
    );
    Ok(())
}
