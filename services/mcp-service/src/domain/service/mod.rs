//! The integration use cases: tenancy, roles, and the lifecycle of an
//! integration from creation to validation.

use std::{sync::Arc, time::Duration};

use switchboard_auth::Principal;
use switchboard_db::now_millis;

use super::{
    admission,
    catalog::Catalog,
    error::McpError,
    input::{AuthInput, IntegrationPatch, NewIntegration, Source},
    integration::{Integration, IntegrationId, IntegrationKind, OrgId, Slug},
    ports::{
        DocumentSource, IntegrationRepository, ListQuery, McpGateway, ProbeReport, RepositoryError,
    },
    resolve::{ConfigPolicy, Resolved},
    transport::TransportInput,
};

mod documents;
mod stored;
mod usable_cache;

use self::{
    stored::{stored_auth_input, stored_transport_input},
    usable_cache::UsableCache,
};

/// Manages the integrations of the caller's organization.
#[derive(Clone)]
pub struct IntegrationService {
    repository: Arc<dyn IntegrationRepository>,
    gateway: Arc<dyn McpGateway>,
    policy: Arc<ConfigPolicy>,
    catalog: Arc<Catalog>,
    documents: Option<Arc<dyn DocumentSource>>,
    usable: Arc<UsableCache>,
}

impl std::fmt::Debug for IntegrationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntegrationService").finish_non_exhaustive()
    }
}

/// A page of integrations and where the next one starts.
#[derive(Debug)]
pub struct IntegrationPage {
    /// The integrations.
    pub integrations: Vec<Integration>,
    /// Resume point of the next page, `None` on the last page.
    pub next: Option<(i64, IntegrationId)>,
}

fn org_of(caller: &Principal) -> OrgId {
    OrgId(caller.org_id.clone())
}

fn require_admin(caller: &Principal) -> Result<(), McpError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(McpError::Forbidden(
            "changing integrations needs the admin role",
        ))
    }
}

fn storage(error: RepositoryError, slug: &str) -> McpError {
    match error {
        RepositoryError::SlugTaken => McpError::SlugTaken(slug.to_owned()),
        RepositoryError::Other(error) => McpError::Internal(error),
    }
}

impl IntegrationService {
    /// A service over `repository`, reaching servers through `gateway`.
    pub fn new(
        repository: Arc<dyn IntegrationRepository>,
        gateway: Arc<dyn McpGateway>,
        policy: Arc<ConfigPolicy>,
        catalog: Arc<Catalog>,
    ) -> Self {
        Self {
            repository,
            gateway,
            policy,
            catalog,
            documents: None,
            usable: Arc::default(),
        }
    }

    /// Reads OpenAPI documents given by URL from `documents` (without it,
    /// such a document is refused).
    pub fn with_documents(mut self, documents: Arc<dyn DocumentSource>) -> Self {
        self.documents = Some(documents);
        self
    }

    /// Caches integrations read for calls for `ttl` (zero turns it off).
    pub fn with_usable_cache(mut self, ttl: Duration) -> Self {
        self.usable = Arc::new(UsableCache::new(ttl));
        self
    }

    /// The predefined catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// What an integration is made from: the caller's own transport and
    /// auth, or a catalog entry with its secrets. The field names are where
    /// violations are reported.
    #[allow(clippy::type_complexity)]
    fn source(
        &self,
        source: Source,
    ) -> Result<
        (
            IntegrationKind,
            TransportInput,
            AuthInput,
            &'static str,
            &'static str,
        ),
        McpError,
    > {
        Ok(match source {
            Source::Custom { transport, auth } => (
                IntegrationKind::Custom,
                transport,
                auth,
                "custom.transport",
                "custom.auth",
            ),
            Source::Predefined {
                catalog_id,
                secrets,
            } => {
                let entry = self.catalog.get(&catalog_id).ok_or_else(|| {
                    McpError::invalid("predefined.catalog_id", "is not in the predefined catalog")
                })?;
                let (transport, auth) = entry
                    .materialize("predefined.secrets", &secrets)
                    .map_err(McpError::Invalid)?;
                (
                    IntegrationKind::Predefined(catalog_id),
                    transport,
                    auth,
                    "predefined",
                    "predefined",
                )
            }
        })
    }

