//! The worker side of `runs-service query-worker`: confines itself, reads
//! one query and its tables from stdin, answers on stdout, exits.
//!
//! Everything here is done by the process to itself with safe system-call
//! wrappers, before it reads a table: the memory ceiling (`RLIMIT_DATA`
//! counts the heap, anonymous mappings and thread stacks, so an allocation
//! past it fails and the process aborts), a CPU-time limit as a backstop of
//! the service's kill, no core dumps, death with the service, and the first
//! place in the kernel's out-of-memory order.

use std::{
    collections::HashMap,
    io::{BufRead as _, Read, Write as _},
    process::ExitCode,
};

use anyhow::Context as _;
use bytes::Bytes;
use rustix::process::{Resource, Rlimit, Signal, set_parent_process_death_signal, setrlimit};

use super::{
    Stored, engine,
    priority::CpuPriority,
    protocol::{self, Limits, Request, Response},
};
use crate::domain::datasource::{QueryError, QueryLimits};

/// Stack of a query thread: planning walks expression trees recursively;
/// the operator limit of the gate bounds their depth.
const QUERY_THREAD_STACK_BYTES: usize = 16 * 1024 * 1024;

/// CPU seconds a worker may use past its time limit, per thread.
const CPU_SLACK_SECONDS: u64 = 5;

/// Runs one query as the worker process; the exit code says whether an
/// answer was written.
pub fn run_query_worker() -> ExitCode {
    match serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("query worker: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve() -> anyhow::Result<()> {
    // A worker never outlives the service that waits for it.
    set_parent_process_death_signal(Some(Signal::KILL))
        .context("failed to tie the worker to the service")?;
    let mut input = std::io::stdin().lock();
    let request = read_request(&mut input)?;
    confine(&request.limits, request.partitions)?;
    // Before the engine's threads start, which inherit it.
    CpuPriority {
        nice: request.priority,
        idle: request.idle,
    }
    .lower_current_thread();
    let tables = read_tables(&mut input, &request)?;
    let limits = QueryLimits::from(request.limits);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(request.partitions.max(1))
        .thread_name("query")
        .thread_stack_size(QUERY_THREAD_STACK_BYTES)
        // Time for the limit; I/O for a store's client.
        .enable_all()
        .build()
        .context("failed to start the query runtime")?;
    let store = match &request.store {
        Some(access) => {
            // The store's client speaks TLS with the same provider as the
            // service.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let _guard = runtime.enter();
            Some(access.open()?)
        }
        None => None,
    };
    let outcome = runtime.block_on(async {
        tokio::time::timeout(
            limits.timeout,
            engine::execute(tables, store, &request.sql, limits, request.partitions),
        )
        .await
        .unwrap_or(Err(QueryError::Timeout(limits.timeout)))
    });
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &Response::from(outcome))
        .context("failed to write the answer")?;
    stdout.flush().context("failed to write the answer")?;
    // Whatever the engine still had running ends with the process.
    runtime.shutdown_background();
    Ok(())
}

fn read_request(input: &mut impl std::io::BufRead) -> anyhow::Result<Request> {
    let mut line = Vec::new();
    input
        .take(protocol::MAX_HEADER_BYTES as u64)
        .read_until(b'\n', &mut line)
        .context("failed to read the request")?;
    serde_json::from_slice(&line).context("the request is not valid")
}

fn read_tables(
    input: &mut impl Read,
    request: &Request,
) -> anyhow::Result<HashMap<String, Stored>> {
    request
        .tables
        .iter()
        .map(|table| {
            if let Some(key) = &table.object {
                let stored = Stored::Object {
                    key: key.clone(),
                    bytes: table.bytes as u64,
                };
                return Ok((table.name.clone(), stored));
            }
            let mut content = vec![0; table.bytes];
            input
                .read_exact(&mut content)
                .with_context(|| format!("failed to read the table {}", table.name))?;
            Ok((table.name.clone(), Stored::Bytes(Bytes::from(content))))
        })
        .collect()
}

/// Sets the process's own limits before it reads a table.
fn confine(limits: &Limits, partitions: usize) -> anyhow::Result<()> {
    let ceiling = u64::try_from(limits.process_memory_bytes).unwrap_or(u64::MAX);
    set_limit(Resource::Data, ceiling)?;
    set_limit(Resource::Core, 0)?;
    let threads = u64::try_from(partitions.max(1)).unwrap_or(u64::MAX);
    let cpu_seconds = (limits.timeout_ms / 1000)
        .saturating_add(CPU_SLACK_SECONDS)
        .saturating_mul(threads);
    set_limit(Resource::Cpu, cpu_seconds)?;
    // Under memory pressure the kernel kills a worker before the service.
    // Best effort: raising one's own score needs no privilege.
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
    Ok(())
}

fn set_limit(resource: Resource, value: u64) -> anyhow::Result<()> {
    setrlimit(
        resource,
        Rlimit {
            current: Some(value),
            maximum: Some(value),
        },
    )
    .with_context(|| format!("failed to set {resource:?} to {value}"))
}
