//! Conversions between the `switchboard.mcp.v1` messages and the domain,
//! parsing (and collecting every violation) at the boundary.

use std::{collections::BTreeMap, time::Duration};

use secrecy::SecretString;
use switchboard_auth::Principal;
use switchboard_proto::mcp::v1 as pb;
use switchboard_server::{FieldViolation, paging};

mod transport;

use transport::proto_transport;
pub(crate) use transport::transport_input;

use crate::domain::{
    catalog::CatalogEntry,
    error::McpError,
    guardrails::GuardrailSettings,
    input::AuthInput,
    integration::{
        AuthConfig, ClientAuth, IdentityProvider, Integration, IntegrationId, IntegrationKind,
        OAuthCodeConfig, OnBehalfOf, Secrets, Timeouts,
    },
    ports::ProbeReport,
    url_secrets,
};

/// Collects field violations while parsing a request.
#[derive(Debug, Default)]
pub(crate) struct Violations(Vec<FieldViolation>);

impl Violations {
    /// The value, or `None` after recording its violation.
    pub(crate) fn take<T>(&mut self, result: Result<T, FieldViolation>) -> Option<T> {
        result.map_err(|v| self.0.push(v)).ok()
    }

    /// Records several violations.
    pub(crate) fn extend(&mut self, violations: Vec<FieldViolation>) {
        self.0.extend(violations);
    }

    /// Ok when nothing was recorded.
    pub(crate) fn finish(self) -> Result<(), McpError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(McpError::Invalid(self.0))
        }
    }
}

/// Default and largest page sizes of list RPCs.
pub(crate) use switchboard_server::paging::{page_size, timestamp};

/// The token of the page after the integration at `position`.
pub(crate) fn encode_page_token(position: Option<(i64, IntegrationId)>) -> String {
    let position = position.map(|(time, id)| (time, id.to_string()));
    paging::encode_page_token(position.as_ref().map(|(time, id)| (*time, id.as_str())))
}

/// The integration a page token names.
pub(crate) fn decode_page_token(
    field: &str,
    token: &str,
) -> Result<Option<(i64, IntegrationId)>, FieldViolation> {
    let Some((time, id)) = paging::decode_page_token(field, token)? else {
        return Ok(None);
    };
    let id = IntegrationId::parse(field, &id)
        .map_err(|_| FieldViolation::new(field, "is not a page token this service issued"))?;
    Ok(Some((time, id)))
}

fn duration(
    field: &str,
    value: Option<&prost_types::Duration>,
    max: Duration,
) -> Result<Option<u64>, FieldViolation> {
    let Some(value) = value else { return Ok(None) };
    let millis = i128::from(value.seconds) * 1000 + i128::from(value.nanos) / 1_000_000;
    if millis <= 0 || value.nanos < 0 {
        return Err(FieldViolation::new(field, "must be positive"));
    }
    let max_millis = i128::try_from(max.as_millis()).unwrap_or(i128::MAX);
    if millis > max_millis {
        return Err(FieldViolation::new(
            field,
            format!("must be at most {}s", max.as_secs()),
        ));
    }
    Ok(u64::try_from(millis).ok())
}

pub(crate) fn timeouts(
    field: &str,
    value: Option<&pb::Timeouts>,
    violations: &mut Violations,
) -> Timeouts {
    let Some(value) = value else {
        return Timeouts::default();
    };
    Timeouts {
        connect_ms: violations
            .take(duration(
                &format!("{field}.connect"),
                value.connect.as_ref(),
                Timeouts::MAX_CONNECT,
            ))
            .flatten(),
        call_ms: violations
            .take(duration(
                &format!("{field}.call"),
                value.call.as_ref(),
                Timeouts::MAX_CALL,
            ))
            .flatten(),
    }
}

fn secret(value: String) -> Option<SecretString> {
    (!value.is_empty()).then(|| SecretString::from(value))
}

