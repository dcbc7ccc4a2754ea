//! A server's progress reports on the requests of one upstream session,
//! routed to the calls that made them.
//!
//! The SDK gives every request a progress token of its own, unique on its
//! session; a request made for a call whose client asked for progress is
//! registered under that token while it runs, with the call's
//! [`ProgressSink`], and removed when it ends (answered, failed or
//! dropped), so the routes of a session are never more than its requests
//! in flight. A report under any other token is dropped.
//!
//! A report can only come after its request was sent, and the request is
//! registered before anyone may look a report up (the two take one gate in
//! turn), so not even the first report is missed.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use rmcp::{
    RoleClient, ServiceError,
    model::{
        CancelledNotification, CancelledNotificationParam, ClientRequest,
        ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
    },
    service::{Peer, PeerRequestOptions},
};
use tokio::sync::RwLock;

use crate::domain::progress::{Progress, ProgressSink};

/// The calls hearing the progress of one session's requests, by the
/// requests' tokens.
#[derive(Debug, Clone, Default)]
pub struct ProgressRoutes {
    routes: Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>,
    /// Held to register a request, and to look a report up.
    gate: Arc<RwLock<()>>,
}

impl ProgressRoutes {
    fn routes(&self) -> MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Passes a server's report to the call whose request it is about; a
    /// report on no running request of a call that asked is dropped.
    pub async fn tell(&self, params: ProgressNotificationParam) {
        let _gate = self.gate.read().await;
        let sink = self.routes().get(&params.progress_token).cloned();
        match sink {
            Some(sink) => {
                sink.tell(Progress {
                    progress: params.progress,
                    total: params.total,
                    message: params.message,
                });
            }
            None => tracing::debug!("progress on no call that asked for it: dropped"),
        }
    }

    /// The number of requests registered now.
    pub fn len(&self) -> usize {
        self.routes().len()
    }

    /// Whether no request is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes `request` on `peer`, its progress passed to `sink` (when
    /// given) while it runs. Dropped before its answer, the request is
    /// cancelled on the server, as the SDK's own requests are.
    pub async fn send(
        &self,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        sink: Option<&ProgressSink>,
    ) -> Result<ServerResult, ServiceError> {
        let gate = self.gate.write().await;
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        let _route = sink.map(|sink| {
            self.routes()
                .insert(handle.progress_token.clone(), sink.clone());
            Route {
                routes: self.clone(),
                token: handle.progress_token.clone(),
            }
        });
        drop(gate);
        let mut unanswered = Unanswered(Some((peer.clone(), handle.id.clone())));
        let answer = handle.await_response().await;
        unanswered.0 = None;
        answer
    }
}

/// A request's registration; removed when dropped.
struct Route {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.routes().remove(&self.token);
    }
}

/// A request sent and not answered yet: cancelled on the server when the
/// wait for its answer is dropped.
struct Unanswered(Option<(Peer<RoleClient>, RequestId)>);

impl Drop for Unanswered {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("the caller is gone".to_owned()),
        ));
        runtime.spawn(async move {
            let _ = peer.send_notification(cancelled.into()).await;
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn report(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    #[tokio::test]
    async fn a_report_reaches_the_call_of_its_token_and_none_once_it_ended() {
        let routes = ProgressRoutes::default();
        let (sink, mut told) = ProgressSink::new(4);
        let token = ProgressToken(NumberOrString::Number(7));
        routes.routes().insert(token.clone(), sink);
        let route = Route {
            routes: routes.clone(),
            token,
        };
        routes.tell(report(7, 1.0)).await;
        routes.tell(report(8, 2.0)).await;
        assert_eq!(told.try_recv().map(|p| p.progress).ok(), Some(1.0));
        assert!(
            told.try_recv().is_err(),
            "another token's report is not ours"
        );
        drop(route);
        assert!(routes.is_empty(), "the route went with its request");
        routes.tell(report(7, 3.0)).await;
        assert!(told.try_recv().is_err());
    }
}
