//! Naming objects on the command line: an integration by id or slug, an
//! agent by id or name.

use switchboard_proto::{mcp::v1 as mcp, runs::v1 as runs};

use crate::{
    client::Clients,
    error::{CliError, Service},
};

/// Most pages read while looking a name up (500 items each).
const MAX_PAGES: usize = 20;

/// Whether `text` has the shape of a UUID, as the services' ids do.
fn is_id(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The id of the integration named by `reference` (an id or a slug).
pub async fn integration(clients: &Clients, reference: &str) -> Result<String, CliError> {
    if is_id(reference) {
        return Ok(reference.to_owned());
    }
    let mut client = clients.mcp()?;
    let mut page_token = String::new();
    for _ in 0..MAX_PAGES {
        let page = client
            .list_integrations(clients.unary(mcp::ListIntegrationsRequest {
                page_size: 500,
                page_token,
                enabled_only: false,
            }))
            .await
            .map_err(CliError::from(Service::Mcp))?
            .into_inner();
        if let Some(found) = page.integrations.iter().find(|i| i.slug == reference) {
            return Ok(found.id.clone());
        }
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    Err(CliError::NotFound(format!(
        "no integration with id or slug {reference:?}"
    )))
}

/// The id of the agent named by `reference` (an id or a unique name).
pub async fn agent(clients: &Clients, reference: &str) -> Result<String, CliError> {
    if is_id(reference) {
        return Ok(reference.to_owned());
    }
    let mut client = clients.runs()?;
    let mut page_token = String::new();
    let mut matches = Vec::new();
    for _ in 0..MAX_PAGES {
        let page = client
            .list_agents(clients.unary(runs::ListAgentsRequest {
                page_size: 500,
                page_token,
            }))
            .await
            .map_err(CliError::from(Service::Runs))?
            .into_inner();
        matches.extend(
            page.agents
                .into_iter()
                .filter(|a| a.name == reference)
                .map(|a| a.id),
        );
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    match matches.as_slice() {
        [id] => Ok(id.clone()),
        [] => Err(CliError::NotFound(format!(
            "no agent with id or name {reference:?}"
        ))),
        _ => Err(CliError::Usage(format!(
            "{} agents are named {reference:?}; name one by its id",
            matches.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_told_from_names() {
        assert!(is_id("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"));
        assert!(!is_id("example"));
        assert!(!is_id("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5bx"));
    }
}