fn proto_client_auth(client_auth: &ClientAuth) -> (pb::ClientAuthentication, String) {
    match client_auth {
        ClientAuth::ClientSecretBasic => {
            (pb::ClientAuthentication::ClientSecretBasic, String::new())
        }
        ClientAuth::ClientSecretPost => (pb::ClientAuthentication::ClientSecretPost, String::new()),
        ClientAuth::PrivateKeyJwt { algorithm } => {
            (pb::ClientAuthentication::PrivateKeyJwt, algorithm.clone())
        }
        ClientAuth::WorkloadIdentity => (pb::ClientAuthentication::WorkloadIdentity, String::new()),
    }
}

/// The client authentication method a request names, `private_key_jwt`
/// with its algorithm (ES256 when none is named).
fn client_auth(method: pb::ClientAuthentication, algorithm: String) -> ClientAuth {
    match method {
        pb::ClientAuthentication::Unspecified | pb::ClientAuthentication::ClientSecretBasic => {
            ClientAuth::ClientSecretBasic
        }
        pb::ClientAuthentication::ClientSecretPost => ClientAuth::ClientSecretPost,
        pb::ClientAuthentication::PrivateKeyJwt => ClientAuth::PrivateKeyJwt {
            algorithm: if algorithm.is_empty() {
                ClientAuth::DEFAULT_SIGNING_ALGORITHM.to_owned()
            } else {
                algorithm
            },
        },
        pb::ClientAuthentication::WorkloadIdentity => ClientAuth::WorkloadIdentity,
    }
}

pub(crate) fn auth_input(auth: Option<pb::AuthConfig>) -> AuthInput {
    use pb::auth_config::Method;
    match auth.and_then(|a| a.method) {
        None | Some(Method::None(_)) => AuthInput::None,
        Some(Method::BearerToken(b)) => AuthInput::BearerToken {
            token: secret(b.token),
        },
        Some(Method::Header(h)) => AuthInput::Header {
            header_name: h.header_name,
            value: secret(h.value),
        },
        Some(Method::OauthClientCredentials(o)) => AuthInput::OAuthClientCredentials {
            client_auth: client_auth(o.client_authentication(), o.signing_algorithm.clone()),
            on_behalf_of: on_behalf_of(&o),
            token_url: o.token_url,
            client_id: o.client_id,
            client_secret: secret(o.client_secret),
            scopes: o.scopes,
            private_key: secret(o.private_key),
            issuer: Some(o.issuer).filter(|issuer| !issuer.is_empty()),
        },
        Some(Method::OauthAuthorizationCode(o)) => AuthInput::OAuthAuthorizationCode {
            config: OAuthCodeConfig {
                redirect_uri: o.redirect_uri,
                client_id: Some(o.client_id).filter(|id| !id.is_empty()),
                issuer: Some(o.issuer).filter(|issuer| !issuer.is_empty()),
                client_metadata_url: Some(o.client_metadata_url).filter(|url| !url.is_empty()),
                scopes: o.scopes,
                organization_wide: o.organization_wide,
            },
            client_secret: secret(o.client_secret),
        },
        Some(Method::Query(q)) => AuthInput::Query {
            parameter_name: q.parameter_name,
            value: secret(q.value),
        },
    }
}

pub(crate) fn predefined_secrets(
    secrets: impl IntoIterator<Item = (String, String)>,
) -> BTreeMap<String, SecretString> {
    secrets
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k, SecretString::from(v)))
        .collect()
}

fn proto_duration(millis: u64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(millis / 1000).unwrap_or(i64::MAX),
        nanos: i32::try_from((millis % 1000) * 1_000_000).unwrap_or(0),
    }
}

