//! Hostile SQL against the process that serves every organization: values
//! built in one call that no time limit interrupts, functions that grow
//! their output or take quadratic time, and queries that outlive their
//! answer. Each query runs in a process of its own, with a memory ceiling,
//! killed when its time is up; the service stays small and the other
//! organizations' queries keep running.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use switchboard_runs_service::domain::{
    datasource::{Capacity, DataSources as _, ImportLimits, QueryError, QueryLimits},
    ids::ThreadId,
    texts,
    tools::ToolOutcome,
};
use switchboard_test_support::{DbKind, db_tests};

use crate::hostile_datasources::{Fixture, arguments, numbers_csv};

/// The memory ceiling of a query's process in these tests.
const CEILING: usize = 512 * 1024 * 1024;

/// The query that took a replica from 241 MB to 2 GB: every call of
/// `to_char` builds a whole batch of 12 MB strings without an await point.
const TO_CHAR_BOMB: &str = "SELECT length(to_char(to_timestamp(value), repeat('%c', 524288))) \
                            FROM generate_series(1, 8192)";

fn limits() -> QueryLimits {
    QueryLimits {
        timeout: Duration::from_secs(5),
        memory_bytes: 64 * 1024 * 1024,
        process_memory_bytes: CEILING,
        ..QueryLimits::default()
    }
}

/// The peak resident memory of this process (the service's adapter runs in
/// the test process), from `/proc/self/status`.
fn peak_rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: usize = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kib * 1024
}

/// The child process of this one that runs a query for `thread`.
fn worker_of(thread: ThreadId) -> Option<u32> {
    let thread = thread.to_string();
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|children| {
            children
                .split_whitespace()
                .filter_map(|pid| pid.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&thread))
        })
}

/// Whether process `pid` still exists (a zombie counts: it was not reaped).
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

async fn the_to_char_bomb_ends_with_a_clear_error_and_others_keep_querying(kind: DbKind) {
    let fx = Fixture::new(kind, ImportLimits::default(), limits(), Capacity::default()).await;
    let attacker = fx.thread("org-attacker").await;
    let other = fx.thread("org-other").await;
    fx.import(other, "t", &numbers_csv(4)).await;
    let started = Instant::now();
    // Two at once: the attacker's whole share.
    let bombs: Vec<_> = (0..2)
        .map(|_| {
            let sources = Arc::clone(&fx.sources);
            let thread = attacker;
            tokio::spawn(async move { sources.query(thread, TO_CHAR_BOMB).await })
        })
        .collect();
    for bomb in bombs {
        let error = bomb.await.expect("joined").expect_err("the bomb fails");
        assert!(
            matches!(&error, QueryError::Engine(why) if why.contains("to_char") && why.contains("bytes per value")),
            "{error:?}"
        );
    }
    assert!(
        started.elapsed() < limits().timeout,
        "refused before its time was up: {:?}",
        started.elapsed()
    );
    // The same through an alias, another directive, and a column's values.
    for sql in [
        "SELECT length(date_format(now(), repeat('%+', 400000)))",
        "SELECT length(to_char(to_timestamp(n), repeat(name, 60000))) FROM t",
    ] {
        let error = fx
            .sources
            .query(other, sql)
            .await
            .expect_err("the variant fails");
        assert!(
            matches!(&error, QueryError::Engine(why) if why.contains("to_char") && why.contains("bytes")),
            "{sql}: {error:?}"
        );
    }
    // Nothing of the bombs still runs: another organization's queries answer.
    for _ in 0..3 {
        let result = fx
            .sources
            .query(other, "SELECT count(*) FROM t")
            .await
            .expect("another organization's query runs");
        assert_eq!(result.rows, [["4"]]);
    }
    // The model reads the reason.
    let ToolOutcome { text, is_error, .. } = fx
        .source_query()
        .run(attacker, &arguments(TO_CHAR_BOMB))
        .await;
    assert!(
        is_error && text.starts_with("Query failed: ") && text.contains("to_char"),
        "{text}"
    );
    assert!(
        peak_rss_bytes() < CEILING,
        "peak {} bytes",
        peak_rss_bytes()
    );
}

