//! Authentication of Switchboard callers: JWT bearer tokens carrying the
//! organization, the user and their roles.
//!
//! [`Authenticator`] verifies tokens (HS256 with a shared secret, RS256 with
//! a public key, or the keys an identity provider publishes at a JWKS URL,
//! fetched, cached and refreshed as it rotates them), the server chassis enforces it on every gRPC call except
//! health and reflection, and [`TokenMinter`] issues tokens for tests and local use.

// No function past 60 lines (clippy.toml) outside unit tests; `make clippy`
// enforces it with the other lints.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod cache;
mod jwks;
mod token;
mod verify;

pub use jsonwebtoken::{Algorithm, EncodingKey};
pub use token::{
    AuthError, ClaimLimits, ClaimNames, Claims, DEFAULT_AUDIENCE, JwksConfig, JwtKey, TokenMinter,
    VerifierConfig,
};
pub use verify::Authenticator;

use std::sync::Arc;

use secrecy::SecretString;

/// The role that may change an organization's configuration.
pub const ADMIN_ROLE: &str = "admin";

/// Who is calling: the verified content of the bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The caller's organization; every object is scoped to it.
    pub org_id: String,
    /// The caller's user id.
    pub user_id: String,
    /// The caller's roles within the organization.
    pub roles: Vec<String>,
    /// The caller's groups (the identity provider's), for policies.
    pub groups: Vec<String>,
    /// The caller's teams, for policies.
    pub teams: Vec<String>,
    /// The calling service, for policies that tell a service's calls from a
    /// person's: the SPIFFE ID or subject of the client certificate when the
    /// call came over mutual TLS, else the token's `azp`, else its
    /// `client_id`; empty when none names one.
    pub service: String,
}

impl Principal {
    /// A principal with `roles` and no groups, teams or service.
    pub fn new(org_id: impl Into<String>, user_id: impl Into<String>, roles: Vec<String>) -> Self {
        Self {
            org_id: org_id.into(),
            user_id: user_id.into(),
            roles,
            groups: Vec::new(),
            teams: Vec::new(),
            service: String::new(),
        }
    }

    /// Whether the principal holds `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    /// Whether the principal is an organization admin.
    pub fn is_admin(&self) -> bool {
        self.has_role(ADMIN_ROLE)
    }
}

/// The caller's raw bearer token, kept so that a service can call another one
/// on the caller's behalf. Never logged.
#[derive(Debug, Clone)]
pub struct BearerToken(pub Arc<SecretString>);

/// Returns the caller's bearer token that the server's auth layer attached to a request.
pub fn bearer_token<T>(request: &tonic::Request<T>) -> Option<BearerToken> {
    request.extensions().get::<BearerToken>().cloned()
}
