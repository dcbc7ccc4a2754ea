//! `switchboard integrations`: the catalog, creating, listing, validating,
//! discovering, enabling and disabling MCP integrations, and their
//! guardrail settings.

use clap::Subcommand;
use switchboard_proto::mcp::v1::{self as mcp, auth_config::Method, transport::Kind};

pub use super::integration_create::CreateArgs;
use super::{
    Context,
    integration_create::{create_request, guardrail_settings},
};
use crate::{
    args::PageArgs,
    error::{CliError, Service},
    output::{short, table, time},
    refs,
};

/// The integration commands.
#[derive(Debug, Subcommand)]
pub enum IntegrationsCommand {
    /// List the predefined catalog of MCP servers
    Catalog(PageArgs),
    /// Create an integration: a custom one (--url, --command, --openapi or --grpc) or from the catalog (--catalog)
    Create(Box<CreateArgs>),
    /// List the organization's integrations
    List {
        /// Paging.
        #[command(flatten)]
        page: PageArgs,
        /// Only enabled integrations.
        #[arg(long)]
        enabled_only: bool,
    },
    /// Show one integration
    Show {
        /// Its id or slug.
        integration: String,
    },
    /// Connect to the integration's server and report what it offers, or why not
    Validate {
        /// Its id or slug.
        integration: String,
    },
    /// List the tools, resources, resource templates and prompts of its server
    Discover {
        /// Its id or slug.
        integration: String,
        /// Ask the server instead of the cache.
        #[arg(long)]
        refresh: bool,
    },
    /// Enable an integration
    Enable {
        /// Its id or slug.
        integration: String,
    },
    /// Disable an integration: runs skip it, calls to it are refused
    Disable {
        /// Its id or slug.
        integration: String,
    },
    /// Delete an integration
    Delete {
        /// Its id or slug.
        integration: String,
    },
    /// Set what the guardrails do on this integration's traffic, over the
    /// organization's policies and the deployment; no --set clears them
    Guardrails {
        /// Its id or slug.
        integration: String,
        /// DETECTOR:PLACE=ACTION, e.g. card_number:result=off (repeatable;
        /// places: arguments, result; actions: off, flag, redact, block).
        #[arg(long = "set", value_name = "DETECTOR:PLACE=ACTION")]
        set: Vec<String>,
    },
}

/// Runs an integration command.
pub async fn run(ctx: &Context, command: IntegrationsCommand) -> Result<(), CliError> {
    match command {
        IntegrationsCommand::Catalog(page) => catalog(ctx, page).await,
        IntegrationsCommand::Create(args) => {
            let request = create_request(*args, ctx.request_id.clone())?;
            let response = ctx
                .clients
                .mcp()?
                .create_integration(ctx.clients.unary(request))
                .await
                .map_err(CliError::from(Service::Mcp))?;
            print_integration(ctx, &response.into_inner().integration.unwrap_or_default())
        }
        IntegrationsCommand::List { page, enabled_only } => list(ctx, page, enabled_only).await,
        IntegrationsCommand::Show { integration } => {
            let id = refs::integration(&ctx.clients, &integration).await?;
            let response = ctx
                .clients
                .mcp()?
                .get_integration(ctx.clients.unary(mcp::GetIntegrationRequest { id }))
                .await
                .map_err(CliError::from(Service::Mcp))?;
            print_integration(ctx, &response.into_inner().integration.unwrap_or_default())
        }
        IntegrationsCommand::Validate { integration } => validate(ctx, &integration).await,
        IntegrationsCommand::Discover {
            integration,
            refresh,
        } => discover(ctx, &integration, refresh).await,
        IntegrationsCommand::Enable { integration } => set_enabled(ctx, &integration, true).await,
        IntegrationsCommand::Disable { integration } => set_enabled(ctx, &integration, false).await,
        IntegrationsCommand::Delete { integration } => delete(ctx, &integration).await,
        IntegrationsCommand::Guardrails { integration, set } => {
            set_guardrails(ctx, &integration, &set).await
        }
    }
}

/// Replaces the integration's guardrail settings.
async fn set_guardrails(ctx: &Context, integration: &str, set: &[String]) -> Result<(), CliError> {
    let id = refs::integration(&ctx.clients, integration).await?;
    let request = mcp::UpdateIntegrationRequest {
        integration: Some(mcp::Integration {
            id,
            guardrails: guardrail_settings(set)?,
            ..Default::default()
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: vec!["guardrails".to_owned()],
        }),
    };
    let response = ctx
        .clients
        .mcp()?
        .update_integration(ctx.clients.unary(request))
        .await
        .map_err(CliError::from(Service::Mcp))?;
    print_integration(ctx, &response.into_inner().integration.unwrap_or_default())
}

