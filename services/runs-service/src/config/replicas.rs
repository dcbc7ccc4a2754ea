//! How runs are kept across replicas: leases and their heartbeats, the
//! replica's name, stored events, and how run streams stay alive.

use std::time::Duration;

use anyhow::ensure;

/// How runs are kept across replicas, and how their streams stay alive.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplicaArgs {
    /// How often a replica renews the leases of its runs (and looks for
    /// runs whose lease expired); at most a third of
    /// SWITCHBOARD_RUN_STALE_AFTER.
    #[arg(long, env = "SWITCHBOARD_RUN_HEARTBEAT_INTERVAL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub run_heartbeat_interval: Duration,
    /// This replica's stable name (a pod name), kept across restarts: at
    /// start, the runs its previous process left running are marked
    /// interrupted at once. Unset: the `HOSTNAME` environment variable, when
    /// set; without either, such runs end when their lease expires.
    #[arg(long, env = "SWITCHBOARD_REPLICA_NAME")]
    pub replica_name: Option<String>,
    /// Events stored per run for `WatchRun` (a run's last event always is).
    #[arg(long, env = "SWITCHBOARD_RUN_EVENTS_MAX", default_value_t = 10_000)]
    pub run_events_max: u64,
    /// Events of this process's runs waiting to be stored at most; a run
    /// sending past it waits for room. They are written in batches.
    #[arg(long, env = "SWITCHBOARD_RUN_EVENTS_QUEUE", default_value_t = 4096, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_048_576))]
    pub run_events_queue: usize,
    /// A heartbeat event is sent on a run stream that was quiet this long.
    #[arg(long, env = "SWITCHBOARD_RUN_STREAM_HEARTBEAT", default_value = "15s", value_parser = humantime::parse_duration)]
    pub run_stream_heartbeat: Duration,
    /// How often `WatchRun` reads a quiet run's new events from storage.
    #[arg(long, env = "SWITCHBOARD_RUN_WATCH_POLL_INTERVAL", default_value = "250ms", value_parser = humantime::parse_duration)]
    pub run_watch_poll_interval: Duration,
}

impl Default for ReplicaArgs {
    fn default() -> Self {
        Self {
            run_heartbeat_interval: Duration::from_secs(5),
            replica_name: None,
            run_events_max: 10_000,
            run_events_queue: 4096,
            run_stream_heartbeat: Duration::from_secs(15),
            run_watch_poll_interval: Duration::from_millis(250),
        }
    }
}

impl ReplicaArgs {
    /// Refuses a heartbeat too slow for the lease, and zero intervals.
    pub fn check(&self, lease: Duration) -> anyhow::Result<()> {
        ensure!(
            !self.run_heartbeat_interval.is_zero() && self.run_heartbeat_interval * 3 <= lease,
            "SWITCHBOARD_RUN_HEARTBEAT_INTERVAL ({:?}) must be above zero and at most a third of \
             SWITCHBOARD_RUN_STALE_AFTER ({lease:?}), so that a live run's lease never expires \
             between two heartbeats",
            self.run_heartbeat_interval
        );
        ensure!(
            !self.run_stream_heartbeat.is_zero() && !self.run_watch_poll_interval.is_zero(),
            "SWITCHBOARD_RUN_STREAM_HEARTBEAT and SWITCHBOARD_RUN_WATCH_POLL_INTERVAL must be above zero"
        );
        Ok(())
    }

    /// The replica's stable name: the setting, else `HOSTNAME`.
    pub fn name(&self) -> Option<String> {
        self.replica_name
            .clone()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .filter(|name| !name.is_empty())
    }
}
