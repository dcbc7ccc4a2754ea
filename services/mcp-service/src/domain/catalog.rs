//! The predefined catalog: known MCP servers (and a team's own services: an
//! OpenAPI entry names its document by URL, fetched when an integration is
//! made from it) an admin can add by id plus the secrets they need.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use secrecy::SecretString;
use serde::Deserialize;
use switchboard_server::FieldViolation;

use super::{
    input::AuthInput,
    integration::{ClientAuth, OnBehalfOf},
    transport::{Transport, TransportInput},
};

/// The catalog shipped with the service.
pub const BUILTIN_CATALOG: &str = include_str!("../../catalog/predefined.toml");

/// The catalog of predefined integrations.
#[derive(Debug, Clone, Deserialize)]
pub struct Catalog {
    /// Entries, in file order.
    pub integrations: Vec<CatalogEntry>,
}

/// One known MCP server.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogEntry {
    /// Stable id.
    pub id: String,
    /// Human-readable name.
    pub display_name: String,
    /// What it offers.
    #[serde(default)]
    pub description: String,
    /// Suggested slug.
    pub default_slug: String,
    /// How it is reached.
    pub transport: CatalogTransport,
    /// How it authenticates.
    pub auth: CatalogAuth,
    /// The secrets an admin supplies.
    #[serde(default)]
    pub secrets: Vec<CatalogSecret>,
}

/// A transport of a catalog entry: the integration's [`Transport`], its
/// secret environment naming the catalog secrets that give the values.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogTransport {
    /// How the server is reached.
    #[serde(flatten)]
    pub transport: Transport,
    /// Environment variable → the secret whose value it takes.
    #[serde(default)]
    pub secret_env: BTreeMap<String, String>,
}

impl CatalogTransport {
    /// The transport as callers are shown it: the secret environment by
    /// variable name.
    pub fn shown(&self) -> Transport {
        self.transport
            .clone()
            .with_secret_env_names(self.secret_env.keys().cloned().collect())
    }
}

/// An authentication method of a catalog entry, naming its secrets.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CatalogAuth {
    /// No credentials.
    None,
    /// A bearer token from the named secret.
    BearerToken {
        /// The secret holding the token.
        secret: String,
    },
    /// A header carrying the named secret.
    Header {
        /// The header name.
        header_name: String,
        /// The secret holding the value.
        secret: String,
    },
    /// An API key in a query parameter (an OpenAPI entry's).
    Query {
        /// The parameter name.
        parameter_name: String,
        /// The secret holding the key.
        secret: String,
    },
    /// OAuth client credentials.
    OauthClientCredentials {
        /// Token endpoint.
        token_url: String,
        /// The secret holding the client id.
        client_id_secret: String,
        /// The secret holding the client secret.
        client_secret: String,
        /// Requested scopes.
        #[serde(default)]
        scopes: Vec<String>,
    },
}

/// A secret a catalog entry needs.
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogSecret {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// Whether creation fails without it.
    #[serde(default)]
    pub required: bool,
}

impl Catalog {
    /// Parses and checks a catalog file.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let catalog: Self = toml::from_str(text).context("invalid catalog file")?;
        let mut ids = std::collections::HashSet::new();
        for entry in &catalog.integrations {
            if !ids.insert(entry.id.as_str()) {
                bail!("catalog entry `{}` appears twice", entry.id);
            }
            for name in entry.referenced_secrets() {
                if !entry.secrets.iter().any(|s| s.name == name) {
                    bail!(
                        "catalog entry `{}` uses undeclared secret `{name}`",
                        entry.id
                    );
                }
            }
        }
        Ok(catalog)
    }

    /// The built-in catalog.
    pub fn builtin() -> Self {
        Self::parse(BUILTIN_CATALOG).expect("the built-in catalog is checked by a unit test")
    }

    /// The entry with `id`.
    pub fn get(&self, id: &str) -> Option<&CatalogEntry> {
        self.integrations.iter().find(|e| e.id == id)
    }
}

impl CatalogEntry {
    fn referenced_secrets(&self) -> Vec<&str> {
        let mut names: Vec<&str> = match &self.auth {
            CatalogAuth::None => vec![],
            CatalogAuth::BearerToken { secret }
            | CatalogAuth::Header { secret, .. }
            | CatalogAuth::Query { secret, .. } => vec![secret],
            CatalogAuth::OauthClientCredentials {
                client_id_secret,
                client_secret,
                ..
            } => vec![client_id_secret, client_secret],
        };
        names.extend(self.transport.secret_env.values().map(String::as_str));
        names
    }

    /// The transport and auth inputs of an integration made from this entry
    /// with `secrets`. Missing required secrets and unknown names are
    /// violations of `field`.
    pub fn materialize(
        &self,
        field: &str,
        secrets: &BTreeMap<String, SecretString>,
    ) -> Result<(TransportInput, AuthInput), Vec<FieldViolation>> {
        self.check_secrets(field, secrets)?;
        let secret = |name: &str| secrets.get(name).cloned();
        Ok((self.transport_input(&secret), self.auth_input(&secret)))
    }