fn proto_auth(auth: &AuthConfig, secrets: &Secrets) -> pb::AuthConfig {
    use pb::auth_config::Method;
    let method = match auth {
        AuthConfig::None => Method::None(pb::NoAuth {}),
        AuthConfig::BearerToken => Method::BearerToken(pb::BearerTokenAuth {
            token: String::new(),
            token_set: secrets.contains(Secrets::BEARER_TOKEN),
        }),
        AuthConfig::Header { header_name } => Method::Header(pb::HeaderAuth {
            header_name: header_name.clone(),
            value: String::new(),
            value_set: secrets.contains(Secrets::HEADER_VALUE),
        }),
        AuthConfig::Query { parameter_name } => Method::Query(pb::QueryAuth {
            parameter_name: parameter_name.clone(),
            value: String::new(),
            value_set: secrets.contains(Secrets::QUERY_VALUE),
        }),
        AuthConfig::OAuthClientCredentials {
            token_url,
            client_id,
            scopes,
            client_auth,
            issuer,
            on_behalf_of,
        } => {
            let (authentication, signing_algorithm) = proto_client_auth(client_auth);
            let (grant, audience, identity_provider) = proto_on_behalf_of(on_behalf_of);
            Method::OauthClientCredentials(pb::OAuthClientCredentialsAuth {
                token_url: token_url.clone(),
                client_id: client_id.clone(),
                client_secret: String::new(),
                client_secret_set: secrets.contains(Secrets::OAUTH_CLIENT_SECRET),
                scopes: scopes.clone(),
                client_authentication: authentication.into(),
                private_key: String::new(),
                private_key_set: secrets.contains(Secrets::OAUTH_CLIENT_PRIVATE_KEY),
                signing_algorithm,
                issuer: issuer.clone().unwrap_or_default(),
                on_behalf_of: grant.into(),
                audience,
                identity_provider,
            })
        }
        AuthConfig::OAuthAuthorizationCode(config) => {
            Method::OauthAuthorizationCode(pb::OAuthAuthorizationCodeAuth {
                redirect_uri: config.redirect_uri.clone(),
                client_id: config.client_id.clone().unwrap_or_default(),
                client_secret: String::new(),
                client_secret_set: secrets.contains(Secrets::OAUTH_CLIENT_SECRET),
                client_metadata_url: config.client_metadata_url.clone().unwrap_or_default(),
                scopes: config.scopes.clone(),
                organization_wide: config.organization_wide,
                issuer: config.issuer.clone().unwrap_or_default(),
            })
        }
    };
    pb::AuthConfig {
        method: Some(method),
    }
}

/// An integration as returned to `caller`: secret values cleared, and for a
/// member every URL cut to its origin (see `url_secrets::shown_to_members`).
pub(crate) fn proto_integration(integration: &Integration, caller: &Principal) -> pb::Integration {
    let mut shown = proto_integration_in_full(integration);
    if !caller.is_admin() {
        cut_urls_to_origin(&mut shown);
    }
    shown
}

/// What a member sees of the URLs an admin entered: the origin only, since a
/// path or query may hold a credential no name check can recognise.
fn cut_urls_to_origin(integration: &mut pb::Integration) {
    use pb::{auth_config::Method, transport::Kind};
    if let Some(Kind::StreamableHttp(http)) =
        integration.transport.as_mut().and_then(|t| t.kind.as_mut())
    {
        http.url = url_secrets::shown_to_members(&http.url);
    }
    if let Some(Method::OauthClientCredentials(oauth)) =
        integration.auth.as_mut().and_then(|a| a.method.as_mut())
    {
        oauth.token_url = url_secrets::shown_to_members(&oauth.token_url);
        oauth.issuer = url_secrets::shown_to_members(&oauth.issuer);
        if let Some(idp) = oauth.identity_provider.as_mut() {
            idp.token_url = url_secrets::shown_to_members(&idp.token_url);
            idp.issuer = url_secrets::shown_to_members(&idp.issuer);
        }
    }
}

fn proto_integration_in_full(integration: &Integration) -> pb::Integration {
    let (kind, predefined_id) = match &integration.kind {
        IntegrationKind::Custom => (pb::IntegrationKind::Custom, String::new()),
        IntegrationKind::Predefined(id) => (pb::IntegrationKind::Predefined, id.clone()),
    };
    pb::Integration {
        id: integration.id.to_string(),
        organization_id: integration.org_id.0.clone(),
        display_name: integration.display_name.as_str().to_owned(),
        slug: integration.slug.as_str().to_owned(),
        kind: kind.into(),
        predefined_id,
        transport: Some(proto_transport(&integration.transport)),
        auth: Some(proto_auth(&integration.auth, &integration.secrets)),
        enabled: integration.enabled,
        timeouts: Some(pb::Timeouts {
            connect: integration.timeouts.connect_ms.map(proto_duration),
            call: integration.timeouts.call_ms.map(proto_duration),
        }),
        create_time: Some(timestamp(integration.created_at)),
        update_time: Some(timestamp(integration.updated_at)),
        guardrails: proto_guardrail_settings(&integration.guardrails),
    }
}