async fn functions_off_the_list_are_refused_by_name(kind: DbKind) {
    let fx = Fixture::new(kind, ImportLimits::default(), limits(), Capacity::default()).await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "t", &numbers_csv(4)).await;
    for (sql, function) in [
        // Quadratic time in one call.
        (
            "SELECT levenshtein(repeat('a', 100000), repeat('b', 100000))",
            "levenshtein",
        ),
        (
            "SELECT n FROM t WHERE levenshtein(name, 'name 1') < 2",
            "levenshtein",
        ),
        // Not needed for analytics, and about the process rather than the data.
        ("SELECT version()", "version"),
        ("SELECT input_file_name() FROM t", "input_file_name"),
        // Qualified names are not on the list.
        ("SELECT public.upper(name) FROM t", "public.upper"),
        // Made by the planner from syntax, so found in the plan.
        ("SELECT {'a': name} FROM t", "named_struct"),
    ] {
        let error = fx.sources.query(thread, sql).await.expect_err(sql);
        assert!(
            matches!(&error, QueryError::Refused(why) if texts::query_refusal(why).contains(&format!("`{function}`"))),
            "{sql}: {error:?}"
        );
        let ToolOutcome { text, is_error, .. } =
            fx.source_query().run(thread, &arguments(sql)).await;
        assert!(is_error && text.starts_with("Query refused: "), "{text}");
    }
    // What analytics needs stays on the list.
    for sql in [
        "SELECT name, count(*), sum(n), avg(n), min(n), max(n), stddev(n), median(n) FROM t GROUP BY name",
        "SELECT upper(name), lower(name), length(name), substr(name, 1, 3), trim(name), \
         replace(name, ' ', '_'), split_part(name, ' ', 2), coalesce(NULL, name), \
         CASE WHEN n > 1 THEN 'big' ELSE 'small' END, CAST(n AS DOUBLE), round(n / 3.0, 2) FROM t",
        "SELECT date_trunc('month', to_timestamp(n * 86400)), extract(year FROM to_timestamp(0)), \
         to_char(to_timestamp(n), '%Y-%m-%d'), date_part('day', now()) FROM t",
        "SELECT n, row_number() OVER (ORDER BY n), lag(n) OVER (ORDER BY n), \
         sum(n) OVER (PARTITION BY n % 2) FROM t",
        "SELECT string_agg(name, ','), count(DISTINCT name), approx_distinct(name) FROM t",
        "SELECT count(*) FROM generate_series(1, 10) g, t WHERE t.n IN (1, 2) AND name LIKE 'name%'",
    ] {
        if let Err(error) = fx.sources.query(thread, sql).await {
            panic!("{sql}: {error:?}");
        }
    }
}

async fn a_query_that_would_grow_past_the_memory_ceiling_ends_with_a_clear_error(kind: DbKind) {
    // The function bounds are set loose here, so that only the ceiling holds.
    let loose = QueryLimits {
        timeout: Duration::from_secs(30),
        memory_bytes: 2 * 1024 * 1024 * 1024,
        max_value_bytes: 1024 * 1024 * 1024,
        process_memory_bytes: CEILING,
        ..QueryLimits::default()
    };
    let fx = Fixture::new(kind, ImportLimits::default(), loose, Capacity::default()).await;
    let thread = fx.thread("org-a").await;
    let other = fx.thread("org-b").await;
    fx.import(other, "t", &numbers_csv(4)).await;
    let started = Instant::now();
    let error = fx
        .sources
        .query(thread, "SELECT length(repeat('x', 700000000)) AS n")
        .await
        .expect_err("700 MB past a 512 MiB ceiling");
    assert!(
        matches!(&error, QueryError::OutOfMemory { limit_bytes } if texts::query_out_of_memory(*limit_bytes).contains("memory") && texts::query_out_of_memory(*limit_bytes).contains("512 MiB")),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "it stopped");
    assert!(
        peak_rss_bytes() < CEILING,
        "peak {} bytes",
        peak_rss_bytes()
    );
    let result = fx
        .sources
        .query(other, "SELECT count(*) FROM t")
        .await
        .expect("the next query runs");
    assert_eq!(result.rows, [["4"]]);
}

