//! `subscriptions/listen` (2026-07-28): a client of the stateless protocol
//! asks to hear of changes on a stream of its own, since no session carries
//! them. The server keeps each open stream's sink and tells every one of
//! them when its tool list changes.

use rmcp::{
    model::{ServerNotification, ToolListChangedNotification},
    service::SubscriptionSink,
};
use tokio::sync::Mutex;

/// The open listen streams of one server, shared by all its sessions.
#[derive(Debug, Default)]
pub struct Listeners {
    // Held across the sends, so that a stream opened meanwhile is neither
    // missed nor dropped.
    sinks: Mutex<Vec<SubscriptionSink>>,
}

impl Listeners {
    /// Keeps `sink` to tell it of changes until its stream closes.
    pub async fn add(&self, sink: SubscriptionSink) {
        self.sinks.lock().await.push(sink);
    }

    /// How many streams are kept (some may have closed since the last
    /// change).
    pub async fn count(&self) -> usize {
        self.sinks.lock().await.len()
    }

    /// Tells every open stream that the tool list changed; forgets the
    /// closed ones.
    pub async fn tools_changed(&self) {
        let mut sinks = self.sinks.lock().await;
        let mut open = Vec::with_capacity(sinks.len());
        for sink in sinks.drain(..) {
            let notification = ServerNotification::ToolListChangedNotification(
                ToolListChangedNotification::default(),
            );
            match sink.send(notification).await {
                Ok(()) => open.push(sink),
                Err(error) => tracing::debug!(%error, "listen stream closed"),
            }
        }
        *sinks = open;
    }
}
