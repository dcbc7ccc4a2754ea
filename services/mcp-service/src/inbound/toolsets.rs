//! The `switchboard.mcp.v1.ToolsetsService` handlers: proto in, domain call,
//! proto out.

use switchboard_auth::Principal;
use switchboard_proto::mcp::v1::{self as pb, toolsets_service_server::ToolsetsService};
use switchboard_server::{FieldViolation, paging::page_size, principal};
use tonic::{Request, Response, Status};

use crate::domain::{
    error::McpError,
    toolset::{
        admin::{DescribedToolset, ToolsetAdmin, ToolsetPatch},
        model::ToolsetName,
        validate::{BodyInput, MemberInput, OverrideInput, toolset_name},
    },
};

/// The ToolsetsService API.
#[derive(Debug, Clone)]
pub(crate) struct ToolsetsApi {
    admin: ToolsetAdmin,
}

impl ToolsetsApi {
    pub(crate) fn new(admin: ToolsetAdmin) -> Self {
        Self { admin }
    }
}

type Reply<T> = Result<Response<T>, Status>;

fn caller<T>(request: &Request<T>) -> Result<Principal, Status> {
    principal(request).cloned()
}

fn name(field: &str, value: &str) -> Result<ToolsetName, McpError> {
    toolset_name(field, value).map_err(McpError::from)
}

fn selection(selection: Option<pb::ToolsetSelection>) -> Option<Vec<String>> {
    selection.map(|s| s.names)
}

fn member_input(member: pb::ToolsetMember) -> MemberInput {
    MemberInput {
        integration_id: member.integration_id,
        tools: selection(member.tools),
        resources: selection(member.resources),
        overrides: member
            .tool_overrides
            .into_iter()
            .map(|o| OverrideInput {
                tool: o.tool,
                name: o.name,
                description: o.description,
                hidden: o.hidden,
            })
            .collect(),
    }
}

fn body_input(toolset: pb::Toolset) -> BodyInput {
    BodyInput {
        description: toolset.description,
        members: toolset.members.into_iter().map(member_input).collect(),
    }
}

fn timestamp(millis: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: millis.div_euclid(1000),
        nanos: i32::try_from(millis.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

fn proto_toolset(described: DescribedToolset) -> pb::Toolset {
    let DescribedToolset { toolset, slugs } = described;
    let members = toolset
        .body
        .members
        .into_iter()
        .zip(slugs)
        .map(|(member, slug)| pb::ToolsetMember {
            integration_id: member.integration_id.to_string(),
            integration_slug: slug.unwrap_or_default(),
            tools: member.tools.map(|names| pb::ToolsetSelection { names }),
            resources: member.resources.map(|names| pb::ToolsetSelection { names }),
            tool_overrides: member
                .overrides
                .into_iter()
                .map(|o| pb::ToolsetToolOverride {
                    tool: o.tool,
                    name: o.name.unwrap_or_default(),
                    description: o.description.unwrap_or_default(),
                    hidden: o.hidden,
                })
                .collect(),
        })
        .collect();
    pb::Toolset {
        name: toolset.name.to_string(),
        description: toolset.body.description,
        members,
        created_by: toolset.created_by,
        create_time: Some(timestamp(toolset.created_at)),
        updated_by: toolset.updated_by,
        update_time: Some(timestamp(toolset.updated_at)),
    }
}

/// What an update changes: the fields the mask names, all when it is empty.
fn patch(
    toolset: pb::Toolset,
    mask: Option<prost_types::FieldMask>,
) -> Result<ToolsetPatch, McpError> {
    let paths = mask.map(|m| m.paths).unwrap_or_default();
    let (mut description, mut members) = (paths.is_empty(), paths.is_empty());
    let mut violations = Vec::new();
    for path in &paths {
        match path.as_str() {
            "description" => description = true,
            "members" => members = true,
            other => violations.push(FieldViolation::new(
                "update_mask",
                format!("cannot update {other:?}: only description and members"),
            )),
        }
    }
    if !violations.is_empty() {
        return Err(McpError::Invalid(violations));
    }
    let BodyInput {
        description: new_description,
        members: new_members,
    } = body_input(toolset);
    Ok(ToolsetPatch {
        description: description.then_some(new_description),
        members: members.then_some(new_members),
    })
}

#[tonic::async_trait]
impl ToolsetsService for ToolsetsApi {
    async fn create_toolset(
        &self,
        request: Request<pb::CreateToolsetRequest>,
    ) -> Reply<pb::CreateToolsetResponse> {
        let caller = caller(&request)?;
        let toolset = request
            .into_inner()
            .toolset
            .ok_or_else(|| McpError::invalid("toolset", "is required"))?;
        let name = toolset.name.clone();
        let created = self
            .admin
            .create(&caller, &name, body_input(toolset))
            .await?;
        Ok(Response::new(pb::CreateToolsetResponse {
            toolset: Some(proto_toolset(created)),
        }))
    }

    async fn get_toolset(
        &self,
        request: Request<pb::GetToolsetRequest>,
    ) -> Reply<pb::GetToolsetResponse> {
        let caller = caller(&request)?;
        let name = name("name", &request.get_ref().name)?;
        let toolset = self.admin.get(&caller, &name).await?;
        Ok(Response::new(pb::GetToolsetResponse {
            toolset: Some(proto_toolset(toolset)),
        }))
    }

    async fn list_toolsets(
        &self,
        request: Request<pb::ListToolsetsRequest>,
    ) -> Reply<pb::ListToolsetsResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let limit = page_size("page_size", request.page_size).map_err(McpError::from)?;
        let after = match request.page_token.as_str() {
            "" => None,
            token => Some(ToolsetName::parse(token).ok_or_else(|| {
                McpError::invalid("page_token", "is not a page token this service issued")
            })?),
        };
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let (toolsets, more) = self.admin.list(&caller, after.as_ref(), limit).await?;
        let next_page_token = match toolsets.last() {
            Some(last) if more => last.toolset.name.to_string(),
            _ => String::new(),
        };
        Ok(Response::new(pb::ListToolsetsResponse {
            toolsets: toolsets.into_iter().map(proto_toolset).collect(),
            next_page_token,
        }))
    }

    async fn update_toolset(
        &self,
        request: Request<pb::UpdateToolsetRequest>,
    ) -> Reply<pb::UpdateToolsetResponse> {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let toolset = request
            .toolset
            .ok_or_else(|| McpError::invalid("toolset", "is required"))?;
        let name = name("toolset.name", &toolset.name)?;
        let patch = patch(toolset, request.update_mask)?;
        let updated = self.admin.update(&caller, &name, patch).await?;
        Ok(Response::new(pb::UpdateToolsetResponse {
            toolset: Some(proto_toolset(updated)),
        }))
    }

    async fn delete_toolset(
        &self,
        request: Request<pb::DeleteToolsetRequest>,
    ) -> Reply<pb::DeleteToolsetResponse> {
        let caller = caller(&request)?;
        let name = name("name", &request.get_ref().name)?;
        self.admin.delete(&caller, &name).await?;
        Ok(Response::new(pb::DeleteToolsetResponse {}))
    }
}
