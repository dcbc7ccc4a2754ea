//! What the members of a surface offer, as the client sees it: names
//! prefixed, selections and overrides applied, each item otherwise as its
//! server wrote it.

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{Prompt, Resource, ResourceTemplate, ResultType, Tool},
};

use crate::domain::{outcome::Outcome, ports::Discovery, surface::Member};

/// The members' listings the surface shows.
type Listings = [(Member, Arc<Discovery>)];

/// The tools the surface shows, under their exposed names.
pub(super) fn tools(listings: &Listings) -> Vec<Tool> {
    listings
        .iter()
        .flat_map(|(member, discovery)| {
            discovery
                .tools
                .iter()
                .filter(move |tool| member.shows_tool(&tool.name))
                .map(move |tool| {
                    let mut tool = tool.clone();
                    if let Some(description) = member.tool_description(&tool.name) {
                        tool.description = Some(description.to_owned().into());
                    }
                    tool.name = member.exposed_tool(&tool.name).into();
                    tool
                })
        })
        .collect()
}

/// The prompts the surface shows, under their exposed names.
pub(super) fn prompts(listings: &Listings) -> Vec<Prompt> {
    listings
        .iter()
        .flat_map(|(member, discovery)| {
            discovery.prompts.iter().map(move |prompt| {
                let mut prompt = prompt.clone();
                prompt.name = member.exposed(&prompt.name);
                prompt
            })
        })
        .collect()
}

/// The resources the surface shows.
pub(super) fn resources(listings: &Listings) -> Vec<Resource> {
    listings
        .iter()
        .flat_map(|(member, discovery)| {
            discovery
                .resources
                .iter()
                .filter(move |resource| member.shows_resource(&resource.uri))
                .cloned()
        })
        .collect()
}

/// The resource templates of the members that show every resource.
pub(super) fn resource_templates(listings: &Listings) -> Vec<ResourceTemplate> {
    listings
        .iter()
        .filter(|(member, _)| member.resources.is_none())
        .flat_map(|(_, discovery)| discovery.resource_templates.iter().cloned())
        .collect()
}

/// A server's complete result; a server that asked for input is answered
/// with an error, as the endpoint does not pass such questions on yet.
pub(super) fn complete<T>(outcome: Outcome<T>) -> Result<T, ErrorData> {
    match outcome {
        Outcome::Complete(result) => Ok(result),
        Outcome::InputRequired(_) => Err(ErrorData::invalid_request(
            "the MCP server asked for input, which this endpoint does not pass on yet",
            None,
        )),
    }
}

/// A complete result says so (`resultType`), as clients of 2026-07-28
/// require, whichever era the server that produced it speaks.
pub(super) fn said_complete(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}