async fn a_query_past_its_time_has_ended_before_its_slot_is_given_back(kind: DbKind) {
    let quick = QueryLimits {
        timeout: Duration::from_secs(2),
        ..limits()
    };
    let capacity = Capacity {
        concurrent_work: 2,
        concurrent_work_per_org: 1,
        ..Capacity::default()
    };
    let fx = Fixture::new(kind, ImportLimits::default(), quick, capacity).await;
    let thread = fx.thread("org-a").await;
    fx.import(thread, "t", &numbers_csv(4)).await;
    let other = fx.thread("org-b").await;
    fx.import(other, "t", &numbers_csv(4)).await;
    let slow = "SELECT sum(value % 7) FROM generate_series(1, 1000000000000)";
    let query = {
        let sources = Arc::clone(&fx.sources);
        tokio::spawn(async move { sources.query(thread, slow).await })
    };
    let mut worker = None;
    for _ in 0..200 {
        worker = worker_of(thread);
        if worker.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = worker.expect("the query runs in a process of its own");
    // Meanwhile, another organization's query runs.
    let result = fx
        .sources
        .query(other, "SELECT count(*) FROM t")
        .await
        .expect("another organization's query runs meanwhile");
    assert_eq!(result.rows, [["4"]]);
    let error = query.await.expect("joined").expect_err("past its time");
    assert!(matches!(error, QueryError::Timeout(_)), "{error:?}");
    assert!(
        !exists(pid),
        "the worker {pid} ended and was reaped before the answer"
    );
    // The organization's one slot is free again.
    let result = fx
        .sources
        .query(thread, "SELECT count(*) FROM t")
        .await
        .expect("the slot is free");
    assert_eq!(result.rows, [["4"]]);

    // A caller that stops waiting takes the query's process with it.
    let query = {
        let sources = Arc::clone(&fx.sources);
        tokio::spawn(async move { sources.query(thread, slow).await })
    };
    let mut worker = None;
    for _ in 0..200 {
        worker = worker_of(thread);
        if worker.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = worker.expect("the second query runs in a process of its own");
    query.abort();
    let mut gone = false;
    for _ in 0..100 {
        if !exists(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        gone,
        "the worker {pid} of an abandoned query was killed and reaped"
    );
}

/// How process `pid`'s main thread is scheduled, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy)]
struct Scheduled {
    nice: i32,
    threads: usize,
    /// The kernel's scheduling policy: 0 normal, 5 the idle class.
    policy: u32,
}

/// Fields 19, 20 and 41 of `/proc/<pid>/stat`, counted after the
/// parenthesized name (the third field).
fn scheduled(pid: u32) -> Option<Scheduled> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(Scheduled {
        nice: fields.get(16)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
        policy: fields.get(38)?.parse().ok()?,
    })
}

/// The kernel's number for its idle class, `SCHED_IDLE`.
const SCHED_IDLE: u32 = 5;

async fn a_query_process_runs_below_the_service_priority_on_the_pool_threads(kind: DbKind) {
    for sched_idle in [false, true] {
        let capacity = Capacity {
            threads: 1,
            nice: 5,
            sched_idle,
            ..Capacity::default()
        };
        let seen = query_process_of(kind, capacity).await;
        let service = rustix::process::getpriority_process(None).expect("reads");
        assert_eq!(
            seen.nice,
            (service + 5).min(19),
            "five levels below the service"
        );
        let policy = if sched_idle { SCHED_IDLE } else { 0 };
        assert_eq!(seen.policy, policy, "the idle class set: {sched_idle}");
        // The main thread and the engine's one worker; the engine's blocking
        // threads, if any, are few.
        assert!(
            seen.threads <= 4,
            "{} threads for a pool of one",
            seen.threads
        );
    }
}

/// How the process of a long query runs under `capacity`, once its
/// engine's runtime has started (a thread past main).
async fn query_process_of(kind: DbKind, capacity: Capacity) -> Scheduled {
    let fx = Fixture::new(kind, ImportLimits::default(), limits(), capacity).await;
    let thread = fx.thread("org-a").await;
    let slow = "SELECT sum(value % 7) FROM generate_series(1, 1000000000000)";
    let query = {
        let sources = Arc::clone(&fx.sources);
        tokio::spawn(async move { sources.query(thread, slow).await })
    };
    let mut seen = None;
    for _ in 0..300 {
        seen = worker_of(thread)
            .and_then(scheduled)
            .filter(|seen| seen.threads > 1);
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    query.abort();
    seen.expect("the query runs in a process of its own")
}

async fn imports_of_two_organizations_all_run_on_one_data_source_thread(kind: DbKind) {
    let capacity = Capacity {
        threads: 1,
        concurrent_work: 4,
        concurrent_work_per_org: 3,
        ..Capacity::default()
    };
    let fx = Arc::new(Fixture::new(kind, ImportLimits::default(), limits(), capacity).await);
    let (a, b) = (fx.thread("org-a").await, fx.thread("org-b").await);
    let imports: Vec<_> = [(a, "a1"), (a, "a2"), (a, "a3"), (b, "b1")]
        .into_iter()
        .map(|(thread, name)| {
            let fx = Arc::clone(&fx);
            tokio::spawn(async move { fx.import(thread, name, &numbers_csv(20_000)).await })
        })
        .collect();
    for import in imports {
        import.await.expect("each import ends stored");
    }
    let result = fx
        .sources
        .query(b, "SELECT count(*) FROM b1")
        .await
        .expect("queried");
    assert_eq!(result.rows, [["20000"]]);
}

db_tests!(
    imports_of_two_organizations_all_run_on_one_data_source_thread,
    a_query_process_runs_below_the_service_priority_on_the_pool_threads,
    the_to_char_bomb_ends_with_a_clear_error_and_others_keep_querying,
    functions_off_the_list_are_refused_by_name,
    a_query_that_would_grow_past_the_memory_ceiling_ends_with_a_clear_error,
    a_query_past_its_time_has_ended_before_its_slot_is_given_back,
);
