//! CPU time (user + system) of the processes under load, read from
//! `/proc`: what each spent over a run, per call. A stdio server is counted
//! apart from the process that started it, so that mcp-service with its
//! stdio server and the Python proxy with its own compare like for like.

use std::time::Duration;

use switchboard_test_support::cpu_time;

use crate::setup::Setup;

/// CPU time of each process a run involves (so far, or per call).
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    /// mcp-service's process, every thread.
    pub service: Duration,
    /// mcp-service's children: the stdio example server it started.
    pub service_stdio: Duration,
    /// The example server called over streamable HTTP (and directly).
    pub upstream: Duration,
    /// The Python mcp-proxy's process (the interpreter), every thread.
    pub proxy: Duration,
    /// The proxy's children: the stdio example server it started.
    pub proxy_stdio: Duration,
}

impl Cpu {
    /// What each process has used so far.
    pub fn now(setup: &Setup) -> Self {
        let service = setup.service.0.id();
        let proxy = setup.python_proxy.process.0.id();
        Self {
            service: cpu_time(service),
            service_stdio: children_cpu(service),
            upstream: cpu_time(setup.upstream.0.id()),
            proxy: cpu_time(proxy),
            proxy_stdio: children_cpu(proxy),
        }
    }

    /// What each used from `before` to `self`, per call of `calls`.
    pub fn per_call_since(self, before: Cpu, calls: usize) -> Self {
        let per_call =
            |after: Duration, before: Duration| after.saturating_sub(before) / calls as u32;
        Self {
            service: per_call(self.service, before.service),
            service_stdio: per_call(self.service_stdio, before.service_stdio),
            upstream: per_call(self.upstream, before.upstream),
            proxy: per_call(self.proxy, before.proxy),
            proxy_stdio: per_call(self.proxy_stdio, before.proxy_stdio),
        }
    }
}

/// The live children of `pid`, found by the parent id in each
/// `/proc/<pid>/stat` (`/proc/<pid>/task/<tid>/children` needs a kernel
/// option not every kernel has). A child that ended during a run takes its
/// CPU time out of the count; the stdio servers live as long as the bench.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&candidate| parent(candidate) == Some(pid))
        .collect()
}

fn children_cpu(pid: u32) -> Duration {
    children(pid).into_iter().map(cpu_time).sum()
}

/// The parent id: the second field after the command name, which is in
/// parentheses and may hold spaces.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
