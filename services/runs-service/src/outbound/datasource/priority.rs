//! The CPU priority of data-source work: the pool's threads (`pool.rs`) and
//! each query's worker process (`child.rs`) lower their own priority below
//! the service's request-serving threads before they start work.
//!
//! Two levers, both per thread on Linux and inherited by the threads and
//! processes a thread starts:
//! - the kernel's idle class (`SCHED_IDLE`), by default: such a thread runs
//!   only on a core no other thread wants, and a request's thread that
//!   wakes takes the core from it at once. A nice value alone does not do
//!   that: the kernel lets a running thread of any nice value finish its
//!   slice (a few milliseconds) before a waking one gets the core, and a
//!   request waited that long behind an import's parse;
//! - a nice value, which orders the work's threads when the idle class is
//!   off.
//!
//! Both only lower a thread's priority, which needs no privilege; a failure
//! is logged and the thread runs as it was.

use crate::domain::datasource::Capacity;
use thread_priority::{
    NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
    set_thread_priority_and_policy, thread_native_id, thread_schedule_policy,
};

/// The highest nice value (the lowest priority).
const MAX_NICE: i32 = 19;

/// How data-source work is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CpuPriority {
    /// The nice value it runs at, at least.
    pub nice: i32,
    /// Whether it runs in the kernel's idle class.
    pub idle: bool,
}

impl CpuPriority {
    /// `nice` levels below the calling thread's priority (at most nice 19),
    /// in the idle class if `idle`.
    pub fn below_current(nice: i32, idle: bool) -> Self {
        let now = rustix::process::getpriority_process(None).unwrap_or(0);
        Self {
            nice: now.saturating_add(nice.max(0)).min(MAX_NICE),
            idle,
        }
    }

    /// The priority `capacity` sets, below the calling thread's.
    pub fn of(capacity: &Capacity) -> Self {
        Self::below_current(capacity.nice, capacity.sched_idle)
    }

    /// Lowers the calling thread to this priority, where it runs above it.
    pub fn lower_current_thread(self) {
        if self.idle {
            run_only_when_idle();
        }
        run_at_most_at(self.nice);
    }
}

/// The idle class's policy.
const IDLE: ThreadSchedulePolicy = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle);

/// Whether the calling thread runs in the kernel's idle class.
pub(super) fn runs_only_when_idle() -> bool {
    thread_schedule_policy().is_ok_and(|policy| policy == IDLE)
}

/// Puts the calling thread in the kernel's idle class.
fn run_only_when_idle() {
    // With the policy, the library sets the thread's nice value to 0, which
    // the idle class ignores; where the thread already runs above nice 0,
    // that second step is refused after the policy is set. What matters is
    // the policy, so the policy is what is checked.
    let _ = set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, IDLE);
    if !runs_only_when_idle() {
        tracing::warn!("failed to put a data-source thread in the kernel's idle class");
    }
}

/// Lowers the calling thread's CPU priority to nice value `nice` if it runs
/// above it.
fn run_at_most_at(nice: i32) {
    let lowered = rustix::process::getpriority_process(None).and_then(|now| {
        if now < nice {
            rustix::process::setpriority_process(None, nice.min(MAX_NICE))
        } else {
            Ok(())
        }
    });
    if let Err(error) = lowered {
        tracing::warn!(error = %error, nice, "failed to lower a data-source thread's priority");
    }
}
