//! What the integrations' servers send toward the endpoint's MCP clients,
//! passed on: their list changes, announced to each client session whose
//! surface they concern; their elicitations and progress during a call,
//! asked of and told to the client that made it; their log messages and resource updates, told to
//! the client session whose upstream session they came on.
//!
//! Who may hear what is the domain's rule
//! ([`crate::domain::downstream`]); this file only speaks the protocol.

use std::{future::Future, sync::Arc};

use futures::{StreamExt as _, stream::FuturesUnordered};
#[expect(
    deprecated,
    reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
)]
use rmcp::model::LoggingMessageNotificationParam;
#[expect(
    deprecated,
    reason = "sampling and roots are what clients of the initialize era answer; deprecated only for 2026-07-28"
)]
use rmcp::model::{CreateMessageRequest, ListRootsRequest};
use rmcp::{
    RoleServer,
    model::{
        ClientResult, ElicitRequest, ProgressNotificationParam, ProgressToken,
        ResourceUpdatedNotificationParam, ServerRequest, SubscriptionFilter,
    },
    service::{Peer, RequestContext, SubscriptionSink},
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::caller::Caller;
use crate::domain::{
    abilities::{Abilities, AbilitiesGuard},
    downstream::{ChangeFeed, Downstream, Heard, ListKind, OpenLine, Question, QuestionKind},
    notices::{ClientNotices, Notice, NoticeKind},
    progress::{Progress, ProgressSink},
};

/// Where a client hears of changes: its session's stream (initialize era)
/// or its `subscriptions/listen` stream (2026-07-28).
pub(super) enum Ear {
    /// A session's peer.
    Session(Peer<RoleServer>),
    /// A listen stream.
    Listen(SubscriptionSink),
}

impl Ear {
    /// Tells the client that `kind` changed; false when it cannot hear
    /// any more.
    async fn tell(&self, kind: ListKind) -> bool {
        match self {
            Self::Session(peer) => match kind {
                ListKind::Tools => peer.notify_tool_list_changed().await.is_ok(),
                ListKind::Resources => peer.notify_resource_list_changed().await.is_ok(),
                ListKind::Prompts => peer.notify_prompt_list_changed().await.is_ok(),
            },
            Self::Listen(sink) => match kind {
                ListKind::Tools => sink.notify_tool_list_changed().await.is_ok(),
                ListKind::Resources => sink.notify_resource_list_changed().await.is_ok(),
                ListKind::Prompts => sink.notify_prompt_list_changed().await.is_ok(),
            },
        }
    }
}

/// Passes the changes of `feed` that `caller` may hear on to `ear` until
/// the client cannot hear any more or the feed ends. A client that fell
/// behind is told that every list changed.
pub(super) async fn pass_changes(feed: &ChangeFeed, caller: &Caller, ear: Ear) {
    let mut listener = feed.listen();
    let org = caller.org();
    while let Some(heard) = listener.next().await {
        let kinds: &[ListKind] = match &heard {
            Heard::Change(change)
                if change.reaches(&org, &caller.principal.user_id, &caller.surface) =>
            {
                std::slice::from_ref(&change.kind)
            }
            Heard::Change(_) => continue,
            Heard::Missed => &ListKind::ALL,
        };
        for kind in kinds {
            if !ear.tell(*kind).await {
                return;
            }
        }
    }
}

/// Passes changes on to a session's client on a task of its own, until the
/// returned guard is dropped (with the session) or the client is gone.
pub(super) fn spawn_session_changes(
    feed: ChangeFeed,
    caller: Caller,
    peer: Peer<RoleServer>,
) -> DropGuard {
    let stop = CancellationToken::new();
    let running = stop.clone();
    tokio::spawn(async move {
        running
            .run_until_cancelled(pass_changes(&feed, &caller, Ear::Session(peer)))
            .await;
    });
    stop.drop_guard()
}

/// Tells a session's client the log messages and resource updates of its
/// upstream sessions, on a task of its own, until the returned guard is
/// dropped (with the session) or the client is gone.
pub(super) fn spawn_session_notices(
    notices: &Arc<ClientNotices>,
    caller: &Caller,
    peer: Peer<RoleServer>,
) -> DropGuard {
    let (line, mut heard) = notices.open(&caller.org(), &caller.upstream_scope());
    let stop = CancellationToken::new();
    let running = stop.clone();
    tokio::spawn(async move {
        // Registered for as long as the task runs.
        let _line = line;
        running
            .run_until_cancelled(async move {
                while let Some(notice) = heard.recv().await {
                    if !tell(&peer, notice).await {
                        return;
                    }
                }
            })
            .await;
    });
    stop.drop_guard()
}

/// Tells the client on `peer` of `notice`; false when it cannot hear any
/// more. A notice whose params the client could not read is skipped.
#[expect(
    deprecated,
    reason = "logging is what clients of the initialize era speak; deprecated only for 2026-07-28"
)]
async fn tell(peer: &Peer<RoleServer>, notice: Notice) -> bool {
    let Notice { kind, params } = notice;
    let sent = match kind {
        NoticeKind::Log => {
            match serde_json::from_value::<LoggingMessageNotificationParam>(params) {
                Ok(params) => peer.notify_logging_message(params).await,
                Err(error) => {
                    tracing::debug!(error = %error, "a log message the client cannot be told");
                    return true;
                }
            }
        }
        NoticeKind::ResourceUpdated => {
            match serde_json::from_value::<ResourceUpdatedNotificationParam>(params) {
                Ok(params) => peer.notify_resource_updated(params).await,
                Err(error) => {
                    tracing::debug!(error = %error, "a resource update the client cannot be told");
                    return true;
                }
            }
        }
    };
    sent.is_ok()
}

