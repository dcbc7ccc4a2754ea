//! How an integration's MCP server is reached: one enum with a variant per
//! transport, each holding what that transport needs. Code that depends on
//! the transport asks this type (the URL it dials, whether a session is a
//! process of its own, where credentials go) rather than matching on it, so
//! a new transport is a variant here and an arm in each method below.

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// How the MCP server is reached. Secret environment values live in
/// [`Secrets`]; only their names are here.
///
/// Stored as JSON with the transport's name in `type`.
///
/// [`Secrets`]: super::integration::Secrets
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Transport {
    /// Streamable HTTP.
    StreamableHttp(StreamableHttp),
    /// A child process speaking MCP on stdin/stdout.
    Stdio(Stdio),
    /// An HTTP API described by an OpenAPI document, each operation a
    /// tool.
    #[serde(rename = "openapi")]
    OpenApi(OpenApi),
    /// A gRPC service, each unary and server-streaming method a tool.
    Grpc(Grpc),
}

/// A gRPC service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grpc {
    /// Where calls go: `http://host:port` or `https://host:port`.
    pub target: String,
    /// The encoded `FileDescriptorSet`; empty: asked of the server's
    /// reflection.
    #[serde(default, with = "base64_bytes")]
    pub descriptor_set: Vec<u8>,
    /// The methods offered (`pkg.Service/Method` or `pkg.Service`); empty
    /// for all.
    #[serde(default)]
    pub methods: Vec<String>,
    /// A PEM certificate authority trusted for this target.
    #[serde(default)]
    pub ca_certificate: String,
    /// A PEM client certificate for mutual TLS.
    #[serde(default)]
    pub client_certificate: String,
    /// Whether the client certificate's key is stored (in the
    /// integration's secrets, never here).
    #[serde(default)]
    pub client_key_set: bool,
}

/// Bytes stored as base64 text in the transport's JSON.
mod base64_bytes {
    use base64::{Engine as _, engine::general_purpose::STANDARD};
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// An HTTP API described by an OpenAPI document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenApi {
    /// Where calls go: pinned by the admin, one of the document's servers
    /// when it lists absolute ones.
    pub base_url: String,
    /// The document, as JSON or YAML text (empty in a catalog entry that
    /// names `document_url`).
    #[serde(default)]
    pub document: String,
    /// Where the document was fetched from, when it was given by URL: it
    /// is fetched again whenever the transport is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_url: Option<String>,
    /// The operations offered, by tool name; empty for all.
    #[serde(default)]
    pub operations: Vec<String>,
}

/// A streamable HTTP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamableHttp {
    /// The MCP endpoint.
    pub url: String,
}

/// A stdio server: a child process the operator's allow-list permits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stdio {
    /// The allow-listed program.
    pub command: String,
    /// Its argv after the program.
    #[serde(default)]
    pub args: Vec<String>,
    /// Non-secret environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of the secret environment variables (left out where a catalog
    /// entry names them in its own `secret_env`).
    #[serde(default)]
    pub secret_env_names: Vec<String>,
}