/// Guardrail settings as the contract carries them.
pub(crate) fn proto_guardrail_settings(settings: &GuardrailSettings) -> Vec<pb::GuardrailSetting> {
    settings
        .settings()
        .iter()
        .map(|s| pb::GuardrailSetting {
            detector: s.detector.name().to_owned(),
            place: s.place.name().to_owned(),
            action: s.action.name().to_owned(),
        })
        .collect()
}

/// A catalog entry as listed to callers.
pub(crate) fn proto_catalog_entry(entry: &CatalogEntry) -> pb::PredefinedIntegration {
    let transport = entry.transport.shown();
    pb::PredefinedIntegration {
        id: entry.id.clone(),
        display_name: entry.display_name.clone(),
        description: entry.description.clone(),
        default_slug: entry.default_slug.clone(),
        transport: Some(proto_transport(&transport)),
        secrets: entry
            .secrets
            .iter()
            .map(|s| pb::SecretRequirement {
                name: s.name.clone(),
                description: s.description.clone(),
                required: s.required,
            })
            .collect(),
    }
}

/// A probe report as a Validate response.
pub(crate) fn proto_validation(report: ProbeReport) -> pb::ValidateIntegrationResponse {
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let server = report.server.map(|s| pb::ServerInfo {
        name: s.name,
        title: s.title.unwrap_or_default(),
        version: s.version,
        protocol_version: s.protocol_version,
        instructions: s.instructions.unwrap_or_default(),
    });
    pb::ValidateIntegrationResponse {
        ok: report.error.is_none(),
        error: report.error.unwrap_or_default(),
        protocol_version: server
            .as_ref()
            .map(|s| s.protocol_version.clone())
            .unwrap_or_default(),
        server,
        tool_count: count(report.tool_count),
        resource_count: count(report.resource_count),
        resource_template_count: count(report.resource_template_count),
        prompt_count: count(report.prompt_count),
        latency: Some(proto_duration(
            u64::try_from(report.latency.as_millis()).unwrap_or(u64::MAX),
        )),
    }
}

/// Whose identity an OAuth client-credentials integration's token carries,
/// as the caller sent it.
fn on_behalf_of(auth: &pb::OAuthClientCredentialsAuth) -> OnBehalfOf {
    match auth.on_behalf_of() {
        pb::OnBehalfOf::Unspecified => OnBehalfOf::Service,
        pb::OnBehalfOf::TokenExchange => OnBehalfOf::TokenExchange {
            audience: Some(auth.audience.clone()).filter(|a| !a.is_empty()),
        },
        pb::OnBehalfOf::EnterpriseManaged => {
            let idp = auth.identity_provider.clone().unwrap_or_default();
            OnBehalfOf::EnterpriseManaged(IdentityProvider {
                issuer: idp.issuer,
                token_url: idp.token_url,
                client_id: idp.client_id,
            })
        }
    }
}

/// The proto grant, audience and identity provider of `on_behalf_of`.
fn proto_on_behalf_of(
    on_behalf_of: &OnBehalfOf,
) -> (pb::OnBehalfOf, String, Option<pb::IdentityProvider>) {
    match on_behalf_of {
        OnBehalfOf::Service => (pb::OnBehalfOf::Unspecified, String::new(), None),
        OnBehalfOf::TokenExchange { audience } => (
            pb::OnBehalfOf::TokenExchange,
            audience.clone().unwrap_or_default(),
            None,
        ),
        OnBehalfOf::EnterpriseManaged(idp) => (
            pb::OnBehalfOf::EnterpriseManaged,
            String::new(),
            Some(pb::IdentityProvider {
                issuer: idp.issuer.clone(),
                token_url: idp.token_url.clone(),
                client_id: idp.client_id.clone(),
            }),
        ),
    }
}
