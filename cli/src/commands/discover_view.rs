//! The tables `integrations discover` prints.

use switchboard_proto::mcp::v1 as mcp;

use super::Context;
use crate::{
    error::CliError,
    output::{short, table},
};

/// Prints the server and one table per kind of capability.
pub fn print(ctx: &Context, response: &mcp::DiscoverResponse) -> Result<(), CliError> {
    let server = response.server.clone().unwrap_or_default();
    let slug = response
        .integration
        .as_ref()
        .map(|i| i.slug.clone())
        .unwrap_or_default();
    ctx.out.line(format!(
        "{} {} (MCP {}), integration {slug}",
        server.name, server.version, server.protocol_version
    ))?;

    print_tools(ctx, &slug, &response.tools)?;
    print_resources(ctx, &response.resources)?;
    let mut templates = table(&["URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION"]);
    for t in &response.resource_templates {
        templates.add_row(vec![
            t.uri_template.clone(),
            t.name.clone(),
            t.mime_type.clone(),
            short(&t.description, 50),
        ]);
    }
    section(
        ctx,
        "Resource templates",
        response.resource_templates.len(),
        templates,
    )?;

    let mut prompts = table(&["PROMPT", "ARGUMENTS", "DESCRIPTION"]);
    for p in &response.prompts {
        let arguments: Vec<String> = p
            .arguments
            .iter()
            .map(|a| {
                if a.required {
                    a.name.clone()
                } else {
                    format!("[{}]", a.name)
                }
            })
            .collect();
        prompts.add_row(vec![
            p.name.clone(),
            arguments.join(" "),
            short(&p.description, 50),
        ]);
    }
    section(ctx, "Prompts", response.prompts.len(), prompts)
}

fn print_tools(ctx: &Context, slug: &str, tools: &[mcp::Tool]) -> Result<(), CliError> {
    let mut rows = table(&["TOOL", "THE MODEL SEES", "DESCRIPTION"]);
    for tool in tools {
        rows.add_row(vec![
            tool.name.clone(),
            format!("{slug}__{}", tool.name),
            short(&tool.description, 70),
        ]);
    }
    section(ctx, "Tools", tools.len(), rows)
}

fn print_resources(ctx: &Context, resources: &[mcp::Resource]) -> Result<(), CliError> {
    let mut rows = table(&["URI", "NAME", "MIME TYPE", "DESCRIPTION"]);
    for r in resources {
        rows.add_row(vec![
            r.uri.clone(),
            r.name.clone(),
            r.mime_type.clone(),
            short(&r.description, 50),
        ]);
    }
    section(ctx, "Resources", resources.len(), rows)
}

fn section(
    ctx: &Context,
    title: &str,
    count: usize,
    rows: comfy_table::Table,
) -> Result<(), CliError> {
    ctx.out.line(format!("\n{title} ({count})"))?;
    if count > 0 {
        ctx.out.line(rows)?;
    }
    Ok(())
}
