//! Counters shared by every session of one server.

use std::{
    collections::VecDeque,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use serde::{Deserialize, Serialize};

/// Counters shared by every session of one server, so tests can observe what
/// the server saw without reaching into a session.
#[derive(Debug, Default)]
pub struct Stats {
    /// `initialize` handshakes served.
    pub sessions: AtomicU64,
    /// `tools/call` requests received, whatever their outcome.
    pub tool_calls: AtomicU64,
    /// Tool calls that stopped early because the client cancelled them.
    pub cancellations: AtomicU64,
    /// `tasks/cancel` requests received.
    pub task_cancels: AtomicU64,
    /// Listings (tools, resources, resource templates, prompts) being served now.
    pub listings_in_flight: AtomicU64,
    /// The most listings ever served at once.
    pub listings_peak: AtomicU64,
    /// HTTP connections accepted.
    connections: AtomicU64,
    /// HTTP requests received over HTTP/2.
    http2_requests: AtomicU64,
    /// The `traceparent` headers of the latest HTTP requests, oldest first
    /// (at most [`MAX_TRACEPARENTS`]).
    traceparents: Mutex<VecDeque<String>>,
}

/// How many `traceparent` headers [`Stats`] keeps.
pub const MAX_TRACEPARENTS: usize = 1024;

/// A point-in-time copy of [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// `initialize` handshakes served.
    pub sessions: u64,
    /// `tools/call` requests received, whatever their outcome.
    pub tool_calls: u64,
    /// Tool calls that stopped early because the client cancelled them.
    pub cancellations: u64,
    /// The most listings (tools, resources, resource templates, prompts)
    /// ever served at once.
    #[serde(default)]
    pub listings_peak: u64,
    /// `tasks/cancel` requests received.
    #[serde(default)]
    pub task_cancels: u64,
}

impl Stats {
    /// Reads every counter.
    pub fn snapshot(&self) -> StatsSnapshot {
        // The counters are independent, so relaxed loads are enough: a
        // snapshot never needs to be consistent across counters.
        StatsSnapshot {
            sessions: self.sessions.load(Ordering::Relaxed),
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
            cancellations: self.cancellations.load(Ordering::Relaxed),
            listings_peak: self.listings_peak.load(Ordering::Relaxed),
            task_cancels: self.task_cancels.load(Ordering::Relaxed),
        }
    }

    /// The `traceparent` headers of the latest HTTP requests, oldest first.
    pub fn traceparents(&self) -> Vec<String> {
        self.traceparents
            .lock()
            .map(|seen| seen.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub(crate) fn record_traceparent(&self, traceparent: &str) {
        if let Ok(mut seen) = self.traceparents.lock() {
            if seen.len() == MAX_TRACEPARENTS {
                seen.pop_front();
            }
            seen.push_back(traceparent.to_owned());
        }
    }

    /// HTTP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// HTTP requests received over HTTP/2 so far.
    pub fn http2_requests(&self) -> u64 {
        self.http2_requests.load(Ordering::Relaxed)
    }

    pub(crate) fn record_connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_http_version(&self, version: axum::http::Version) {
        if version == axum::http::Version::HTTP_2 {
            self.http2_requests.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn record_session(&self) {
        self.sessions.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_tool_call(&self) {
        self.tool_calls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_cancellation(&self) {
        self.cancellations.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn record_task_cancel(&self) {
        self.task_cancels.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a listing as served until the returned guard is dropped.
    pub(crate) fn listing(&self) -> ListingGuard<'_> {
        let now = self.listings_in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.listings_peak.fetch_max(now, Ordering::Relaxed);
        ListingGuard(self)
    }
}

/// A listing being served; see [`Stats::listing`].
#[derive(Debug)]
pub(crate) struct ListingGuard<'a>(&'a Stats);

impl Drop for ListingGuard<'_> {
    fn drop(&mut self) {
        self.0.listings_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_reflects_recorded_events() {
        let stats = Stats::default();
        stats.record_session();
        stats.record_tool_call();
        stats.record_tool_call();
        stats.record_cancellation();
        stats.record_task_cancel();
        {
            let _first = stats.listing();
            let _second = stats.listing();
        }
        let _third = stats.listing();
        assert_eq!(
            stats.snapshot(),
            StatsSnapshot {
                sessions: 1,
                tool_calls: 2,
                cancellations: 1,
                listings_peak: 2,
                task_cancels: 1,
            }
        );
    }
}
