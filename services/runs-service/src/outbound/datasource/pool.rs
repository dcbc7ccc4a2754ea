//! The threads that parse and encode every organization's imports.
//!
//! Two things keep that work from slowing the rest of the machine. The pool
//! has a fixed number of threads, by default one fewer than the cores, so
//! that at least one core is left for calls; and its threads run at a lower
//! CPU priority than the service's request-serving threads (`priority.rs`),
//! so that when both want a core the kernel gives it to the request. A
//! query's worker process (`child.rs`) runs as many threads, at the same
//! priority; it holds no turn here, so that a long query cannot
//! keep another organization's from starting (the kernel shares the cores
//! between the processes). Work here runs in pieces, a turn each: an
//! import's piece is about `SWITCHBOARD_DATA_SOURCE_PIECE_BYTES` of its CSV
//! (`import_work.rs`), after which the work goes to the back of its
//! organization's line. Between organizations, turns go round: each
//! organization with work waiting has its own line, and a free thread takes
//! the first piece of the next organization's line and sends that
//! organization to the back, so that an organization with many pieces
//! waiting cannot hold the pool: another waits behind at most one piece of
//! each other organization's, not a whole import.
//!
//! What waits here is bounded by the slots (`slots.rs`): a piece of work is
//! given to the pool only while it holds one, and stops waiting at its
//! caller's deadline.

use std::{
    collections::{HashMap, VecDeque},
    panic::AssertUnwindSafe,
    sync::{
        Arc, Condvar, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::{sync::oneshot, time::Instant};

use super::priority::CpuPriority;

/// A piece of work as the pool's threads run it.
type Job = Box<dyn FnOnce() + Send>;

/// Threads for CPU-heavy data-source work, with turns fair between
/// organizations. Its threads end when it is dropped, each after the piece
/// of work it is doing.
#[derive(Debug)]
pub(super) struct CpuPool {
    shared: Arc<Shared>,
    threads: usize,
    /// The priority its threads run at.
    priority: CpuPriority,
}

#[derive(Debug, Default)]
struct Shared {
    lines: Mutex<Lines>,
    ready: Condvar,
    /// Pieces of work run.
    pieces_run: AtomicU64,
}

/// Each organization's line of waiting work and whose turn is next.
#[derive(Default)]
struct Lines {
    /// Organizations with work waiting, in the order of their next turn.
    turns: VecDeque<String>,
    waiting: HashMap<String, VecDeque<Job>>,
    closed: bool,
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("turns", &self.turns)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl Lines {
    /// The next organization's first piece of work; that organization goes
    /// to the back if it has more.
    fn next(&mut self) -> Option<Job> {
        let org = self.turns.pop_front()?;
        let line = self.waiting.get_mut(&org)?;
        let job = line.pop_front();
        if line.is_empty() {
            self.waiting.remove(&org);
        } else {
            self.turns.push_back(org);
        }
        job
    }

    fn push(&mut self, org: &str, job: Job) {
        match self.waiting.get_mut(org) {
            Some(line) => line.push_back(job),
            None => {
                self.waiting.insert(org.to_owned(), VecDeque::from([job]));
                self.turns.push_back(org.to_owned());
            }
        }
    }
}

/// Why the pool did not run a piece of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PoolError {
    /// No thread took it before the caller's deadline.
    Waited(Duration),
    /// It stopped without an answer (it panicked, or the pool was dropped).
    Stopped,
}

/// Marks the work as not to be started once the caller no longer waits for
/// it (its deadline passed, or its future was dropped).
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl CpuPool {
    /// A pool of `threads` threads (at least one), each running at
    /// `priority`.
    pub fn new(threads: usize, priority: CpuPriority) -> Self {
        let threads = threads.max(1);
        let shared = Arc::new(Shared::default());
        for n in 0..threads {
            let shared = Arc::clone(&shared);
            let started = std::thread::Builder::new()
                .name(format!("data-source-{n}"))
                .spawn(move || {
                    priority.lower_current_thread();
                    serve(&shared);
                });
            if let Err(error) = started {
                tracing::error!(error = %error, "failed to start a data-source thread");
            }
        }
        Self {
            shared,
            threads,
            priority,
        }
    }

    /// The pool's threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The priority the pool's threads run at, for a query's process to
    /// run at too.
    pub fn priority(&self) -> CpuPriority {
        self.priority
    }

    /// Pieces of work the pool's threads have run since it started.
    pub fn pieces_run(&self) -> u64 {
        self.shared.pieces_run.load(Ordering::Relaxed)
    }

    /// Runs `work` on one of the pool's threads in `org`'s turn, waiting
    /// for a turn until `deadline`; not at all if the caller stopped
    /// waiting before its turn came. One piece.
    #[cfg(test)]
    pub async fn run<T: Send + 'static>(
        &self,
        org: &str,
        deadline: Instant,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PoolError> {
        let mut work = Some(work);
        self.run_in_pieces(org, deadline, move || match work.take() {
            Some(work) => Turn::Done(work()),
            None => Turn::More,
        })
        .await
    }

    /// Runs `piece` on the pool's threads in `org`'s turns until it says it
    /// is done: after each piece that is not the last, `org` goes to the back
    /// of the turns (another organization with work waiting goes first) and
    /// the work to the back of `org`'s line. Waits for the first turn until
    /// `deadline` and does not start if the caller stopped waiting before
    /// it; once started, goes on until done or until the caller stops
    /// waiting, and then stops at the next piece's start, dropping `piece`
    /// with what it holds.
    pub async fn run_in_pieces<T: Send + 'static>(
        &self,
        org: &str,
        deadline: Instant,
        piece: impl FnMut() -> Turn<T> + Send + 'static,
    ) -> Result<T, PoolError> {
        let wait = deadline.saturating_duration_since(Instant::now());
        let taken = Arc::new(AtomicBool::new(false));
        let (started_tx, started) = oneshot::channel::<()>();
        let (answer_tx, answer) = oneshot::channel::<T>();
        let work = Pieces {
            shared: Arc::clone(&self.shared),
            org: org.to_owned(),
            taken: Arc::clone(&taken),
            started: Some(started_tx),
            answer: answer_tx,
            piece: Box::new(piece),
        };
        push(&self.shared, org, work.into_job())?;
        let abandon = Abandon(taken);
        if tokio::time::timeout_at(deadline, started).await.is_err()
            && !abandon.0.swap(true, Ordering::SeqCst)
        {
            return Err(PoolError::Waited(wait));
        }
        answer.await.map_err(|_| PoolError::Stopped)
    }
}

/// What a piece of work says at the end of its turn.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Turn<T> {
    /// It has more to do, in a later turn.
    More,
    /// It is done, with this answer.
    Done(T),
}

