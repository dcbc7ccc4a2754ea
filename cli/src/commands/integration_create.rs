//! What `integrations create` sends: the server (a URL, a stdio command, a
//! catalog entry, an OpenAPI document or a gRPC service), its credentials,
//! limits and guardrail settings.

use std::{collections::BTreeMap, path::Path, path::PathBuf};

use clap::Args;
use switchboard_proto::mcp::v1::{self as mcp, transport::Kind};

use super::integration_auth::AuthArgs;
use crate::{args::KeyValue, error::CliError};

/// `integrations create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Prefix of the tool names the model sees (`{slug}__{tool}`).
    #[arg(long)]
    slug: String,
    /// Display name [default: the slug]
    #[arg(long)]
    name: Option<String>,
    /// Where the server is.
    #[command(flatten)]
    source: SourceArgs,
    /// An argument of the stdio command (repeatable).
    #[arg(
        long = "arg",
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "command"
    )]
    args: Vec<String>,
    /// An environment variable of the stdio command (repeatable).
    #[arg(long, value_name = "NAME=VALUE", requires = "command")]
    env: Vec<KeyValue>,
    /// A secret environment variable of the stdio command (repeatable; never shown again).
    #[arg(long, value_name = "NAME=VALUE", requires = "command")]
    secret_env: Vec<KeyValue>,
    /// A secret a catalog entry needs (repeatable).
    #[arg(long, value_name = "NAME=VALUE", requires = "catalog")]
    secret: Vec<KeyValue>,
    /// How it authenticates to the server.
    #[command(flatten)]
    auth: AuthArgs,
    /// Limit on connecting and the MCP handshake (e.g. 10s).
    #[arg(long, value_name = "DURATION")]
    connect_timeout: Option<humantime::Duration>,
    /// Limit on one call (e.g. 60s).
    #[arg(long, value_name = "DURATION")]
    call_timeout: Option<humantime::Duration>,
    /// Create it disabled.
    #[arg(long)]
    disabled: bool,
    /// What the guardrails do on its traffic, DETECTOR:PLACE=ACTION
    /// (repeatable; see `integrations guardrails`).
    #[arg(long = "guardrail", value_name = "DETECTOR:PLACE=ACTION")]
    guardrails: Vec<String>,
    /// Where an OpenAPI integration's calls go: one of its document's servers.
    #[arg(long, value_name = "URL", requires = "openapi")]
    base_url: Option<String>,
    /// An operation an OpenAPI integration offers, by tool name (repeatable;
    /// default: all).
    #[arg(long = "operation", value_name = "TOOL", requires = "openapi")]
    operations: Vec<String>,
    /// A gRPC integration's schema and TLS.
    #[command(flatten)]
    grpc: GrpcArgs,
}

/// What a gRPC integration (`--grpc TARGET`) takes besides its target.
#[derive(Debug, Args)]
struct GrpcArgs {
    /// A gRPC integration's schema: an encoded FileDescriptorSet (e.g.
    /// `protoc --include_imports --descriptor_set_out`) [default: the
    /// server's reflection].
    #[arg(long, value_name = "FILE", requires = "grpc")]
    descriptor_set: Option<PathBuf>,
    /// A method a gRPC integration offers, `package.Service/Method`, or all
    /// of a service's, `package.Service` (repeatable; default: all).
    #[arg(long = "method", value_name = "NAME", requires = "grpc")]
    methods: Vec<String>,
    /// A PEM certificate authority trusted for an `https` gRPC target.
    #[arg(long, value_name = "FILE", requires = "grpc")]
    ca_certificate: Option<PathBuf>,
    /// A PEM client certificate for mutual TLS to a gRPC target; with
    /// --client-key.
    #[arg(long, value_name = "FILE", requires = "grpc", requires = "client_key")]
    client_certificate: Option<PathBuf>,
    /// The client certificate's PEM private key (never shown again).
    #[arg(
        long,
        value_name = "FILE",
        requires = "grpc",
        requires = "client_certificate"
    )]
    client_key: Option<PathBuf>,
}

