//! Checks on an integration's configuration that bind credentials to where
//! they go: no credentials in URLs, stdio command lines pinned by the
//! operator's allow-list, and stored secrets that follow no change of
//! destination.
//!
//! These run in addition to [`ConfigPolicy::resolve`], before anything is
//! stored.
//!
//! [`ConfigPolicy::resolve`]: super::resolve::ConfigPolicy::resolve

use std::collections::BTreeSet;

use secrecy::ExposeSecret as _;
use switchboard_server::FieldViolation;
use url::Url;

use super::{
    grpc,
    input::AuthInput,
    integration::{AuthConfig, OnBehalfOf, Secrets},
    openapi::{ApiDocument, OpenApiLimits},
    resolve::ConfigPolicy,
    transport::{Grpc, OpenApi, Stdio, Transport, TransportInput},
    url_secrets,
};

/// Violations of `transport` and `auth` (fields named under
/// `transport_field` and `auth_field`) that [`ConfigPolicy::resolve`] does
/// not look for: credentials in a URL, and stdio arguments or environment
/// names the allow-list does not permit. (A program missing from the
/// allow-list is reported by `resolve`.)
///
/// [`ConfigPolicy::resolve`]: super::resolve::ConfigPolicy::resolve
pub fn check(
    policy: &ConfigPolicy,
    transport_field: &str,
    transport: &TransportInput,
    auth_field: &str,
    auth: &AuthInput,
) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    let mut check_url = |field: String, url: &str| {
        if let Some(why) = Url::parse(url)
            .ok()
            .and_then(|u| url_secrets::credentials_in(&u))
        {
            violations.push(FieldViolation::new(field, why));
        }
    };
    if let Some(url) = transport.transport.url() {
        check_url(
            format!("{transport_field}.{}.url", transport.transport.field_name()),
            url,
        );
    }
    if let AuthInput::OAuthClientCredentials {
        token_url,
        on_behalf_of,
        ..
    } = auth
    {
        check_url(
            format!("{auth_field}.oauth_client_credentials.token_url"),
            token_url,
        );
        if let OnBehalfOf::EnterpriseManaged(idp) = on_behalf_of {
            for (field, url) in [("issuer", &idp.issuer), ("token_url", &idp.token_url)] {
                check_url(
                    format!("{auth_field}.oauth_client_credentials.identity_provider.{field}"),
                    url,
                );
            }
        }
    }
    violations.extend(stdio_violations(policy, transport_field, transport));
    violations.extend(auth_for_kind(auth_field, &transport.transport, auth));
    if let Transport::OpenApi(api) = &transport.transport {
        violations.extend(openapi_violations(transport_field, api, &policy.openapi));
    }
    if let Transport::Grpc(grpc) = &transport.transport {
        violations.extend(grpc_violations(transport_field, grpc, transport, policy));
    }
    violations
}

/// The stdio arguments and environment names the allow-list does not
/// permit (a program missing from it is reported by `resolve`).
fn stdio_violations(
    policy: &ConfigPolicy,
    transport_field: &str,
    transport: &TransportInput,
) -> Vec<FieldViolation> {
    let Transport::Stdio(Stdio {
        command, args, env, ..
    }) = &transport.transport
    else {
        return Vec::new();
    };
    policy
        .stdio
        .check(
            command,
            args,
            env.keys().map(String::as_str),
            transport.secret_env.keys().map(String::as_str),
        )
        .into_iter()
        .filter(|r| r.field != "command")
        .map(|r| FieldViolation::new(format!("{transport_field}.stdio.{}", r.field), r.reason))
        .collect()
}

/// Auth methods a kind of integration does not take: an API key in the
/// query is for OpenAPI integrations only (a URL is written to logs along
/// its way; MCP servers and gRPC services take keys in headers), and a
/// team's own service says nothing of its authorization server, so the
/// authorization code flow names it.
fn auth_for_kind(auth_field: &str, transport: &Transport, auth: &AuthInput) -> Vec<FieldViolation> {
    match auth {
        AuthInput::Query { .. } if !matches!(transport, Transport::OpenApi(_)) => {
            vec![FieldViolation::new(
                format!("{auth_field}.query"),
                "is for OpenAPI integrations only (MCP servers and gRPC services take their \
                 keys in headers, which are not written to logs along the way)",
            )]
        }
        AuthInput::OAuthAuthorizationCode { config, .. }
            if transport.is_service() && config.issuer.is_none() =>
        {
            vec![FieldViolation::new(
                format!("{auth_field}.oauth_authorization_code.issuer"),
                "is required for OpenAPI and gRPC integrations: their authorization server is \
                 named here, never learnt from the service",
            )]
        }
        _ => Vec::new(),
    }
}

