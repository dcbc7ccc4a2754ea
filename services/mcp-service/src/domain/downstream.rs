//! What an integration's MCP server sends toward the MCP clients connected
//! to Switchboard's endpoint: announcements that its lists changed, and
//! questions (elicitations) asked in the middle of a call.
//!
//! Upstream sessions are shared (discovery sessions by every caller of an
//! organization's integration), so who may hear what is decided here, once:
//! a list change reaches only client sessions of the integration's own
//! organization whose surface holds the integration (and, for a per-user
//! integration, only its user's); a question reaches only the client whose
//! call made it, found by its organization and upstream session scope.
//!
//! A server's log messages and resource updates, told on the upstream
//! session of one client session, go to that session alone
//! ([`super::notices`]).
//!
//! Both are bounded: the change feed holds at most its capacity of
//! announcements (a listener that falls behind is told it missed some, and
//! re-announces every list), and each call holds at most its capacity of
//! unanswered questions (one past it is answered as if no client were
//! there, by the operator's elicitation policy).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use super::{
    abilities::ClientAbilities,
    client_lines::{ClientLines, LineGuard},
    integration::{IntegrationId, OrgId},
    notices::ClientNotices,
    ports::SessionScope,
    surface::Surface,
};

/// Which list of a server changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list` (and its templates).
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// Every list, re-announced when changes were missed.
    pub const ALL: [Self; 3] = [Self::Tools, Self::Resources, Self::Prompts];
}

/// A server's announcement that one of its lists changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListChange {
    /// The integration's organization.
    pub org: OrgId,
    /// The integration whose server announced it.
    pub integration: IntegrationId,
    /// The user whose session heard it, for an integration whose lists
    /// are each user's own; `None` when the lists are the organization's.
    pub user: Option<String>,
    /// The list.
    pub kind: ListKind,
}

impl ListChange {
    /// Whether a client session of `user` in `org`, reaching `surface`,
    /// may hear of this change.
    pub fn reaches(&self, org: &OrgId, user: &str, surface: &Surface) -> bool {
        self.org == *org
            && self.user.as_deref().is_none_or(|own| own == user)
            && surface
                .members()
                .iter()
                .any(|member| member.integration == self.integration)
    }
}

/// What a listener of the feed hears next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A change.
    Change(ListChange),
    /// The listener fell behind and missed changes: any list may have
    /// changed.
    Missed,
}

/// Every server's list changes, for the client sessions of one replica.
#[derive(Debug, Clone)]
pub struct ChangeFeed {
    sender: broadcast::Sender<ListChange>,
}

impl ChangeFeed {
    /// A feed holding at most `capacity` announcements a listener has not
    /// heard yet (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            sender: broadcast::channel(capacity.max(1)).0,
        }
    }

    /// Tells every listener of `change`; nobody listening is no failure.
    pub fn announce(&self, change: ListChange) {
        tracing::debug!(integration_id = %change.integration, kind = ?change.kind, "list change announced");
        let _ = self.sender.send(change);
    }

    /// A listener hearing the changes announced from now on.
    pub fn listen(&self) -> ChangeListener {
        ChangeListener {
            receiver: self.sender.subscribe(),
        }
    }
}

/// One listener of a [`ChangeFeed`].
#[derive(Debug)]
pub struct ChangeListener {
    receiver: broadcast::Receiver<ListChange>,
}

