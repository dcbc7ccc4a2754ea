//! The sessions of the MCP endpoint's clients of the initialize era, kept
//! where every replica can read them: a client sends each request on
//! whatever connection it likes, and the replica it lands on serves it.

use async_trait::async_trait;

/// Who opened a session, and on which endpoint path: only they may use it,
/// and only there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOwner {
    /// The caller's organization.
    pub org_id: String,
    /// The caller's user.
    pub user_id: String,
    /// The endpoint path the session was opened on.
    pub path: String,
}

/// A session as every replica can restore it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    /// Who opened it.
    pub owner: SessionOwner,
    /// The parameters of the client's `initialize` request, as JSON: a
    /// replica restoring the session replays the handshake with them.
    pub initialize_json: String,
}

/// Shared sessions. Times are Unix milliseconds.
#[async_trait]
pub trait EndpointSessionStore: Send + Sync + std::fmt::Debug + 'static {
    /// Records session `id`, opened `now`.
    async fn save(&self, id: &str, session: &StoredSession, now: i64) -> anyhow::Result<()>;

    /// Session `id`, if it is recorded and was used at or after `used_since`.
    async fn load(&self, id: &str, used_since: i64) -> anyhow::Result<Option<StoredSession>>;

    /// Notes that session `id` was used `now`.
    async fn touch(&self, id: &str, now: i64) -> anyhow::Result<()>;

    /// Forgets session `id`.
    async fn delete(&self, id: &str) -> anyhow::Result<()>;

    /// How many sessions of organization `org_id` were used at or after
    /// `used_since`.
    async fn count_of_org(&self, org_id: &str, used_since: i64) -> anyhow::Result<u64>;

    /// Forgets at most `batch` sessions last used before `used_before`,
    /// and relayed answers left since before `used_before`; how many
    /// sessions it forgot.
    async fn purge_idle(&self, used_before: i64, batch: usize) -> anyhow::Result<u64>;

    /// Leaves the answer `message_json` of session `session_id`'s client for
    /// replica `replica`, unless `max_waiting` answers of the session wait
    /// already; whether it was left.
    async fn relay_answer(
        &self,
        answer: &RelayedAnswer,
        max_waiting: usize,
        now: i64,
    ) -> anyhow::Result<bool>;

    /// Takes (and forgets) at most `limit` answers left for `replica`,
    /// oldest first.
    async fn take_answers(&self, replica: &str, limit: usize)
    -> anyhow::Result<Vec<RelayedAnswer>>;
}

/// A client's answer to a server's request, for the replica that asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayedAnswer {
    /// The replica that asked.
    pub replica: String,
    /// The session it was asked in.
    pub session_id: String,
    /// The client's JSON-RPC response or error.
    pub message_json: String,
}