/// What is wrong with a gRPC integration: its transport's settings, and
/// a client key that is not a PEM private key.
fn grpc_violations(
    transport_field: &str,
    grpc: &Grpc,
    transport: &TransportInput,
    policy: &ConfigPolicy,
) -> Vec<FieldViolation> {
    let mut violations = grpc::check::violations(transport_field, grpc, &policy.grpc);
    if let Some(key) = transport.client_key.as_ref().map(|k| k.expose_secret())
        && !key.is_empty()
        && let Some(why) = grpc::check::client_key_violation(key)
    {
        violations.push(FieldViolation::new(
            format!("{transport_field}.grpc.client_key"),
            why,
        ));
    }
    violations
}

/// What is wrong with an OpenAPI integration: a document that cannot be
/// read within its bounds, a base URL the document does not list among its
/// servers (credentials go where the admin pinned them, and the admin pins
/// one the document names), an operation chosen that it does not offer.
fn openapi_violations(
    transport_field: &str,
    api: &OpenApi,
    limits: &OpenApiLimits,
) -> Vec<FieldViolation> {
    let at = |name: &str| format!("{transport_field}.openapi.{name}");
    let document = match ApiDocument::parse(&api.document, limits) {
        Ok(document) => document,
        Err(error) => return vec![FieldViolation::new(at("document"), error.to_string())],
    };
    let mut violations = Vec::new();
    let base = api.base_url.trim_end_matches('/');
    if !(base.starts_with("https://") || base.starts_with("http://")) {
        violations.push(FieldViolation::new(
            at("base_url"),
            "must be an http or https URL",
        ));
    } else if !document.servers.is_empty() && !document.servers.iter().any(|s| s == base) {
        violations.push(FieldViolation::new(
            at("base_url"),
            format!(
                "is not one of the document's servers ({})",
                document.servers.join(", ")
            ),
        ));
    }
    for (i, operation) in api.operations.iter().enumerate() {
        if document.operation(operation).is_none() {
            violations.push(FieldViolation::new(
                format!("{transport_field}.openapi.operations[{i}]"),
                "is not an operation the document offers",
            ));
        }
    }
    violations
}

/// Where an integration's credentials are sent: the origin of its MCP
/// endpoint or its whole stdio command line and environment, and the origin
/// of its OAuth token endpoint. A credential is bound to the destination it
/// was entered for.
pub fn destinations(transport: &Transport, auth: &AuthConfig) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    out.insert(transport.destination(origin));
    if let AuthConfig::OAuthClientCredentials {
        token_url,
        issuer,
        on_behalf_of,
        ..
    } = auth
    {
        // The caller's ID token goes to the identity provider: moving it
        // is a new destination too.
        if let OnBehalfOf::EnterpriseManaged(idp) = on_behalf_of {
            out.insert(format!("identity provider {}", origin(&idp.token_url)));
            out.insert(format!("identity provider issuer {}", origin(&idp.issuer)));
        }
        // Without a token URL, the token endpoint is the one the pinned
        // issuer's own metadata names: the issuer is the destination.
        if !token_url.is_empty() {
            out.insert(format!("token {}", origin(token_url)));
        }
        if let Some(issuer) = issuer {
            out.insert(format!("issuer {}", origin(issuer)));
        }
    }
    out
}

/// A URL's origin (scheme, host, port), or the URL itself when it has none.
fn origin(url: &str) -> String {
    match Url::parse(url).map(|u| u.origin()) {
        Ok(origin) if origin.is_tuple() => origin.ascii_serialization(),
        _ => url.to_owned(),
    }
}