/// Work run in pieces, between which it waits for its organization's turn.
struct Pieces<T> {
    shared: Arc<Shared>,
    org: String,
    /// Set by the thread that starts it or by the caller that stopped
    /// waiting for its start, whichever is first.
    taken: Arc<AtomicBool>,
    /// Tells the caller it started; `None` once it has.
    started: Option<oneshot::Sender<()>>,
    answer: oneshot::Sender<T>,
    piece: Box<dyn FnMut() -> Turn<T> + Send>,
}

impl<T: Send + 'static> Pieces<T> {
    fn into_job(self) -> Job {
        Box::new(move || self.run_piece())
    }

    /// Runs the next piece, if the caller still waits, and puts the work
    /// back in its organization's line if it has more to do.
    fn run_piece(mut self) {
        match self.started.take() {
            // Whoever sets it first decides: the thread, or the caller that
            // stopped waiting.
            Some(_) if self.taken.swap(true, Ordering::SeqCst) => return,
            Some(started) => {
                let _ = started.send(());
            }
            // The caller stopped waiting part-way: stop here.
            None if self.answer.is_closed() => return,
            None => {}
        }
        self.shared.pieces_run.fetch_add(1, Ordering::Relaxed);
        match (self.piece)() {
            Turn::Done(answer) => {
                let _ = self.answer.send(answer);
            }
            Turn::More => {
                let (shared, org) = (Arc::clone(&self.shared), self.org.clone());
                // A dropped pool tells the caller the work stopped.
                let _ = push(&shared, &org, self.into_job());
            }
        }
    }
}

/// Puts `job` at the back of `org`'s line.
fn push(shared: &Shared, org: &str, job: Job) -> Result<(), PoolError> {
    let mut lines = lock(&shared.lines);
    if lines.closed {
        return Err(PoolError::Stopped);
    }
    lines.push(org, job);
    drop(lines);
    shared.ready.notify_one();
    Ok(())
}

impl Drop for CpuPool {
    fn drop(&mut self) {
        let mut lines = lock(&self.shared.lines);
        lines.closed = true;
        // Their callers are told the work stopped.
        lines.waiting.clear();
        lines.turns.clear();
        drop(lines);
        self.shared.ready.notify_all();
    }
}

/// A pool thread's loop: the next organization's work, until the pool is
/// dropped.
fn serve(shared: &Shared) {
    loop {
        let job = {
            let mut lines = lock(&shared.lines);
            loop {
                if lines.closed {
                    return;
                }
                if let Some(job) = lines.next() {
                    break job;
                }
                lines = shared
                    .ready
                    .wait(lines)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        // A panic ends that piece of work (its caller is told), not the thread.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
    }
}

fn lock(lines: &Mutex<Lines>) -> MutexGuard<'_, Lines> {
    // Each change is a few pushes and pops under the lock, so a poisoned
    // lock is consistent.
    lines.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
