//! Unit tests of `pool`.

use std::sync::mpsc;

use super::*;
use crate::outbound::datasource::priority::{self, CpuPriority};

/// The priority of the test's own threads.
fn at_service_priority() -> CpuPriority {
    CpuPriority::below_current(0, false)
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// A piece of work of `org` that holds its thread until `release` says.
async fn held(
    pool: Arc<CpuPool>,
    org: &'static str,
    order: mpsc::Sender<&'static str>,
) -> (tokio::task::JoinHandle<()>, mpsc::Sender<()>) {
    let (release, hold) = mpsc::channel::<()>();
    let task = tokio::spawn(async move {
        pool.run(org, far(), move || {
            order.send(org).expect("the test listens");
            let _ = hold.recv();
        })
        .await
        .expect("runs");
    });
    (task, release)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organization_with_work_waiting_gets_the_next_turn_before_a_busy_ones_rest() {
    // One thread, held by org a; a queues three more, then b one.
    let pool = Arc::new(CpuPool::new(1, at_service_priority()));
    let (order, ran) = mpsc::channel();
    let (first, release_first) = held(Arc::clone(&pool), "a", order.clone()).await;
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("a"));
    let mut waiting = Vec::new();
    for org in ["a", "a", "a", "b"] {
        let (pool, order) = (Arc::clone(&pool), order.clone());
        waiting.push(tokio::spawn(async move {
            pool.run(org, far(), move || order.send(org).expect("listens"))
                .await
                .expect("runs");
        }));
        // Queued in this order.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    release_first.send(()).expect("held");
    first.await.expect("ends");
    for task in waiting {
        task.await.expect("ends");
    }
    let turns: Vec<_> = ran.try_iter().collect();
    assert_eq!(
        turns,
        ["a", "b", "a", "a"],
        "b waits behind one of a's, not three"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_runs_at_most_its_threads_at_once() {
    let pool = Arc::new(CpuPool::new(2, at_service_priority()));
    let (order, ran) = mpsc::channel();
    // Each started before the next is sent, so that the third is the one
    // left waiting.
    let (_one, release_one) = held(Arc::clone(&pool), "a", order.clone()).await;
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("a"));
    let (_two, release_two) = held(Arc::clone(&pool), "b", order.clone()).await;
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("b"));
    let (_three, release_three) = held(Arc::clone(&pool), "c", order.clone()).await;
    assert!(
        ran.recv_timeout(Duration::from_millis(200)).is_err(),
        "a third runs only when one of two ends"
    );
    release_one.send(()).expect("held");
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("c"));
    let _ = (release_two.send(()), release_three.send(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_that_waited_past_its_deadline_is_not_run() {
    let pool = Arc::new(CpuPool::new(1, at_service_priority()));
    let (order, ran) = mpsc::channel();
    let (_first, release) = held(Arc::clone(&pool), "a", order.clone()).await;
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("a"));
    let late = pool
        .run("b", Instant::now() + Duration::from_millis(50), move || {
            order.send("b").expect("listens");
        })
        .await;
    assert!(matches!(late, Err(PoolError::Waited(_))), "{late:?}");
    release.send(()).expect("held");
    // The thread is free again and skips b's abandoned work.
    let after = pool.run("c", far(), || "c").await;
    assert_eq!(after, Ok("c"));
    assert!(ran.try_recv().is_err(), "b's work never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_ends_its_work_not_the_thread() {
    let pool = CpuPool::new(1, at_service_priority());
    let failed: Result<(), _> = pool.run("a", far(), || panic!("a bug")).await;
    assert_eq!(failed, Err(PoolError::Stopped));
    assert_eq!(pool.run("a", far(), || 7).await, Ok(7));
}

/// The nice value of a thread of `pool`, and whether it runs in the idle
/// class, read on that thread.
async fn scheduling_inside(pool: &CpuPool) -> (i32, bool) {
    let (nice, idle) = pool
        .run("a", far(), || {
            (
                rustix::process::getpriority_process(None),
                priority::runs_only_when_idle(),
            )
        })
        .await
        .expect("runs");
    (nice.expect("reads"), idle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threads_run_below_the_service_priority() {
    let before = rustix::process::getpriority_process(None).expect("reads");
    let pool = CpuPool::new(1, CpuPriority::below_current(7, false));
    assert_eq!(pool.priority().nice, (before + 7).min(19));
    let (nice, idle) = scheduling_inside(&pool).await;
    assert_eq!(nice, (before + 7).min(19));
    assert!(!idle, "not in the idle class unless set");
    assert_eq!(
        rustix::process::getpriority_process(None).expect("reads"),
        before,
        "only the pool's threads"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threads_run_in_the_idle_class_when_set() {
    let before = rustix::process::getpriority_process(None).expect("reads");
    let pool = CpuPool::new(1, CpuPriority::below_current(19, true));
    let (nice, idle) = scheduling_inside(&pool).await;
    assert!(idle, "the pool's thread runs in the idle class");
    assert_eq!(nice, 19, "and at the nice value set, the highest");
    assert!(!priority::runs_only_when_idle(), "only the pool's threads");
    assert_eq!(
        rustix::process::getpriority_process(None).expect("reads"),
        before
    );
}

/// A piece of work of `pieces` pieces that tells `order` as each piece runs
/// and holds its thread until `release` says, each time.
fn pieced(
    org: &'static str,
    pieces: usize,
    order: mpsc::Sender<&'static str>,
    hold: mpsc::Receiver<()>,
) -> impl FnMut() -> Turn<usize> + Send + 'static {
    let mut done = 0;
    move || {
        order.send(org).expect("the test listens");
        let _ = hold.recv();
        done += 1;
        if done == pieces {
            Turn::Done(done)
        } else {
            Turn::More
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn between_the_pieces_of_one_organization_another_gets_a_turn() {
    let pool = Arc::new(CpuPool::new(1, at_service_priority()));
    let (order, ran) = mpsc::channel();
    let (release, hold) = mpsc::channel();
    let long = {
        let (pool, order) = (Arc::clone(&pool), order.clone());
        tokio::spawn(async move {
            pool.run_in_pieces("a", far(), pieced("a", 4, order, hold))
                .await
        })
    };
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("a"));
    // b's work comes while a's first piece runs.
    let (b_release, b_hold) = mpsc::channel();
    let short = {
        let pool = Arc::clone(&pool);
        tokio::spawn(async move {
            pool.run_in_pieces("b", far(), pieced("b", 1, order, b_hold))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    b_release.send(()).expect("held");
    for _ in 0..4 {
        release.send(()).expect("held");
    }
    assert_eq!(short.await.expect("ends"), Ok(1));
    assert_eq!(long.await.expect("ends"), Ok(4));
    let turns: Vec<_> = ran.try_iter().collect();
    assert_eq!(turns, ["b", "a", "a", "a"], "b goes after a's first piece");
    assert_eq!(pool.pieces_run(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_whose_caller_stopped_waiting_stops_at_the_next_piece() {
    let pool = Arc::new(CpuPool::new(1, at_service_priority()));
    let (order, ran) = mpsc::channel();
    let (release, hold) = mpsc::channel();
    let caller = {
        let pool = Arc::clone(&pool);
        tokio::spawn(async move {
            pool.run_in_pieces("a", far(), pieced("a", 100, order, hold))
                .await
        })
    };
    for _ in 0..3 {
        assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("a"));
        release.send(()).expect("held");
    }
    assert_eq!(ran.recv_timeout(Duration::from_secs(10)), Ok("a"));
    // The caller gives up during the fourth piece, which ends its turn.
    caller.abort();
    let _ = caller.await;
    release.send(()).expect("held");
    // The pool is free: the next work runs, and no fifth piece of a's did.
    assert_eq!(pool.run("b", far(), || "b").await, Ok("b"));
    assert!(ran.try_recv().is_err(), "no piece after the caller left");
    assert_eq!(pool.pieces_run(), 5, "a's four and b's one");
    assert!(
        release.send(()).is_err(),
        "the stopped work was dropped, with what it held"
    );
}