/// The secrets `transport` and `auth` carry values for (by their names in
/// [`Secrets`]); secrets left empty are not entered.
pub fn entered_secrets(transport: &TransportInput, auth: &AuthInput) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut note = |name: String, value: Option<&secrecy::SecretString>| {
        if value.is_some_and(|v| !v.expose_secret().is_empty()) {
            out.insert(name);
        }
    };
    for (name, value) in &transport.secret_env {
        note(format!("{}{name}", Secrets::ENV_PREFIX), Some(value));
    }
    match auth {
        AuthInput::None => {}
        AuthInput::BearerToken { token } => note(Secrets::BEARER_TOKEN.into(), token.as_ref()),
        AuthInput::Header { value, .. } => note(Secrets::HEADER_VALUE.into(), value.as_ref()),
        AuthInput::Query { value, .. } => note(Secrets::QUERY_VALUE.into(), value.as_ref()),
        AuthInput::OAuthClientCredentials {
            client_secret,
            private_key,
            ..
        } => {
            note(Secrets::OAUTH_CLIENT_SECRET.into(), client_secret.as_ref());
            note(
                Secrets::OAUTH_CLIENT_PRIVATE_KEY.into(),
                private_key.as_ref(),
            );
        }
        AuthInput::OAuthAuthorizationCode { client_secret, .. } => {
            note(Secrets::OAUTH_CLIENT_SECRET.into(), client_secret.as_ref());
        }
    }
    out
}

/// One violation per stored secret that `resolved` would carry over to a
/// new destination without the admin entering it again.
pub fn carried_to_new_destination(
    transport_field: &str,
    auth_field: &str,
    before: BTreeSet<String>,
    after: BTreeSet<String>,
    kept: &Secrets,
    entered: &BTreeSet<String>,
) -> Vec<FieldViolation> {
    if before == after {
        return Vec::new();
    }
    kept.names()
        .filter(|name| !entered.contains(*name))
        // A DPoP key is never sent anywhere (only proofs it signs are, and
        // its public half): it cannot be entered, and goes nowhere new.
        .filter(|name| *name != Secrets::OAUTH_DPOP_KEY)
        .map(|name| {
            let field = match name {
                Secrets::BEARER_TOKEN => format!("{auth_field}.bearer_token.token"),
                Secrets::HEADER_VALUE => format!("{auth_field}.header.value"),
                Secrets::QUERY_VALUE => format!("{auth_field}.query.value"),
                Secrets::OAUTH_CLIENT_SECRET => {
                    format!("{auth_field}.oauth_client_credentials.client_secret")
                }
                Secrets::OAUTH_CLIENT_PRIVATE_KEY => {
                    format!("{auth_field}.oauth_client_credentials.private_key")
                }
                other => match other.strip_prefix(Secrets::ENV_PREFIX) {
                    Some(var) => format!("{transport_field}.stdio.secret_env[{var}]"),
                    None => format!("{auth_field}.{other}"),
                },
            };
            FieldViolation::new(
                field,
                "must be entered again: the integration now sends its credentials to another \
                 destination, and a stored secret only goes where it was entered for",
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{integration::ClientAuth, transport::StreamableHttp};

    fn http(url: &str) -> Transport {
        Transport::StreamableHttp(StreamableHttp { url: url.into() })
    }

    #[test]
    fn the_destination_is_the_origin_of_each_url() {
        let none = AuthConfig::None;
        assert_eq!(
            destinations(&http("https://a.example/mcp"), &none),
            destinations(&http("https://a.example/other?x=1"), &none)
        );
        for moved in [
            "https://b.example/mcp",
            "http://a.example/mcp",
            "https://a.example:8443/mcp",
        ] {
            assert_ne!(
                destinations(&http("https://a.example/mcp"), &none),
                destinations(&http(moved), &none),
                "{moved}"
            );
        }
        let oauth = |token_url: &str| AuthConfig::OAuthClientCredentials {
            token_url: token_url.into(),
            client_id: "c".into(),
            scopes: vec![],
            client_auth: ClientAuth::default(),
            issuer: None,
            on_behalf_of: OnBehalfOf::Service,
        };
        assert_ne!(
            destinations(
                &http("https://a.example/mcp"),
                &oauth("https://idp.example/t")
            ),
            destinations(
                &http("https://a.example/mcp"),
                &oauth("https://evil.example/t")
            )
        );
    }
}
