//! The start-up report of integrations whose OAuth credential has no pinned
//! destination: client credentials saved before a token URL or an issuer
//! was required. Calls refuse them until an admin sets one; the report
//! names them so that operators need not wait for the failing calls.

use std::sync::Arc;

use sqlx::AnyPool;

use crate::{
    domain::{
        integration::{AuthConfig, IntegrationId, OrgId},
        oauth_input::credential_destination_unpinned,
    },
    outbound::storage::sql::SqlIntegrationRepository,
    sealing::KeyRing,
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
    let Some((count, named)) = unpinned(&configs) else {
        return;
    };
    tracing::warn!(
        count,
        integrations = %named,
        "integrations with oauth client credentials name neither a token_url nor an issuer; their calls are refused, and no credential is sent, until an admin sets one"
    );
}

/// How many of `configs` have no pinned credential destination, and the
/// first [`MAX_NAMED`] of them as `org/id`, `…` ending a cut list; `None`
/// when there are none.
fn unpinned(configs: &[(OrgId, IntegrationId, AuthConfig)]) -> Option<(usize, String)> {
    let unpinned: Vec<String> = configs
        .iter()
        .filter(|(_, _, auth)| credential_destination_unpinned(auth))
        .map(|(org, id, _)| format!("{org}/{id}"))
        .collect();
    if unpinned.is_empty() {
        return None;
    }
    let mut named = unpinned[..unpinned.len().min(MAX_NAMED)].join(", ");
    if unpinned.len() > MAX_NAMED {
        named.push_str(", …");
    }
    Some((unpinned.len(), named))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::integration::{ClientAuth, OnBehalfOf};

    fn client_credentials(token_url: &str, issuer: Option<&str>) -> AuthConfig {
        AuthConfig::OAuthClientCredentials {
            token_url: token_url.to_owned(),
            client_id: "client".into(),
            scopes: Vec::new(),
            client_auth: ClientAuth::ClientSecretBasic,
            issuer: issuer.map(str::to_owned),
            on_behalf_of: OnBehalfOf::TokenExchange { audience: None },
        }
    }

    fn configs(unpinned: usize) -> Vec<(OrgId, IntegrationId, AuthConfig)> {
        let pinned = [
            client_credentials("https://as.example/token", None),
            client_credentials("", Some("https://as.example")),
            AuthConfig::None,
        ];
        pinned
            .into_iter()
            .chain((0..unpinned).map(|_| client_credentials("", None)))
            .map(|auth| (OrgId("org-a".into()), IntegrationId::new(), auth))
            .collect()
    }

    #[test]
    fn only_configurations_naming_neither_token_url_nor_issuer_are_reported() {
        assert_eq!(unpinned(&configs(0)), None);
        let (count, named) = unpinned(&configs(2)).expect("reported");
        assert_eq!(count, 2);
        assert_eq!(named.matches("org-a/").count(), 2, "{named}");
        assert!(!named.ends_with('…'));
    }

    #[test]
    fn the_list_names_at_most_its_bound_and_counts_them_all() {
        let (count, named) = unpinned(&configs(MAX_NAMED)).expect("reported");
        assert_eq!(count, MAX_NAMED);
        assert_eq!(named.matches("org-a/").count(), MAX_NAMED);
        assert!(!named.ends_with('…'));
        let (count, named) = unpinned(&configs(MAX_NAMED + 1)).expect("reported");
        assert_eq!(count, MAX_NAMED + 1);
        assert_eq!(named.matches("org-a/").count(), MAX_NAMED);
        assert!(named.ends_with(", …"), "{named}");
    }
}
