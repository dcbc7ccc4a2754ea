//! Turning caller input into stored configuration: every check a multi-tenant
//! gateway must make before saving how to reach a server — the outbound
//! address policy, the stdio allow-list, valid header names, and secrets that
//! are present where the method needs them.

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};
use switchboard_server::FieldViolation;

use super::{
    address_policy::AddressPolicy,
    grpc::GrpcLimits,
    input::AuthInput,
    integration::{AuthConfig, Secrets},
    oauth_input::{
        ClientCredentialsSecrets, authorization_code, check_code_config, client_credentials,
    },
    openapi::OpenApiLimits,
    transport::{Grpc, Stdio, Transport, TransportInput},
};

pub use super::stdio_policy::StdioAllowList;

/// Headers a custom auth header may not replace: they belong to HTTP framing
/// or to the MCP transport itself.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "accept",
    "proxy-authorization",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Checks applied to configuration before it is stored or dialled.
#[derive(Debug, Clone)]
pub struct ConfigPolicy {
    /// Outbound address policy for URLs.
    pub addresses: AddressPolicy,
    /// Allowed stdio programs.
    pub stdio: StdioAllowList,
    /// The bounds of OpenAPI integrations' documents.
    pub openapi: OpenApiLimits,
    /// The bounds of gRPC integrations' descriptors and answers.
    pub grpc: GrpcLimits,
}

/// Stored configuration resolved from input.
#[derive(Debug)]
pub struct Resolved {
    /// Transport.
    pub transport: Transport,
    /// Auth method.
    pub auth: AuthConfig,
    /// Credentials.
    pub secrets: Secrets,
}

impl ConfigPolicy {
    /// Checks `transport` and `auth` (fields named under `transport_field` and
    /// `auth_field`) and resolves them, taking secrets left out from
    /// `previous` where the method is unchanged.
    pub async fn resolve(
        &self,
        transport_field: &str,
        transport: TransportInput,
        auth_field: &str,
        auth: AuthInput,
        previous: Option<(&Transport, &AuthConfig, &Secrets)>,
    ) -> Result<Resolved, Vec<FieldViolation>> {
        let mut violations = Vec::new();
        let mut secrets = Secrets::default();
        let transport = self
            .resolve_transport(
                transport_field,
                transport,
                previous,
                &mut secrets,
                &mut violations,
            )
            .await;
        let auth = self
            .resolve_auth(auth_field, auth, previous, &mut secrets, &mut violations)
            .await;
        if violations.is_empty() {
            Ok(Resolved {
                transport,
                auth,
                secrets,
            })
        } else {
            Err(violations)
        }
    }

    async fn resolve_transport(
        &self,
        field: &str,
        input: TransportInput,
        previous: Option<(&Transport, &AuthConfig, &Secrets)>,
        secrets: &mut Secrets,
        violations: &mut Vec<FieldViolation>,
    ) -> Transport {
        let TransportInput {
            mut transport,
            secret_env,
            client_key,
        } = input;
        let prefix = format!("{field}.{}", transport.field_name());
        if let Some(url) = transport.url() {
            let url_field = format!("{prefix}.{}", transport.url_field_name());
            if url.trim().is_empty() {
                violations.push(FieldViolation::new(url_field, "is required"));
            } else if let Err(error) = self.addresses.check_url_resolved(url).await {
                violations.push(FieldViolation::new(url_field, error.to_string()));
            }
        }
        if let Transport::Stdio(Stdio {
            command,
            args,
            env,
            secret_env_names,
        }) = &mut transport
        {
            check_stdio(
                &prefix,
                command,
                args,
                env,
                |c| self.stdio.allows(c),
                violations,
            );
            let previous_secrets = match previous {
                Some((Transport::Stdio(_), _, stored)) => Some(stored),
                _ => None,
            };
            *secret_env_names = stdio_secrets(
                &prefix,
                secret_env,
                env,
                previous_secrets,
                secrets,
                violations,
            );
        }
        if let Transport::Grpc(grpc) = &mut transport {
            grpc_client_key(&prefix, grpc, client_key, previous, secrets, violations);
        }
        transport
    }