impl ChangeListener {
    /// The next thing heard, or `None` when the feed is gone.
    pub async fn next(&mut self) -> Option<Heard> {
        match self.receiver.recv().await {
            Ok(change) => Some(Heard::Change(change)),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(Heard::Missed),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

/// What a server asks the client whose call made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionKind {
    /// `elicitation/create`: a form or a URL for the user.
    Elicitation,
    /// `sampling/createMessage`: a completion by the client's model.
    Sampling,
    /// `roots/list`: the client's roots.
    Roots,
}

/// A server's request for the client whose call made it.
#[derive(Debug)]
pub struct Question {
    /// What is asked.
    pub kind: QuestionKind,
    /// The request's params wire JSON, as the server sent them (`null`
    /// for `roots/list`).
    pub params: Value,
    /// Where the client's result wire JSON goes.
    pub answer: oneshot::Sender<Value>,
}

/// The clients that can answer the questions of upstream sessions, by the
/// session's organization and scope: a client's call registers while it
/// runs, and a server's question on that scope's session goes to it.
pub type ClientQuestions = ClientLines<Question>;

/// A client registered to answer questions; unregistered when dropped.
pub type OpenLine = LineGuard<Question>;

impl ClientLines<Question> {
    /// Whether a client answers the questions of `scope` in `org` now.
    pub fn has_client(&self, org: &OrgId, scope: &SessionScope) -> bool {
        self.with_clients(org, scope, |clients| {
            clients.iter().any(|(_, sender)| !sender.is_closed())
        })
    }

    /// Asks the client answering `scope` in `org` the question of `kind`
    /// with `params` and waits for its answer; `None` when no client can
    /// take it (none registered, its questions at their limit, or it went
    /// away or declined to answer): then the question is answered as
    /// without a client.
    pub async fn ask(
        &self,
        org: &OrgId,
        scope: &SessionScope,
        kind: QuestionKind,
        mut params: Value,
    ) -> Option<Value> {
        bound_question(kind, &mut params);
        let (answer, answered) = oneshot::channel();
        let question = Question {
            kind,
            params,
            answer,
        };
        // The latest call first: it is the one most likely waiting.
        let sent = self.with_clients(org, scope, |clients| {
            clients
                .iter()
                .rev()
                .find(|(_, sender)| !sender.is_closed())
                .is_some_and(|(_, sender)| sender.try_send(question).is_ok())
        });
        if !sent {
            tracing::debug!("no client takes the question: answered without one");
            return None;
        }
        answered.await.ok()
    }
}

/// An elicitation's `message` (the text a user reads) cut to the text
/// bound; its form and the other questions' params are bounded by the
/// message size of the session they came on.
fn bound_question(kind: QuestionKind, params: &mut Value) {
    if kind != QuestionKind::Elicitation {
        return;
    }
    if let Some(Value::String(message)) = params.get_mut("message") {
        super::server_text::bound_in_place(message, super::bounds::DEFAULT_MAX_SERVER_TEXT_BYTES);
    }
}

/// Everything flowing from servers toward the endpoint's clients.
#[derive(Debug, Clone)]
pub struct Downstream {
    /// List changes.
    pub changes: ChangeFeed,
    /// Questions asked during calls.
    pub questions: Arc<ClientQuestions>,
    /// Log messages and resource updates, for their client session.
    pub notices: Arc<ClientNotices>,
    /// What each client session declared it answers besides elicitations.
    pub abilities: Arc<ClientAbilities>,
    /// How many progress reports a call holds that its client has not been
    /// told yet (the notices' bound: reports are notices of one call).
    pub progress_capacity: usize,
}

impl Downstream {
    /// A feed of `changes` capacity, calls holding at most `questions`
    /// unanswered questions each, and client sessions (and calls, of
    /// their progress) holding at most `notices` notices not passed on
    /// yet.
    pub fn new(changes: usize, questions: usize, notices: usize) -> Self {
        Self {
            changes: ChangeFeed::new(changes),
            questions: Arc::new(ClientQuestions::new(questions)),
            notices: Arc::new(ClientNotices::new(notices)),
            abilities: Arc::default(),
            progress_capacity: notices.max(1),
        }
    }
}

impl Default for Downstream {
    /// The endpoint's default bounds.
    fn default() -> Self {
        Self::new(256, 4, 64)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::surface::Member;

    fn org(name: &str) -> OrgId {
        OrgId(name.to_owned())
    }

    fn change(org_name: &str, integration: IntegrationId, user: Option<&str>) -> ListChange {
        ListChange {
            org: org(org_name),
            integration,
            user: user.map(str::to_owned),
            kind: ListKind::Tools,
        }
    }

    #[test]
    fn a_change_reaches_only_its_organization_its_surface_and_its_user() {
        let (ours, other) = (IntegrationId::new(), IntegrationId::new());
        let surface = Surface::of(vec![Member::whole(ours)]);
        assert!(change("a", ours, None).reaches(&org("a"), "ada", &surface));
        assert!(!change("a", ours, None).reaches(&org("b"), "ada", &surface));
        assert!(!change("a", other, None).reaches(&org("a"), "ada", &surface));
        assert!(change("a", ours, Some("ada")).reaches(&org("a"), "ada", &surface));
        assert!(!change("a", ours, Some("bob")).reaches(&org("a"), "ada", &surface));
    }

    #[tokio::test]
    async fn a_listener_past_the_feeds_capacity_hears_that_it_missed_changes() {
        let feed = ChangeFeed::new(2);
        let mut listener = feed.listen();
        let id = IntegrationId::new();
        for _ in 0..3 {
            feed.announce(change("a", id, None));
        }
        assert_eq!(listener.next().await, Some(Heard::Missed));
        assert_eq!(
            listener.next().await,
            Some(Heard::Change(change("a", id, None)))
        );
        feed.announce(change("a", id, None));
        assert_eq!(
            listener.next().await,
            Some(Heard::Change(change("a", id, None)))
        );
    }

    #[tokio::test]
    async fn a_question_reaches_the_client_of_its_scope_and_its_answer_comes_back() {
        let questions = Arc::new(ClientQuestions::new(4));
        let scope = SessionScope::new("ada", "mcp-session:1");
        let (_open, mut received) = questions.open(&org("a"), &scope);
        let client = tokio::spawn(async move {
            let question = received.recv().await.expect("a question");
            question
                .answer
                .send(json!({"action": "accept", "asked": question.params}))
                .expect("sent");
        });
        let answer = questions
            .ask(
                &org("a"),
                &scope,
                QuestionKind::Elicitation,
                json!({"message": "sure?"}),
            )
            .await;
        assert_eq!(
            answer,
            Some(json!({"action": "accept", "asked": {"message": "sure?"}}))
        );
        client.await.expect("client");
        // Another organization's session of the same scope name has no
        // client: its question is not this client's.
        assert_eq!(
            questions
                .ask(&org("b"), &scope, QuestionKind::Roots, json!(null))
                .await,
            None
        );
    }

    #[tokio::test]
    async fn questions_past_a_clients_limit_and_after_it_left_are_answered_without_it() {
        let questions = Arc::new(ClientQuestions::new(1));
        let scope = SessionScope::new("ada", "mcp-session:1");
        let (open, received) = questions.open(&org("a"), &scope);
        assert!(questions.has_client(&org("a"), &scope));
        // The first question waits in the client's queue, unanswered.
        let first = {
            let questions = questions.clone();
            let scope = scope.clone();
            tokio::spawn(async move {
                questions
                    .ask(&org("a"), &scope, QuestionKind::Sampling, json!(1))
                    .await
            })
        };
        while received.is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            questions
                .ask(&org("a"), &scope, QuestionKind::Elicitation, json!(2))
                .await,
            None
        );
        drop(received);
        assert_eq!(first.await.expect("first"), None);
        drop(open);
        assert!(!questions.has_client(&org("a"), &scope));
        assert!(questions.is_empty(), "the line was closed");
    }
}
