//! What the members of a surface offer, as the client sees it: names
//! prefixed, selections applied, each item as its server wrote it.

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{CallToolResult, Prompt, Resource, ResourceTemplate, ResultType, Tool},
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain::{ports::Discovery, surface::Member};

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
                    tool.name = member.exposed(&tool.name).into();
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

/// Whether a server's result asks the caller for input first.
pub(super) fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("input_required")
}

/// A server's complete result as the client's; a server that asked for
/// input is answered with an error, as the endpoint does not pass such
/// questions on yet.
pub(super) fn complete<T: DeserializeOwned>(result: Value) -> Result<T, ErrorData> {
    if is_input_required(&result) {
        return Err(ErrorData::invalid_request(
            "the MCP server asked for input, which this endpoint does not pass on yet",
            None,
        ));
    }
    serde_json::from_value(completed(result)).map_err(|error| {
        ErrorData::internal_error(
            format!("the MCP server's result could not be read: {error}"),
            None,
        )
    })
}

/// A complete result says so (`resultType`), as clients of 2026-07-28
/// require, whichever era the server that produced it speaks.
pub(super) fn completed(mut result: Value) -> Value {
    if let Some(object) = result.as_object_mut() {
        object
            .entry("resultType")
            .or_insert_with(|| Value::String("complete".to_owned()));
    }
    result
}

/// A tool's complete result says so (`resultType`), as clients of
/// 2026-07-28 require, whichever era the server that produced it speaks.
pub(super) fn said_complete(mut result: CallToolResult) -> CallToolResult {
    result.result_type.get_or_insert(ResultType::COMPLETE);
    result
}
