//! The start-up report of integrations whose OAuth credential has no pinned
//! destination: client credentials saved before a token URL or an issuer
//! was required. Calls refuse them until an admin sets one; the report
//! names them so that operators need not wait for the failing calls.

use std::sync::Arc;

use sqlx::AnyPool;

use crate::{
    domain::oauth_input::credential_destination_unpinned,
    outbound::storage::{secret_box::KeyRing, sql::SqlIntegrationRepository},
};

/// Most integrations named in the report; the count is always whole.
const MAX_NAMED: usize = 100;

/// The integrations on `pool`, sealed with `keys`, once their report is
/// logged (see [`report_unpinned_credentials`]).
pub(super) async fn reported_repository(
    pool: &AnyPool,
    keys: Arc<KeyRing>,
) -> Arc<SqlIntegrationRepository> {
    let repository = Arc::new(SqlIntegrationRepository::new(pool.clone(), keys));
    report_unpinned_credentials(&repository).await;
    repository
}

/// Logs, once, the integrations calls will refuse for want of a pinned
/// credential destination. A failure to read them is logged, not fatal.
async fn report_unpinned_credentials(repository: &SqlIntegrationRepository) {
    let configs = match repository.client_credentials_auth().await {
        Ok(configs) => configs,
        Err(error) => {
            tracing::warn!(error = %format!("{error:#}"), "could not check the integrations' credential destinations");
            return;
        }
    };
    let unpinned: Vec<String> = configs
        .iter()
        .filter(|(_, _, auth)| credential_destination_unpinned(auth))
        .map(|(org, id, _)| format!("{org}/{id}"))
        .collect();
    if unpinned.is_empty() {
        return;
    }
    tracing::warn!(
        count = unpinned.len(),
        integrations = %unpinned.iter().take(MAX_NAMED).cloned().collect::<Vec<_>>().join(", "),
        "integrations with oauth client credentials name neither a token_url nor an issuer; their calls are refused, and no credential is sent, until an admin sets one"
    );
}