/// Guardrail settings as one line: `card_number:result=off, …`, or `-`.
fn guardrails_line(settings: &[mcp::GuardrailSetting]) -> String {
    if settings.is_empty() {
        return "-".to_owned();
    }
    settings
        .iter()
        .map(|s| format!("{}:{}={}", s.detector, s.place, s.action))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn catalog(ctx: &Context, page: PageArgs) -> Result<(), CliError> {
    let response = ctx
        .clients
        .mcp()?
        .list_predefined_integrations(ctx.clients.unary(mcp::ListPredefinedIntegrationsRequest {
            page_size: page.page_size,
            page_token: page.page_token,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out.either(&response, || print_catalog(ctx, &response))
}

async fn list(ctx: &Context, page: PageArgs, enabled_only: bool) -> Result<(), CliError> {
    let response = ctx
        .clients
        .mcp()?
        .list_integrations(ctx.clients.unary(mcp::ListIntegrationsRequest {
            page_size: page.page_size,
            page_token: page.page_token,
            enabled_only,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out.either(&response, || {
        let mut rows = table(&["ID", "SLUG", "NAME", "ENABLED", "TRANSPORT"]);
        for i in &response.integrations {
            rows.add_row(vec![
                i.id.clone(),
                i.slug.clone(),
                i.display_name.clone(),
                yes_no(i.enabled).into(),
                transport(i.transport.as_ref()),
            ]);
        }
        ctx.out.line(rows)?;
        ctx.out.next_page(&response.next_page_token)
    })
}

/// Prints what the server reported; a failed connection is exit code 1.
async fn validate(ctx: &Context, integration: &str) -> Result<(), CliError> {
    let id = refs::integration(&ctx.clients, integration).await?;
    let response = ctx
        .clients
        .mcp()?
        .validate_integration(ctx.clients.unary(mcp::ValidateIntegrationRequest { id }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out
        .either(&response, || print_validation(ctx, &response))?;
    if response.ok {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "validation failed: {}",
            crate::error::one_line(&response.error)
        )))
    }
}

async fn discover(ctx: &Context, integration: &str, refresh: bool) -> Result<(), CliError> {
    let integration_id = refs::integration(&ctx.clients, integration).await?;
    let response = ctx
        .clients
        .mcp()?
        .discover(ctx.clients.unary(mcp::DiscoverRequest {
            integration_id,
            bypass_cache: refresh,
            allowed_tools: None,
        }))
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out
        .either(&response, || super::discover_view::print(ctx, &response))
}

async fn set_enabled(ctx: &Context, integration: &str, enable: bool) -> Result<(), CliError> {
    let id = refs::integration(&ctx.clients, integration).await?;
    let mut client = ctx.clients.mcp()?;
    let changed = if enable {
        client
            .enable_integration(ctx.clients.unary(mcp::EnableIntegrationRequest { id }))
            .await
            .map(|r| r.into_inner().integration)
    } else {
        client
            .disable_integration(ctx.clients.unary(mcp::DisableIntegrationRequest { id }))
            .await
            .map(|r| r.into_inner().integration)
    };
    let integration = changed.map_err(CliError::from(Service::Mcp))?;
    print_integration(ctx, &integration.unwrap_or_default())
}

async fn delete(ctx: &Context, integration: &str) -> Result<(), CliError> {
    let id = refs::integration(&ctx.clients, integration).await?;
    let response = ctx
        .clients
        .mcp()?
        .delete_integration(
            ctx.clients
                .unary(mcp::DeleteIntegrationRequest { id: id.clone() }),
        )
        .await
        .map_err(CliError::from(Service::Mcp))?
        .into_inner();
    ctx.out.either(&response, || {
        ctx.out.line(format!("deleted integration {id}"))
    })
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

fn transport(transport: Option<&mcp::Transport>) -> String {
    match transport.and_then(|t| t.kind.as_ref()) {
        Some(Kind::StreamableHttp(http)) => http.url.clone(),
        Some(Kind::Stdio(stdio)) => format!("stdio: {} {}", stdio.command, stdio.args.join(" ")),
        Some(Kind::Openapi(api)) => format!("openapi: {}", api.base_url),
        Some(Kind::Grpc(grpc)) => grpc_transport(grpc),
        None => "-".into(),
    }
}

/// A gRPC integration's target, where its schema comes from, the methods
/// it offers when chosen, and its TLS settings when set.
fn grpc_transport(grpc: &mcp::GrpcTransport) -> String {
    let mut details = vec![if grpc.descriptor_set.is_empty() {
        "schema from reflection".to_owned()
    } else {
        format!("descriptor set of {} bytes", grpc.descriptor_set.len())
    }];
    if !grpc.methods.is_empty() {
        details.push(format!("methods: {}", grpc.methods.join(", ")));
    }
    if !grpc.ca_certificate.is_empty() {
        details.push("own CA certificate".into());
    }
    if !grpc.client_certificate.is_empty() {
        details.push(format!(
            "client certificate (key set: {})",
            yes_no(grpc.client_key_set)
        ));
    }
    format!("grpc: {} ({})", grpc.target, details.join("; "))
}

/// Whose token a client-credentials integration asks for, when not the
/// service's.
fn on_behalf_of(auth: &mcp::OAuthClientCredentialsAuth) -> String {
    match auth.on_behalf_of() {
        mcp::OnBehalfOf::Unspecified => String::new(),
        grant => match &auth.identity_provider {
            Some(idp) => format!(
                " on behalf of the caller ({}, identity provider {})",
                grant.as_str_name(),
                idp.issuer
            ),
            None => format!(" on behalf of the caller ({})", grant.as_str_name()),
        },
    }
}

fn auth(auth: Option<&mcp::AuthConfig>) -> String {
    match auth.and_then(|a| a.method.as_ref()) {
        None | Some(Method::None(_)) => "none".into(),
        Some(Method::BearerToken(b)) => format!("bearer token (set: {})", yes_no(b.token_set)),
        Some(Method::Header(h)) => {
            format!("header {} (set: {})", h.header_name, yes_no(h.value_set))
        }
        Some(Method::Query(q)) => format!(
            "query parameter {} (set: {})",
            q.parameter_name,
            yes_no(q.value_set)
        ),
        Some(Method::OauthClientCredentials(o)) => format!(
            "OAuth client credentials ({}){}, client {} at {} (secret set: {}, key set: {})",
            o.client_authentication().as_str_name(),
            on_behalf_of(o),
            if o.client_id.is_empty() {
                "-"
            } else {
                &o.client_id
            },
            match (o.token_url.as_str(), o.issuer.as_str()) {
                ("", "") =>
                    "no pinned token endpoint (calls are refused: set a token URL or issuer)",
                ("", issuer) => issuer,
                (token_url, _) => token_url,
            },
            yes_no(o.client_secret_set),
            yes_no(o.private_key_set)
        ),
        Some(Method::OauthAuthorizationCode(o)) => format!(
            "OAuth authorization code, {} (client {}, redirect {})",
            if o.organization_wide {
                "an admin connects it for the organization"
            } else {
                "each user connects their account"
            },
            if o.client_id.is_empty() {
                "registered on first use"
            } else {
                o.client_id.as_str()
            },
            o.redirect_uri
        ),
    }
}

fn print_integration(ctx: &Context, i: &mcp::Integration) -> Result<(), CliError> {
    ctx.out.either(i, || {
        let kind = match mcp::IntegrationKind::try_from(i.kind) {
            Ok(mcp::IntegrationKind::Predefined) => format!("predefined ({})", i.predefined_id),
            _ => "custom".into(),
        };
        let mut rows = table(&["FIELD", "VALUE"]);
        for (field, value) in [
            ("id", i.id.clone()),
            ("slug", i.slug.clone()),
            ("name", i.display_name.clone()),
            ("kind", kind),
            ("enabled", yes_no(i.enabled).into()),
            ("transport", transport(i.transport.as_ref())),
            ("auth", auth(i.auth.as_ref())),
            ("guardrails", guardrails_line(&i.guardrails)),
            ("created", time(i.create_time.as_ref())),
            ("updated", time(i.update_time.as_ref())),
        ] {
            rows.add_row(vec![field.to_owned(), value]);
        }
        ctx.out.line(rows)
    })
}

fn print_catalog(
    ctx: &Context,
    response: &mcp::ListPredefinedIntegrationsResponse,
) -> Result<(), CliError> {
    let mut rows = table(&["ID", "NAME", "SLUG", "SECRETS", "DESCRIPTION"]);
    for entry in &response.integrations {
        let secrets: Vec<String> = entry
            .secrets
            .iter()
            .map(|s| {
                if s.required {
                    s.name.clone()
                } else {
                    format!("{} (optional)", s.name)
                }
            })
            .collect();
        rows.add_row(vec![
            entry.id.clone(),
            entry.display_name.clone(),
            entry.default_slug.clone(),
            secrets.join(", "),
            short(&entry.description, 60),
        ]);
    }
    ctx.out.line(rows)?;
    ctx.out.next_page(&response.next_page_token)
}

fn print_validation(ctx: &Context, v: &mcp::ValidateIntegrationResponse) -> Result<(), CliError> {
    if !v.ok {
        return ctx.out.line(format!("✗ could not connect: {}", v.error));
    }
    let server = v.server.clone().unwrap_or_default();
    let latency = v
        .latency
        .and_then(|d| std::time::Duration::try_from(d).ok())
        .map(|d| format!("{} ms", d.as_millis()))
        .unwrap_or_else(|| "-".into());
    ctx.out.line(format!(
        "✓ {} {} (MCP {}) in {latency}: {} tools, {} resources, {} templates, {} prompts",
        server.name,
        server.version,
        v.protocol_version,
        v.tool_count,
        v.resource_count,
        v.resource_template_count,
        v.prompt_count
    ))
}
