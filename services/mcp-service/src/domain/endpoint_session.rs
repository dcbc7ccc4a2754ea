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
    /// and relayed messages left since before `used_before`; how many
    /// sessions it forgot.
    async fn purge_idle(&self, used_before: i64, batch: usize) -> anyhow::Result<u64>;

    /// Leaves `message` for its replica, unless `max_waiting` messages of
    /// its kind in its session wait already; whether it was left.
    async fn relay(&self, message: &Relayed, max_waiting: usize, now: i64) -> anyhow::Result<bool>;

    /// Takes (and forgets) at most `limit` messages left for `replica`,
    /// oldest first.
    async fn take_relayed(&self, replica: &str, limit: usize) -> anyhow::Result<Vec<Relayed>>;

    /// Records `replica` as the one holding the client's stream of session
    /// `id` (its GET), where the server's own messages go.
    async fn hold_stream(&self, id: &str, replica: &str) -> anyhow::Result<()>;

    /// The replica holding the client's stream of session `id`, if one was
    /// recorded.
    async fn stream_holder(&self, id: &str) -> anyhow::Result<Option<String>>;
}

/// A message of a session for the replica that must act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relayed {
    /// What it is.
    pub kind: RelayKind,
    /// The replica it is for.
    pub replica: String,
    /// The session it belongs to.
    pub session_id: String,
    /// The JSON-RPC message.
    pub message_json: String,
}

/// Which way a relayed message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayKind {
    /// The client's answer to a server's request, for the replica whose
    /// copy of the session asked.
    Answer,
    /// A message a copy of the session sends on its own (a list change, a
    /// log message, a resource update, a request of its own), for the
    /// replica holding the client's stream.
    Notice,
}

impl RelayKind {
    /// Its name in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Answer => "answer",
            Self::Notice => "notice",
        }
    }

    /// The kind named `name` in the store.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "answer" => Some(Self::Answer),
            "notice" => Some(Self::Notice),
            _ => None,
        }
    }
}