    /// Refuses unknown secret names and missing required ones.
    fn check_secrets(
        &self,
        field: &str,
        secrets: &BTreeMap<String, SecretString>,
    ) -> Result<(), Vec<FieldViolation>> {
        let mut violations = Vec::new();
        for name in secrets.keys() {
            if !self.secrets.iter().any(|s| &s.name == name) {
                violations.push(FieldViolation::new(
                    format!("{field}[{name}]"),
                    format!("catalog entry `{}` has no secret `{name}`", self.id),
                ));
            }
        }
        for secret in self.secrets.iter().filter(|s| s.required) {
            if !secrets.contains_key(&secret.name) {
                violations.push(FieldViolation::new(
                    format!("{field}[{}]", secret.name),
                    "is required by this catalog entry",
                ));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    fn transport_input(&self, secret: &dyn Fn(&str) -> Option<SecretString>) -> TransportInput {
        let secret_env: BTreeMap<String, SecretString> = self
            .transport
            .secret_env
            .iter()
            .filter_map(|(var, name)| secret(name).map(|v| (var.clone(), v)))
            .collect();
        let transport = self
            .transport
            .transport
            .clone()
            .with_secret_env_names(secret_env.keys().cloned().collect());
        TransportInput {
            transport,
            secret_env,
            client_key: None,
        }
    }

    fn auth_input(&self, secret: &dyn Fn(&str) -> Option<SecretString>) -> AuthInput {
        match &self.auth {
            CatalogAuth::None => AuthInput::None,
            CatalogAuth::BearerToken { secret: name } => AuthInput::BearerToken {
                token: secret(name),
            },
            CatalogAuth::Header {
                header_name,
                secret: name,
            } => AuthInput::Header {
                header_name: header_name.clone(),
                value: secret(name),
            },
            CatalogAuth::Query {
                parameter_name,
                secret: name,
            } => AuthInput::Query {
                parameter_name: parameter_name.clone(),
                value: secret(name),
            },
            CatalogAuth::OauthClientCredentials {
                token_url,
                client_id_secret,
                client_secret,
                scopes,
            } => AuthInput::OAuthClientCredentials {
                token_url: token_url.clone(),
                client_id: secret(client_id_secret)
                    .map(|s| secrecy::ExposeSecret::expose_secret(&s).to_owned())
                    .unwrap_or_default(),
                client_secret: secret(client_secret),
                scopes: scopes.clone(),
                client_auth: ClientAuth::default(),
                private_key: None,
                issuer: None,
                on_behalf_of: OnBehalfOf::Service,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalog_parses_and_declares_every_secret_it_uses() {
        let catalog = Catalog::parse(BUILTIN_CATALOG).expect("valid");
        assert!(catalog.get("github").is_some());
    }

    #[test]
    fn a_stdio_entry_gives_its_secret_environment_by_the_names_supplied() {
        use crate::domain::transport::Stdio;

        let catalog = Catalog::builtin();
        let example = catalog
            .integrations
            .iter()
            .find(|e| e.transport.secret_env.contains_key("EXAMPLE_API_KEY"))
            .expect("the example stdio entry");
        let Transport::Stdio(shown) = example.transport.shown() else {
            panic!("a stdio entry");
        };
        assert_eq!(shown.command, "example-mcp-server");
        assert_eq!(shown.args, ["--transport", "stdio"]);
        assert_eq!(shown.secret_env_names, ["EXAMPLE_API_KEY"]);

        let secrets = BTreeMap::from([("api_key".to_owned(), SecretString::from("k"))]);
        let (input, _) = example.materialize("s", &secrets).expect("valid");
        let Transport::Stdio(Stdio {
            secret_env_names, ..
        }) = &input.transport
        else {
            panic!("a stdio entry");
        };
        assert_eq!(secret_env_names, &["EXAMPLE_API_KEY"]);
        assert_eq!(
            input.secret_env.keys().collect::<Vec<_>>(),
            ["EXAMPLE_API_KEY"]
        );
    }

    #[test]
    fn a_required_secret_must_be_supplied_and_unknown_ones_are_refused() {
        let catalog = Catalog::builtin();
        let github = catalog.get("github").expect("present");
        let violations = github
            .materialize("predefined.secrets", &BTreeMap::new())
            .expect_err("the token is required");
        assert_eq!(violations[0].field, "predefined.secrets[token]");

        let mut secrets = BTreeMap::new();
        secrets.insert("token".to_owned(), SecretString::from("t"));
        secrets.insert("nope".to_owned(), SecretString::from("x"));
        let violations = github
            .materialize("predefined.secrets", &secrets)
            .expect_err("unknown secret");
        assert_eq!(violations[0].field, "predefined.secrets[nope]");
    }

    #[test]
    fn a_catalog_using_an_undeclared_secret_is_refused() {
        let text = r#"
            [[integrations]]
            id = "x"
            display_name = "X"
            default_slug = "x"
            transport = { type = "streamable_http", url = "https://x.example/mcp" }
            auth = { type = "bearer_token", secret = "token" }
        "#;
        assert!(Catalog::parse(text).is_err());
    }
}
