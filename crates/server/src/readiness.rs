//! Readiness follows the database: a replica that cannot reach it fails every
//! call that needs storage, so it reports NOT_SERVING and load balancers send
//! calls to replicas that can.

use std::time::Duration;

use switchboard_db::Database;
use tokio::task::JoinHandle;
use tonic_health::{ServingStatus, server::HealthReporter};

/// What is watched and how often.
#[derive(Debug)]
pub(crate) struct Watch {
    pub database: Database,
    pub interval: Duration,
    pub timeout: Duration,
}

/// Pings the database every `interval` and reports every service in `names`
/// (and the server, `""`) SERVING while it answers within `timeout`,
/// NOT_SERVING while it does not. Abort the task before reporting shutdown.
pub(crate) fn spawn(
    health: HealthReporter,
    names: Vec<&'static str>,
    watch: Watch,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut serving = true;
        let mut ticker = tokio::time::interval(watch.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let result = watch.database.ping(watch.timeout).await;
            if result.is_ok() == serving {
                continue;
            }
            serving = result.is_ok();
            let status = match &result {
                Ok(()) => {
                    tracing::info!("the database answers again: reporting SERVING");
                    ServingStatus::Serving
                }
                Err(error) => {
                    tracing::warn!(error = %error, "the database does not answer: reporting NOT_SERVING");
                    ServingStatus::NotServing
                }
            };
            for name in names.iter().copied().chain([""]) {
                health.set_service_status(name, status).await;
            }
        }
    })
}