    async fn resolve_auth(
        &self,
        field: &str,
        input: AuthInput,
        previous: Option<(&Transport, &AuthConfig, &Secrets)>,
        secrets: &mut Secrets,
        violations: &mut Vec<FieldViolation>,
    ) -> AuthConfig {
        // A secret left out keeps the stored one only when the method is unchanged.
        let same = previous.is_some_and(|(_, old, _)| same_method(old, &input));
        let kept = |name: &str| -> Option<SecretString> {
            previous
                .filter(|_| same)
                .and_then(|(_, _, stored)| stored.get(name).cloned())
        };
        match input {
            AuthInput::None => AuthConfig::None,
            AuthInput::BearerToken { token } => {
                require_header_value(
                    &format!("{field}.bearer_token.token"),
                    non_empty(token).or_else(|| kept(Secrets::BEARER_TOKEN)),
                    Secrets::BEARER_TOKEN,
                    secrets,
                    violations,
                );
                AuthConfig::BearerToken
            }
            AuthInput::Header { header_name, value } => {
                let value = non_empty(value).or_else(|| kept(Secrets::HEADER_VALUE));
                header_auth(field, header_name, value, secrets, violations)
            }
            AuthInput::Query {
                parameter_name,
                value,
            } => {
                let value = non_empty(value).or_else(|| kept(Secrets::QUERY_VALUE));
                query_auth(field, parameter_name, value, secrets, violations)
            }
            input @ AuthInput::OAuthClientCredentials { .. } => {
                let prefix = format!("{field}.oauth_client_credentials");
                let stored = ClientCredentialsSecrets {
                    client_secret: kept(Secrets::OAUTH_CLIENT_SECRET),
                    private_key: kept(Secrets::OAUTH_CLIENT_PRIVATE_KEY),
                    dpop_key: kept(Secrets::OAUTH_DPOP_KEY),
                };
                client_credentials(&prefix, input, stored, &self.addresses, secrets, violations)
                    .await
            }
            AuthInput::OAuthAuthorizationCode {
                config,
                client_secret,
            } => {
                let client_secret =
                    non_empty(client_secret).or_else(|| kept(Secrets::OAUTH_CLIENT_SECRET));
                let prefix = format!("{field}.oauth_authorization_code");
                violations.extend(check_code_config(&prefix, &config, &self.addresses));
                authorization_code(&prefix, config, client_secret, secrets, violations)
            }
        }
    }
}

/// Whether `new` keeps `old`'s auth method (a header auth, its header), so
/// that secrets left out keep their stored values.
fn same_method(old: &AuthConfig, new: &AuthInput) -> bool {
    match (old, new) {
        (AuthConfig::BearerToken, AuthInput::BearerToken { .. })
        | (AuthConfig::OAuthClientCredentials { .. }, AuthInput::OAuthClientCredentials { .. })
        | (AuthConfig::OAuthAuthorizationCode(_), AuthInput::OAuthAuthorizationCode { .. }) => true,
        (AuthConfig::Header { header_name: old }, AuthInput::Header { header_name, .. }) => {
            old.eq_ignore_ascii_case(header_name)
        }
        (
            AuthConfig::Query {
                parameter_name: old,
            },
            AuthInput::Query { parameter_name, .. },
        ) => old == parameter_name,
        _ => false,
    }
}

/// Header auth: a valid, unreserved header name and its value.
fn header_auth(
    field: &str,
    header_name: String,
    value: Option<SecretString>,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) -> AuthConfig {
    let name_field = format!("{field}.header.header_name");
    match http::HeaderName::from_bytes(header_name.as_bytes()) {
        Ok(name) if RESERVED_HEADERS.contains(&name.as_str()) => violations.push(
            FieldViolation::new(name_field, "is reserved by HTTP or the MCP transport"),
        ),
        Ok(_) => {}
        Err(_) => violations.push(FieldViolation::new(
            name_field,
            "must be a valid HTTP header name",
        )),
    }
    require_header_value(
        &format!("{field}.header.value"),
        value,
        Secrets::HEADER_VALUE,
        secrets,
        violations,
    );
    AuthConfig::Header {
        header_name: header_name.to_ascii_lowercase(),
    }
}

/// Query auth: a parameter name of URL-safe characters (RFC 3986's
/// unreserved ones, so it needs no escaping) and its value.
fn query_auth(
    field: &str,
    parameter_name: String,
    value: Option<SecretString>,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) -> AuthConfig {
    let unreserved = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
    if parameter_name.is_empty()
        || parameter_name.len() > 64
        || !parameter_name.chars().all(unreserved)
    {
        violations.push(FieldViolation::new(
            format!("{field}.query.parameter_name"),
            "must be 1 to 64 characters of A-Z a-z 0-9 - . _ ~",
        ));
    }
    match value {
        Some(value) if !value.expose_secret().is_empty() => {
            secrets.insert(Secrets::QUERY_VALUE, value);
        }
        _ => violations.push(FieldViolation::new(
            format!("{field}.query.value"),
            "is required",
        )),
    }
    AuthConfig::Query { parameter_name }
}

