//! What the MCP endpoint serves at `/mcp/toolsets/{name}`: a toolset
//! resolved for one caller into the integrations it holds now, each with
//! the prefix of its tools' names and its selections.

use std::{collections::HashMap, sync::Arc};

use switchboard_auth::Principal;

use super::{
    model::{ToolOverride, ToolsetName},
    ports::ToolsetRepository,
};
use crate::domain::{
    error::McpError,
    integration::{IntegrationId, OrgId},
    ports::{IntegrationHead, IntegrationRepository},
    surface::{Member, Shown, Surface},
};

/// One integration of a resolved toolset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedMember {
    /// The integration.
    pub integration_id: IntegrationId,
    /// Its current slug.
    pub slug: String,
    /// What its tools' names start with, followed by [`PREFIX_SEPARATOR`](crate::domain::surface::PREFIX_SEPARATOR):
    /// the slug.
    pub prefix: String,
    /// Whether the integration is enabled; a disabled one's calls are
    /// refused like any call to it.
    pub enabled: bool,
    /// The tools served, by the server's own names; every tool when `None`.
    pub tools: Option<Vec<String>>,
    /// The resources and templates served, by URI or URI template; every
    /// one when `None`.
    pub resources: Option<Vec<String>>,
    /// How some of its tools are shown.
    pub overrides: Vec<ToolOverride>,
}

/// A toolset as the MCP endpoint serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedToolset {
    /// Its name.
    pub name: ToolsetName,
    /// Its description, for the MCP client (the server's instructions).
    pub description: String,
    /// The members whose integration the organization still has, in the
    /// order written; one deleted since is left out.
    pub members: Vec<ResolvedMember>,
}

impl ResolvedToolset {
    /// A toolset's enabled members, names prefixed with their slugs; the
    /// longest prefix is tried first, so that of two slugs one of which starts
    /// the other, a name reaches the member it was made for.
    pub fn surface(self) -> Surface {
        let mut members: Vec<Member> = self
            .members
            .into_iter()
            .filter(|m| m.enabled)
            .map(|m| Member {
                integration: m.integration_id,
                prefix: Some(m.prefix),
                tools: m.tools.map(|t| t.into_iter().collect()),
                resources: m.resources.map(|r| r.into_iter().collect()),
                overrides: m
                    .overrides
                    .into_iter()
                    .map(|o| {
                        let shown = Shown {
                            name: o.name,
                            description: o.description,
                            hidden: o.hidden,
                        };
                        (o.tool, shown)
                    })
                    .collect(),
            })
            .collect();
        members.sort_by_key(|m| std::cmp::Reverse(m.prefix.as_ref().map_or(0, String::len)));
        Surface::of(members)
    }
}

/// Resolves toolsets for the MCP endpoint.
#[derive(Clone)]
pub struct ToolsetResolver {
    toolsets: Arc<dyn ToolsetRepository>,
    integrations: Arc<dyn IntegrationRepository>,
}

impl std::fmt::Debug for ToolsetResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolsetResolver").finish_non_exhaustive()
    }
}

impl ToolsetResolver {
    /// Toolsets from `toolsets`, their members' integrations from
    /// `integrations`.
    pub fn new(
        toolsets: Arc<dyn ToolsetRepository>,
        integrations: Arc<dyn IntegrationRepository>,
    ) -> Self {
        Self {
            toolsets,
            integrations,
        }
    }

    /// The toolset `name` of the caller's organization, resolved to its
    /// integrations as they are now. A name that is not a toolset's, or
    /// names one of another organization, is [`McpError::ToolsetNotFound`]
    /// alike, so that the endpoint answers 404 and tells nothing of other
    /// organizations. What each member serves is still subject to the
    /// organization's policies: the caller of this resolves, then calls
    /// through the same use cases as a gRPC call.
    pub async fn resolve(
        &self,
        caller: &Principal,
        name: &str,
    ) -> Result<ResolvedToolset, McpError> {
        let name = ToolsetName::parse(name).ok_or(McpError::ToolsetNotFound)?;
        let org = OrgId(caller.org_id.clone());
        let toolset = self
            .toolsets
            .get(&org, &name)
            .await?
            .ok_or(McpError::ToolsetNotFound)?;
        let ids: Vec<IntegrationId> = toolset
            .body
            .members
            .iter()
            .map(|m| m.integration_id)
            .collect();
        let heads: HashMap<IntegrationId, IntegrationHead> = self
            .integrations
            .heads(&org, &ids)
            .await
            .map_err(anyhow::Error::from)?
            .into_iter()
            .map(|head| (head.id, head))
            .collect();
        let mut members = Vec::with_capacity(toolset.body.members.len());
        for member in toolset.body.members {
            let id = member.integration_id;
            let Some(head) = heads.get(&id) else {
                tracing::warn!(toolset = %name, integration_id = %id, "a toolset member's integration is gone; left out");
                continue;
            };
            let slug = head.slug.as_str().to_owned();
            members.push(ResolvedMember {
                integration_id: id,
                prefix: slug.clone(),
                slug,
                enabled: head.enabled,
                tools: member.tools,
                resources: member.resources,
                overrides: member.overrides,
            });
        }
        Ok(ResolvedToolset {
            name: toolset.name,
            description: toolset.body.description,
            members,
        })
    }
}