    /// Creates an integration in the caller's organization (admins only).
    pub async fn create(
        &self,
        caller: &Principal,
        new: NewIntegration,
    ) -> Result<Integration, McpError> {
        require_admin(caller)?;
        let (kind, transport, auth, transport_field, auth_field) = self.source(new.source)?;
        let transport = self.fetched(transport_field, transport).await?;
        let admitted =
            admission::check(&self.policy, transport_field, &transport, auth_field, &auth);
        let resolved = self
            .policy
            .resolve(transport_field, transport, auth_field, auth, None)
            .await;
        let resolved = merge_violations(admitted, resolved)?;
        let now = now_millis();
        let integration = Integration {
            id: IntegrationId::new(),
            org_id: org_of(caller),
            display_name: new.display_name,
            slug: new.slug,
            kind,
            transport: resolved.transport,
            auth: resolved.auth,
            enabled: new.enabled,
            timeouts: new.timeouts,
            guardrails: new.guardrails,
            secrets: resolved.secrets,
            created_at: now,
            updated_at: now,
        };
        self.repository
            .insert(&integration)
            .await
            .map_err(|e| storage(e, integration.slug.as_str()))?;
        tracing::info!(
            integration_id = %integration.id,
            org_id = %integration.org_id,
            slug = integration.slug.as_str(),
            "integration created"
        );
        Ok(integration)
    }

    /// One integration of the caller's organization.
    pub async fn get(
        &self,
        caller: &Principal,
        id: IntegrationId,
    ) -> Result<Integration, McpError> {
        self.repository
            .get(&org_of(caller), id)
            .await
            .map_err(|e| storage(e, ""))?
            .ok_or(McpError::NotFound)
    }

    /// The integration of the caller's organization with `slug`: another
    /// organization's is as missing as one that does not exist. Read
    /// through the cache of integrations read for calls (the MCP endpoint
    /// resolves its path on every request), as fresh as [`Self::usable`].
    pub async fn by_slug(&self, caller: &Principal, slug: &Slug) -> Result<Integration, McpError> {
        let org = org_of(caller);
        if let Some(cached) = self.usable.by_slug(&org, slug) {
            return Ok(cached);
        }
        let integration = self
            .repository
            .find_by_slug(&org, slug)
            .await
            .map_err(|e| storage(e, ""))?
            .ok_or(McpError::NotFound)?;
        self.usable.put(&integration);
        Ok(integration)
    }

    /// An integration the caller may call: it exists in their organization
    /// and is enabled.
    pub async fn usable(
        &self,
        caller: &Principal,
        id: IntegrationId,
    ) -> Result<Integration, McpError> {
        let org = org_of(caller);
        let integration = match self.usable.get(&org, id) {
            Some(cached) => cached,
            None => {
                let integration = self.get(caller, id).await?;
                self.usable.put(&integration);
                integration
            }
        };
        if integration.enabled {
            Ok(integration)
        } else {
            Err(McpError::Disabled(id))
        }
    }

    /// A page of the caller's organization's integrations.
    pub async fn list(
        &self,
        caller: &Principal,
        mut query: ListQuery,
    ) -> Result<IntegrationPage, McpError> {
        let limit = query.limit;
        // One more row than asked tells whether another page follows.
        query.limit = limit + 1;
        let mut integrations = self
            .repository
            .list(&org_of(caller), &query)
            .await
            .map_err(|e| storage(e, ""))?;
        let next = if integrations.len() > limit as usize {
            integrations.truncate(limit as usize);
            integrations.last().map(|i| (i.created_at, i.id))
        } else {
            None
        };
        Ok(IntegrationPage { integrations, next })
    }

    /// Applies `patch` to an integration (admins only).
    pub async fn update(
        &self,
        caller: &Principal,
        id: IntegrationId,
        patch: IntegrationPatch,
    ) -> Result<Integration, McpError> {
        require_admin(caller)?;
        let mut integration = self.get(caller, id).await?;
        if patch.transport.is_some() || patch.auth.is_some() {
            let transport = match patch.transport {
                Some(transport) => self.fetched("integration.transport", transport).await?,
                None => stored_transport_input(&integration),
            };
            let auth = patch
                .auth
                .unwrap_or_else(|| stored_auth_input(&integration));
            let resolved = self.resolve_update(&integration, transport, auth).await?;
            integration.transport = resolved.transport;
            integration.auth = resolved.auth;
            integration.secrets = resolved.secrets;
        }
        if let Some(display_name) = patch.display_name {
            integration.display_name = display_name;
        }
        if let Some(slug) = patch.slug {
            integration.slug = slug;
        }
        if let Some(timeouts) = patch.timeouts {
            integration.timeouts = timeouts;
        }
        if let Some(guardrails) = patch.guardrails {
            integration.guardrails = guardrails;
        }
        integration.updated_at = now_millis();
        self.save(&integration).await?;
        // Sessions and cached discovery belong to the old configuration.
        self.gateway.forget(id).await;
        tracing::info!(integration_id = %id, "integration updated");
        Ok(integration)
    }