/// The list changes a `subscriptions/listen` client may ask for: those the
/// endpoint announces.
pub(super) fn listen_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::builder();
    if requested.tools_list_changed == Some(true) {
        accepted = accepted.tools_list_changed();
    }
    if requested.resources_list_changed == Some(true) {
        accepted = accepted.resources_list_changed();
    }
    if requested.prompts_list_changed == Some(true) {
        accepted = accepted.prompts_list_changed();
    }
    accepted.build()
}

/// What a call passes on to its client while it runs.
#[derive(Debug, Default)]
pub(super) struct Relay {
    /// The questions its servers ask, when the client answers them.
    pub questions: Option<mpsc::Receiver<Question>>,
    /// The progress its servers report, with the client's own token for
    /// it, when the client asked for progress.
    pub progress: Option<(ProgressToken, mpsc::Receiver<Progress>)>,
}

/// What a call passes on to its client while it runs: its servers'
/// questions, when the client is a session's that answers elicitations,
/// samplings or its roots (registered while the returned line lives), and
/// their progress, when the client gave the request a progress token (the
/// sink goes with the call; the client's token stays here).
pub(super) fn relay(
    downstream: &Downstream,
    caller: &Caller,
    context: &RequestContext<RoleServer>,
) -> (Option<OpenLine>, Relay, Option<ProgressSink>) {
    let can_answer = caller.in_session()
        && context.peer.peer_info().is_some_and(|info| {
            let declared = &info.capabilities;
            declared.elicitation.is_some()
                || declared.sampling.is_some()
                || declared.roots.is_some()
        });
    let (line, questions) = if can_answer {
        let (line, questions) = downstream
            .questions
            .open(&caller.org(), &caller.upstream_scope());
        (Some(line), Some(questions))
    } else {
        (None, None)
    };
    let (sink, progress) = match context.meta.get_progress_token() {
        Some(token) => {
            let (sink, reports) = ProgressSink::new(downstream.progress_capacity);
            (Some(sink), Some((token, reports)))
        }
        None => (None, None),
    };
    (
        line,
        Relay {
            questions,
            progress,
        },
        sink,
    )
}

/// Records what the client of a new session declared it answers besides
/// elicitations, for as long as the returned guard lives (with the
/// session): its upstream sessions declare the same to their servers.
pub(super) fn declare_abilities(
    downstream: &Downstream,
    caller: &Caller,
    peer: &Peer<RoleServer>,
) -> Option<AbilitiesGuard> {
    let declared = &peer.peer_info()?.capabilities;
    let abilities = Abilities {
        sampling: declared.sampling.is_some(),
        roots: declared.roots.is_some(),
    };
    Some(
        downstream
            .abilities
            .declare(&caller.org(), &caller.upstream_scope(), abilities),
    )
}