/// Refuses a stdio command that is missing or not allowed, and NUL
/// characters anywhere in the command line or environment.
fn check_stdio(
    prefix: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    allowed: impl Fn(&str) -> bool,
    violations: &mut Vec<FieldViolation>,
) {
    if command.trim().is_empty() {
        violations.push(FieldViolation::new(
            format!("{prefix}.command"),
            "is required",
        ));
    } else if !allowed(command) {
        violations.push(FieldViolation::new(
            format!("{prefix}.command"),
            "is not on the operator's stdio allow-list",
        ));
    }
    if command.contains('\0') || args.iter().any(|a| a.contains('\0')) {
        violations.push(FieldViolation::new(
            format!("{prefix}.args"),
            "must not contain NUL characters",
        ));
    }
    for (name, value) in env {
        check_env_name(&format!("{prefix}.env[{name}]"), name, violations);
        if value.contains('\0') {
            violations.push(FieldViolation::new(
                format!("{prefix}.env[{name}]"),
                "must not contain NUL characters",
            ));
        }
    }
}

/// A gRPC target's client key, sealed into `secrets`: one left out keeps
/// the stored one. The certificate and the key go together.
fn grpc_client_key(
    prefix: &str,
    grpc: &mut Grpc,
    client_key: Option<SecretString>,
    previous: Option<(&Transport, &AuthConfig, &Secrets)>,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) {
    let stored = match previous {
        Some((Transport::Grpc(_), _, stored)) => stored.get(Secrets::GRPC_CLIENT_KEY),
        _ => None,
    };
    let key = client_key
        .filter(|k| !k.expose_secret().is_empty())
        .or_else(|| stored.cloned());
    grpc.client_key_set = key.is_some();
    if grpc.client_certificate.is_empty() == grpc.client_key_set {
        violations.push(FieldViolation::new(
            format!("{prefix}.client_certificate"),
            "and client_key go together (mutual TLS needs both)",
        ));
    }
    if let Some(key) = key {
        secrets.insert(Secrets::GRPC_CLIENT_KEY, key);
    }
}

/// The secret environment of a stdio server, sealed into `secrets`: a value
/// left out keeps the stored one. Returns the variables' names.
fn stdio_secrets(
    prefix: &str,
    secret_env: BTreeMap<String, SecretString>,
    env: &BTreeMap<String, String>,
    previous_secrets: Option<&Secrets>,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) -> Vec<String> {
    let mut secret_env_names = Vec::new();
    for (name, value) in secret_env {
        let var_field = format!("{prefix}.secret_env[{name}]");
        check_env_name(&var_field, &name, violations);
        if env.contains_key(&name) {
            violations.push(FieldViolation::new(
                &var_field,
                "is also a non-secret variable",
            ));
        }
        let key = format!("{}{name}", Secrets::ENV_PREFIX);
        let value = if value.expose_secret().is_empty() {
            previous_secrets.and_then(|s| s.get(&key)).cloned()
        } else {
            Some(value)
        };
        match value {
            Some(value) if !value.expose_secret().contains('\0') => {
                secrets.insert(key, value);
                secret_env_names.push(name);
            }
            Some(_) => violations.push(FieldViolation::new(
                var_field,
                "must not contain NUL characters",
            )),
            None => violations.push(FieldViolation::new(var_field, "needs a value")),
        }
    }
    secret_env_names
}

fn non_empty(secret: Option<SecretString>) -> Option<SecretString> {
    secret.filter(|s| !s.expose_secret().is_empty())
}

fn require_header_value(
    field: &str,
    value: Option<SecretString>,
    name: &str,
    secrets: &mut Secrets,
    violations: &mut Vec<FieldViolation>,
) {
    match value {
        Some(value) if http::HeaderValue::from_str(value.expose_secret()).is_ok() => {
            secrets.insert(name, value);
        }
        Some(_) => violations.push(FieldViolation::new(
            field,
            "must be a valid HTTP header value (visible ASCII, no line breaks)",
        )),
        None => violations.push(FieldViolation::new(field, "is required")),
    }
}

fn check_env_name(field: &str, name: &str, violations: &mut Vec<FieldViolation>) {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        violations.push(FieldViolation::new(
            field,
            "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
        ));
    }
}