    /// Deletes an integration (admins only).
    pub async fn delete(&self, caller: &Principal, id: IntegrationId) -> Result<(), McpError> {
        require_admin(caller)?;
        let deleted = self
            .repository
            .delete(&org_of(caller), id)
            .await
            .map_err(|e| storage(e, ""))?;
        self.usable.forget(id);
        if !deleted {
            return Err(McpError::NotFound);
        }
        self.gateway.forget(id).await;
        tracing::info!(integration_id = %id, "integration deleted");
        Ok(())
    }

    /// Enables or disables an integration (admins only).
    pub async fn set_enabled(
        &self,
        caller: &Principal,
        id: IntegrationId,
        enabled: bool,
    ) -> Result<Integration, McpError> {
        require_admin(caller)?;
        let mut integration = self.get(caller, id).await?;
        if integration.enabled != enabled {
            integration.enabled = enabled;
            integration.updated_at = now_millis();
            self.save(&integration).await?;
            if !enabled {
                self.gateway.forget(id).await;
            }
            tracing::info!(integration_id = %id, enabled, "integration enabled state changed");
        }
        Ok(integration)
    }

    /// Connects to an integration's server and reports what it offers. The
    /// stored URL is checked against the address policy again, since DNS may
    /// have changed since it was saved. A disabled integration is contacted
    /// only for an admin (who checks it before enabling it again): for a
    /// member it is refused like every other use, so its credentials stay home.
    pub async fn validate(
        &self,
        caller: &Principal,
        id: IntegrationId,
    ) -> Result<ProbeReport, McpError> {
        let integration = self.get(caller, id).await?;
        if !integration.enabled && !caller.is_admin() {
            return Err(McpError::Disabled(id));
        }
        let report = self.gateway.probe(&integration).await;
        match &report.error {
            None => {
                tracing::info!(integration_id = %id, tools = report.tool_count, "integration validated")
            }
            Some(error) => {
                tracing::info!(integration_id = %id, error = %error, "integration validation failed")
            }
        }
        Ok(report)
    }

    /// Checks and resolves a changed transport or auth of `integration`. A
    /// secret left out keeps its stored value only while the destination
    /// stays the same; otherwise the admin must enter it again.
    async fn resolve_update(
        &self,
        integration: &Integration,
        transport: TransportInput,
        auth: AuthInput,
    ) -> Result<Resolved, McpError> {
        const TRANSPORT: &str = "integration.transport";
        const AUTH: &str = "integration.auth";
        let entered = admission::entered_secrets(&transport, &auth);
        let admitted = admission::check(&self.policy, TRANSPORT, &transport, AUTH, &auth);
        let resolved = self
            .policy
            .resolve(
                TRANSPORT,
                transport,
                AUTH,
                auth,
                Some((
                    &integration.transport,
                    &integration.auth,
                    &integration.secrets,
                )),
            )
            .await;
        let resolved = merge_violations(admitted, resolved)?;
        let carried = admission::carried_to_new_destination(
            TRANSPORT,
            AUTH,
            admission::destinations(&integration.transport, &integration.auth),
            admission::destinations(&resolved.transport, &resolved.auth),
            &resolved.secrets,
            &entered,
        );
        if carried.is_empty() {
            Ok(resolved)
        } else {
            Err(McpError::Invalid(carried))
        }
    }

    async fn save(&self, integration: &Integration) -> Result<(), McpError> {
        self.usable.forget(integration.id);
        let found = self
            .repository
            .update(integration)
            .await
            .map_err(|e| storage(e, integration.slug.as_str()))?;
        if found {
            Ok(())
        } else {
            Err(McpError::NotFound)
        }
    }
}

/// The violations of both checks together, or the resolved configuration.
fn merge_violations(
    mut admitted: Vec<switchboard_server::FieldViolation>,
    resolved: Result<Resolved, Vec<switchboard_server::FieldViolation>>,
) -> Result<Resolved, McpError> {
    match resolved {
        Ok(resolved) if admitted.is_empty() => Ok(resolved),
        Ok(_) => Err(McpError::Invalid(admitted)),
        Err(violations) => {
            admitted.extend(violations);
            Err(McpError::Invalid(admitted))
        }
    }
}
