//! Hearing of changes from servers of 2026-07-28. Such a server has no
//! session to send `notifications/*/list_changed` on: a client that wants
//! them opens a `subscriptions/listen` stream. mcp-service opens one on the
//! discovery session of each integration whose discovery it caches, and
//! drops the cached discovery when the server says a list changed (and
//! announces the change to the endpoint's clients), or when the stream
//! ends (from then on a change would go unheard).
//!
//! Servers of earlier versions send the notifications on their session;
//! [`super::sessions::SessionHandler`] hears those.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    RoleClient,
    model::{ProtocolVersion, ServerNotification, SubscriptionFilter},
    service::Peer,
};
use tokio::task::JoinHandle;

use crate::domain::{downstream::ListKind, integration::IntegrationId};
use crate::outbound::mcp::sessions::{Announcer, DiscoveryCache, Live};

/// One listen stream per integration at most, each a task.
#[derive(Debug, Clone, Default)]
pub struct ChangeListeners {
    tasks: Arc<Mutex<HashMap<IntegrationId, JoinHandle<()>>>>,
}

impl ChangeListeners {
    /// Listens on `live` for changes of `integration`'s lists, unless a
    /// stream is open already or the server is of an earlier version. The
    /// stream lives as long as the session.
    /// Changes heard are announced with `changes`.
    pub fn ensure(
        &self,
        integration: IntegrationId,
        live: &Live,
        cache: &DiscoveryCache,
        changes: Announcer,
    ) {
        let speaks_listen = live.session.peer_info().is_some_and(|info| {
            info.protocol_version >= ProtocolVersion::V_2026_07_28
                && capabilities_change(&info.capabilities)
        });
        if !speaks_listen {
            return;
        }
        let Ok(mut tasks) = self.tasks.lock() else {
            return;
        };
        if tasks
            .get(&integration)
            .is_some_and(|task| !task.is_finished())
        {
            return;
        }
        let peer = live.session.peer().clone();
        let task = tokio::spawn(listen(peer, integration, cache.clone(), changes));
        tasks.insert(integration, task);
    }

    /// Closes the stream of `integration`, which changed or was deleted.
    pub fn stop(&self, integration: IntegrationId) {
        if let Ok(mut tasks) = self.tasks.lock()
            && let Some(task) = tasks.remove(&integration)
        {
            task.abort();
        }
    }
}

/// Whether the server says any of its lists can change.
fn capabilities_change(capabilities: &rmcp::model::ServerCapabilities) -> bool {
    let tools = capabilities
        .tools
        .as_ref()
        .and_then(|t| t.list_changed)
        .unwrap_or(false);
    let prompts = capabilities
        .prompts
        .as_ref()
        .and_then(|p| p.list_changed)
        .unwrap_or(false);
    let resources = capabilities
        .resources
        .as_ref()
        .and_then(|r| r.list_changed)
        .unwrap_or(false);
    tools || prompts || resources
}

async fn listen(
    peer: Peer<RoleClient>,
    integration: IntegrationId,
    cache: DiscoveryCache,
    changes: Announcer,
) {
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    let mut subscription = match peer.listen(filter).await {
        Ok(subscription) => subscription,
        Err(error) => {
            tracing::debug!(integration_id = %integration, error = %error, "listening for changes failed");
            return;
        }
    };
    tracing::debug!(integration_id = %integration, "listening for changes");
    loop {
        match subscription.next().await {
            Ok(Some(notification)) => {
                let kind = match notification {
                    ServerNotification::ToolListChangedNotification(_) => ListKind::Tools,
                    ServerNotification::PromptListChangedNotification(_) => ListKind::Prompts,
                    ServerNotification::ResourceListChangedNotification(_) => ListKind::Resources,
                    _ => continue,
                };
                tracing::debug!(integration_id = %integration, ?kind, "server list changed");
                cache.invalidate(integration);
                changes.announce(integration, kind);
            }
            Ok(None) => break,
            Err(error) => {
                tracing::debug!(integration_id = %integration, error = %error, "listen stream failed");
                break;
            }
        }
    }
    // Changes are not heard any more: the cached listing is not kept on
    // trust past this point.
    tracing::debug!(integration_id = %integration, end = ?subscription.end(), "listen stream ended");
    cache.invalidate(integration);
}