/// Runs `call` while passing what `relay` holds on to the client on
/// `peer`: its servers' questions, asked from the call's own handler so
/// that they reach the client on the call's stream, and their progress,
/// told with the client's token (every report come in before the call
/// ended is told before its result). Whatever is unanswered when the call
/// ends is dropped (the server then has the policy's answer).
pub(super) async fn relaying<T>(
    call: impl Future<Output = T>,
    relay: Relay,
    peer: &Peer<RoleServer>,
) -> T {
    let Relay {
        mut questions,
        mut progress,
    } = relay;
    let mut asking = FuturesUnordered::new();
    let mut call = std::pin::pin!(call);
    loop {
        tokio::select! {
            outcome = &mut call => {
                if let Some((token, reports)) = &mut progress {
                    while let Ok(report) = reports.try_recv() {
                        notify_progress(peer, token, report).await;
                    }
                }
                return outcome;
            }
            question = next_of(questions.as_mut()) => match question {
                Some(question) => asking.push(ask(peer, question)),
                None => questions = None,
            },
            report = next_of(progress.as_mut().map(|(_, reports)| reports)) => {
                match (report, &progress) {
                    (Some(report), Some((token, _))) => notify_progress(peer, token, report).await,
                    _ => progress = None,
                }
            }
            Some(()) = asking.next(), if !asking.is_empty() => {}
        }
    }
}

/// The next item of `receiver`; never, when there is none.
async fn next_of<T>(receiver: Option<&mut mpsc::Receiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// Tells the client on `peer` of `report`, under its own `token`.
async fn notify_progress(peer: &Peer<RoleServer>, token: &ProgressToken, report: Progress) {
    let mut params = ProgressNotificationParam::new(token.clone(), report.progress);
    params.total = report.total;
    params.message = report.message;
    if let Err(error) = peer.notify_progress(params).await {
        tracing::debug!(error = %error, "the client was not told of the progress");
    }
}

/// Asks the client one question and sends its answer back. A question of
/// a kind the client did not declare is not asked (it is then answered as
/// without a client).
async fn ask(peer: &Peer<RoleServer>, question: Question) {
    let Question {
        kind,
        params,
        answer,
    } = question;
    let Some(request) = request_of(peer, kind, params) else {
        return;
    };
    let result = match peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(result)) if kind == QuestionKind::Elicitation => {
            serde_json::to_value(result)
        }
        Ok(ClientResult::CreateMessageResult(result)) if kind == QuestionKind::Sampling => {
            serde_json::to_value(result)
        }
        Ok(ClientResult::ListRootsResult(result)) if kind == QuestionKind::Roots => {
            serde_json::to_value(result)
        }
        Ok(_) => {
            tracing::debug!(?kind, "the client answered with something else");
            return;
        }
        Err(error) => {
            tracing::debug!(?kind, error = %error, "the client did not answer");
            return;
        }
    };
    match result {
        Ok(result) => {
            let _ = answer.send(result);
        }
        Err(error) => tracing::debug!(error = %error, "the client's answer is unreadable"),
    }
}

/// The request asking the client on `peer` a question of `kind`; `None`
/// when the client did not declare it answers such questions, or `params`
/// are none of its kind.
#[expect(
    deprecated,
    reason = "sampling and roots are what clients of the initialize era answer; deprecated only for 2026-07-28"
)]
fn request_of(peer: &Peer<RoleServer>, kind: QuestionKind, params: Value) -> Option<ServerRequest> {
    let declared = peer.peer_info().map(|info| info.capabilities.clone())?;
    let request = match kind {
        // The SDK's own `create_elicitation` is behind a feature that
        // would build its whole elicitation schema support; this is the
        // same request.
        QuestionKind::Elicitation if declared.elicitation.is_some() => {
            ServerRequest::ElicitRequest(ElicitRequest::new(serde_json::from_value(params).ok()?))
        }
        QuestionKind::Sampling if declared.sampling.is_some() => {
            ServerRequest::CreateMessageRequest(CreateMessageRequest::new(
                serde_json::from_value(params).ok()?,
            ))
        }
        QuestionKind::Roots if declared.roots.is_some() => {
            ServerRequest::ListRootsRequest(ListRootsRequest::default())
        }
        _ => {
            tracing::debug!(?kind, "the client does not answer such questions");
            return None;
        }
    };
    Some(request)
}