impl GrpcArgs {
    fn any(&self) -> bool {
        self.descriptor_set.is_some()
            || !self.methods.is_empty()
            || self.ca_certificate.is_some()
            || self.client_certificate.is_some()
            || self.client_key.is_some()
    }
}

/// Exactly one origin of the integration.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct SourceArgs {
    /// A streamable HTTP MCP endpoint.
    #[arg(long)]
    url: Option<String>,
    /// A stdio MCP server: the program (it must be on the service's allow-list).
    #[arg(long)]
    command: Option<String>,
    /// A catalog entry id (see `integrations catalog`).
    #[arg(long)]
    catalog: Option<String>,
    /// An HTTP API: its OpenAPI 3.0 or 3.1 document (a JSON or YAML file,
    /// or an `http(s)://` URL the service fetches it from), each operation
    /// a tool; with --base-url.
    #[arg(long, value_name = "FILE|URL", requires = "base_url")]
    openapi: Option<String>,
    /// A gRPC service at `http://host:port` or `https://host:port`, each
    /// unary or server-streaming method a tool.
    #[arg(long, value_name = "TARGET")]
    grpc: Option<String>,
}

/// `DETECTOR:PLACE=ACTION` settings as the contract carries them (the
/// service checks the names).
pub(super) fn guardrail_settings(set: &[String]) -> Result<Vec<mcp::GuardrailSetting>, CliError> {
    set.iter()
        .map(|entry| {
            let parsed = entry.split_once('=').and_then(|(target, action)| {
                let (detector, place) = target.split_once(':')?;
                Some(mcp::GuardrailSetting {
                    detector: detector.trim().to_owned(),
                    place: place.trim().to_owned(),
                    action: action.trim().to_owned(),
                })
            });
            parsed.ok_or_else(|| {
                CliError::Usage(format!("{entry:?}: expected DETECTOR:PLACE=ACTION"))
            })
        })
        .collect()
}

fn map(pairs: Vec<KeyValue>) -> BTreeMap<String, String> {
    pairs.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

fn duration(value: Option<humantime::Duration>) -> Result<Option<prost_types::Duration>, CliError> {
    value
        .map(|d| {
            prost_types::Duration::try_from(std::time::Duration::from(d))
                .map_err(|_| CliError::Usage(format!("{d} is too long")))
        })
        .transpose()
}

/// Refuses an OpenAPI or gRPC option given with another kind of server:
/// clap's `requires` does not hold when the required argument conflicts
/// with one given (as every other source does), so it would be ignored.
fn refuse_foreign_options(args: &CreateArgs) -> Result<(), CliError> {
    if (args.base_url.is_some() || !args.operations.is_empty()) && args.source.openapi.is_none() {
        return Err(CliError::Usage(
            "--base-url and --operation are for --openapi".into(),
        ));
    }
    if args.grpc.any() && args.source.grpc.is_none() {
        return Err(CliError::Usage(
            "--descriptor-set, --method, --ca-certificate, --client-certificate and \
             --client-key are for --grpc"
                .into(),
        ));
    }
    Ok(())
}

/// An OpenAPI transport: its document read from a file, or to be fetched
/// by the service from an `http(s)://` URL.
fn openapi_transport(
    document: String,
    base_url: Option<String>,
    operations: Vec<String>,
) -> Result<Kind, CliError> {
    let by_url = document.starts_with("https://") || document.starts_with("http://");
    Ok(Kind::Openapi(mcp::OpenApiTransport {
        base_url: base_url.unwrap_or_default(),
        document: if by_url {
            String::new()
        } else {
            read_text(Path::new(&document))?
        },
        document_url: if by_url { document } else { String::new() },
        operations,
    }))
}

pub(super) fn create_request(
    mut args: CreateArgs,
    request_id: String,
) -> Result<mcp::CreateIntegrationRequest, CliError> {
    refuse_foreign_options(&args)?;
    let tail = Tail {
        name: args.name.take(),
        slug: std::mem::take(&mut args.slug),
        connect_timeout: args.connect_timeout,
        call_timeout: args.call_timeout,
        disabled: args.disabled,
        guardrails: std::mem::take(&mut args.guardrails),
    };
    let auth = args.auth.method()?;
    let custom = |kind| {
        mcp::create_integration_request::Source::Custom(mcp::CustomIntegrationSpec {
            transport: Some(mcp::Transport { kind: Some(kind) }),
            auth: auth.clone().map(|method| mcp::AuthConfig {
                method: Some(method),
            }),
        })
    };
    if let Some(document) = args.source.openapi.take() {
        let operations = std::mem::take(&mut args.operations);
        let api = openapi_transport(document, args.base_url.take(), operations)?;
        return finish(tail, custom(api), request_id);
    }
    if let Some(target) = args.source.grpc.take() {
        let service = Kind::Grpc(grpc_transport(target, args.grpc)?);
        return finish(tail, custom(service), request_id);
    }
    let source = match (args.source.url, args.source.command, args.source.catalog) {
        (Some(url), _, _) => custom(Kind::StreamableHttp(mcp::StreamableHttpTransport { url })),
        (None, Some(command), _) => custom(Kind::Stdio(mcp::StdioTransport {
            command,
            args: args.args,
            env: map(args.env),
            secret_env: map(args.secret_env),
            secret_env_names: Vec::new(),
        })),
        (None, None, Some(catalog_id)) => {
            if auth.is_some() {
                return Err(CliError::Usage(
                    "a catalog entry takes its credentials with --secret NAME=VALUE".into(),
                ));
            }
            mcp::create_integration_request::Source::Predefined(mcp::PredefinedIntegrationSpec {
                catalog_id,
                secrets: map(args.secret),
            })
        }
        (None, None, None) => {
            return Err(CliError::Usage(
                "name the server with --url, --command, --catalog, --openapi or --grpc".into(),
            ));
        }
    };
    finish(tail, source, request_id)
}

/// The file at `path`, as text.
fn read_text(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))
}