impl Transport {
    /// The transport's name in requests (the field of the `Transport` oneof),
    /// under which its violations are reported.
    pub fn field_name(&self) -> &'static str {
        match self {
            Self::StreamableHttp(_) => "streamable_http",
            Self::Stdio(_) => "stdio",
            Self::OpenApi(_) => "openapi",
            Self::Grpc(_) => "grpc",
        }
    }

    /// The URL the transport dials, which the outbound address policy and
    /// the URL credential check apply to; `None` when it dials none.
    pub fn url(&self) -> Option<&str> {
        match self {
            Self::StreamableHttp(http) => Some(&http.url),
            Self::OpenApi(api) => Some(&api.base_url),
            Self::Grpc(grpc) => Some(&grpc.target),
            Self::Stdio(_) => None,
        }
    }

    /// The name of the field holding [`Self::url`], under which its
    /// violations are reported.
    pub fn url_field_name(&self) -> &'static str {
        match self {
            Self::OpenApi(_) => "base_url",
            Self::Grpc(_) => "target",
            Self::StreamableHttp(_) | Self::Stdio(_) => "url",
        }
    }

    /// Whether this is a team's own service (an HTTP API, a gRPC service)
    /// rather than an MCP server: it offers tools only, and says nothing of
    /// its authorization server (the integration pins it).
    pub fn is_service(&self) -> bool {
        matches!(self, Self::OpenApi(_) | Self::Grpc(_))
    }

    /// Whether each session is a process of its own on this host, which the
    /// session pool counts against a per-organization limit.
    pub fn runs_a_process(&self) -> bool {
        matches!(self, Self::Stdio(_))
    }

    /// The names of the secret environment variables the server is given
    /// (a stdio server's; none for other transports).
    pub fn secret_env_names(&self) -> &[String] {
        match self {
            Self::Stdio(stdio) => &stdio.secret_env_names,
            Self::StreamableHttp(_) | Self::OpenApi(_) | Self::Grpc(_) => &[],
        }
    }

    /// The transport with `names` as its secret environment's names (for a
    /// transport that passes its server an environment).
    #[must_use]
    pub fn with_secret_env_names(mut self, names: Vec<String>) -> Self {
        if let Self::Stdio(stdio) = &mut self {
            stdio.secret_env_names = names;
        }
        self
    }

    /// Where the transport sends credentials: a URL's origin, or a stdio
    /// server's whole command line and environment (any argument or
    /// variable may tell the program where to connect). `origin` gives a
    /// URL's origin.
    pub fn destination(&self, origin: impl Fn(&str) -> String) -> String {
        match self {
            Self::StreamableHttp(http) => format!("mcp {}", origin(&http.url)),
            Self::OpenApi(api) => format!("openapi {}", origin(&api.base_url)),
            Self::Grpc(grpc) => format!("grpc {}", origin(&grpc.target)),
            Self::Stdio(Stdio {
                command, args, env, ..
            }) => format!("stdio {command:?} {args:?} {env:?}"),
        }
    }
}

/// A transport as a caller sent it, with the values of its secret
/// environment (a stdio server's; empty for a transport without one).
#[derive(Debug, Clone)]
pub struct TransportInput {
    /// How the server is reached; a stdio server's `secret_env_names` are
    /// the keys of `secret_env`.
    pub transport: Transport,
    /// Secret environment by variable name; on update, a variable sent with
    /// an empty value keeps its stored value.
    pub secret_env: BTreeMap<String, SecretString>,
    /// A gRPC target's client key (PEM); on update, empty keeps the stored
    /// one.
    pub client_key: Option<SecretString>,
}

impl TransportInput {
    /// `transport` without secret values.
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            secret_env: BTreeMap::new(),
            client_key: None,
        }
    }

    /// A stdio server whose secret environment is `secret_env`.
    pub fn stdio(
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        secret_env: BTreeMap<String, SecretString>,
    ) -> Self {
        let secret_env_names = secret_env.keys().cloned().collect();
        Self {
            transport: Transport::Stdio(Stdio {
                command,
                args,
                env,
                secret_env_names,
            }),
            secret_env,
            client_key: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn transports_are_stored_as_before() {
        let http = Transport::StreamableHttp(StreamableHttp {
            url: "https://mcp.example/mcp".into(),
        });
        assert_eq!(
            serde_json::to_value(&http).unwrap(),
            json!({"type": "streamable_http", "url": "https://mcp.example/mcp"})
        );
        let stored = json!({
            "type": "stdio",
            "command": "npx",
            "args": ["server"],
            "env": {"MODE": "x"},
            "secret_env_names": ["API_KEY"],
        });
        let stdio: Transport = serde_json::from_value(stored.clone()).unwrap();
        assert!(stdio.runs_a_process());
        assert_eq!(serde_json::to_value(&stdio).unwrap(), stored);
    }
}
