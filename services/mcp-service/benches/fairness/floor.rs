//! The machine's floor for the SQL-load row: the quiet organization's
//! ExecuteTool calls beside CPU work of the lowest priority Linux has (a
//! spin loop in the kernel's idle class, `SCHED_IDLE`) on as many threads as
//! runs-service's data-source threads by default. No scheduling of the
//! noisy organization's work can cost the quiet calls less than this: it
//! is what any work on those cores costs them here.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
};

use thread_priority::{
    NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
    set_thread_priority_and_policy, thread_native_id, thread_schedule_policy,
};

/// Threads spinning in the kernel's idle class until dropped.
pub struct Spinners {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Spinners {
    /// `count` spinning threads, each in the idle class.
    pub fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let idle = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);
                    // The nice value the library sets with the policy does
                    // not matter in the idle class; the policy is checked.
                    let _ = set_thread_priority_and_policy(
                        thread_native_id(),
                        ThreadPriority::Min,
                        idle,
                    );
                    assert_eq!(
                        thread_schedule_policy().ok(),
                        Some(idle),
                        "in the idle class"
                    );
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// runs-service's default data-source threads: the cores less one, at
/// least one.
pub fn default_data_source_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .saturating_sub(1)
        .max(1)
}