/// The file at `path`, if named, as text (empty if not).
fn read_optional_text(path: Option<&Path>) -> Result<String, CliError> {
    path.map(read_text)
        .transpose()
        .map(Option::unwrap_or_default)
}

/// A gRPC integration's transport: `target`, with the files `args` names read.
fn grpc_transport(target: String, args: GrpcArgs) -> Result<mcp::GrpcTransport, CliError> {
    let descriptor_set = match &args.descriptor_set {
        Some(path) => std::fs::read(path)
            .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?,
        None => Vec::new(),
    };
    Ok(mcp::GrpcTransport {
        target,
        descriptor_set,
        methods: args.methods,
        ca_certificate: read_optional_text(args.ca_certificate.as_deref())?,
        client_certificate: read_optional_text(args.client_certificate.as_deref())?,
        client_key: read_optional_text(args.client_key.as_deref())?,
        client_key_set: false,
    })
}

/// What every kind of integration's request takes besides its source.
struct Tail {
    name: Option<String>,
    slug: String,
    connect_timeout: Option<humantime::Duration>,
    call_timeout: Option<humantime::Duration>,
    disabled: bool,
    guardrails: Vec<String>,
}

/// The request for `source`, with the names, limits, state and guardrails
/// of `args`.
fn finish(
    args: Tail,
    source: mcp::create_integration_request::Source,
    request_id: String,
) -> Result<mcp::CreateIntegrationRequest, CliError> {
    let timeouts = match (args.connect_timeout, args.call_timeout) {
        (None, None) => None,
        (connect, call) => Some(mcp::Timeouts {
            connect: duration(connect)?,
            call: duration(call)?,
        }),
    };
    Ok(mcp::CreateIntegrationRequest {
        display_name: args.name.unwrap_or_else(|| args.slug.clone()),
        slug: args.slug,
        source: Some(source),
        timeouts,
        start_disabled: args.disabled,
        request_id,
        guardrails: guardrail_settings(&args.guardrails)?,
    })
}
