//! What an MCP client connected to Switchboard sees: a surface of one or
//! more integrations, each member's tools and prompts under their own names
//! or behind a prefix, narrowed to a selection.
//!
//! One integration passed through is a surface of one member without a
//! prefix; a toolset is a surface of several, names prefixed
//! `{prefix}__{name}` as runs-service prefixes an agent's tools, some of
//! them shown as the toolset's overrides say (renamed, described anew or
//! hidden) while calls still reach the server's own tool.

use std::collections::{BTreeMap, BTreeSet};

use super::integration::IntegrationId;

/// What joins a prefix and a member's own name.
pub const PREFIX_SEPARATOR: &str = "__";

/// One integration on a surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The integration.
    pub integration: IntegrationId,
    /// The prefix of its tool and prompt names; none for a surface of one.
    pub prefix: Option<String>,
    /// The tools (its own names) shown; all when none.
    pub tools: Option<BTreeSet<String>>,
    /// The resources (URIs) shown; all when none.
    pub resources: Option<BTreeSet<String>>,
    /// How some tools (by their own names) are shown instead.
    pub overrides: BTreeMap<String, Shown>,
}

/// How a surface shows one of a member's tools instead of as its server
/// lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shown {
    /// The whole name the client sees and calls, instead of the prefixed
    /// one (which then reaches nothing).
    pub name: Option<String>,
    /// The description the client reads instead of the server's.
    pub description: Option<String>,
    /// Not shown, and not callable.
    pub hidden: bool,
}

impl Member {
    /// All of `integration`, under its own names.
    pub fn whole(integration: IntegrationId) -> Self {
        Self {
            integration,
            prefix: None,
            tools: None,
            resources: None,
            overrides: BTreeMap::new(),
        }
    }

    /// Whether the member's tool `name` (its own name) is on the surface.
    pub fn shows_tool(&self, name: &str) -> bool {
        self.tools.as_ref().is_none_or(|tools| tools.contains(name))
            && !self.overrides.get(name).is_some_and(|shown| shown.hidden)
    }

    /// The name a client sees for the member's own tool `name`: the
    /// override's, else the prefixed one.
    pub fn exposed_tool(&self, name: &str) -> String {
        match self.overrides.get(name).and_then(|s| s.name.as_ref()) {
            Some(renamed) => renamed.clone(),
            None => self.exposed(name),
        }
    }

    /// The description an override gives the member's own tool `name`.
    pub fn tool_description(&self, name: &str) -> Option<&str> {
        self.overrides.get(name)?.description.as_deref()
    }

    /// The member's own tool that an override names `exposed`, if shown.
    fn renamed_to(&self, exposed: &str) -> Option<&str> {
        self.overrides
            .iter()
            .find(|(own, shown)| shown.name.as_deref() == Some(exposed) && self.shows_tool(own))
            .map(|(own, _)| own.as_str())
    }

    /// Whether an override gives the member's own tool `name` another name.
    fn is_renamed(&self, name: &str) -> bool {
        self.overrides.get(name).is_some_and(|s| s.name.is_some())
    }

    /// Whether the member's resource `uri` is on the surface.
    pub fn shows_resource(&self, uri: &str) -> bool {
        self.resources
            .as_ref()
            .is_none_or(|resources| resources.contains(uri))
    }

    /// The name a client sees for the member's own `name`.
    pub fn exposed(&self, name: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{PREFIX_SEPARATOR}{name}"),
            None => name.to_owned(),
        }
    }

    /// The member's own name behind `exposed`, if `exposed` is one of its.
    fn own<'a>(&self, exposed: &'a str) -> Option<&'a str> {
        match &self.prefix {
            Some(prefix) => exposed
                .strip_prefix(prefix.as_str())?
                .strip_prefix(PREFIX_SEPARATOR),
            None => Some(exposed),
        }
    }
}

/// The integrations an MCP client reaches through one endpoint path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surface {
    members: Vec<Member>,
}

impl Surface {
    /// One integration, passed through under its own names.
    pub fn integration(id: IntegrationId) -> Self {
        Self {
            members: vec![Member::whole(id)],
        }
    }

    /// Several members; names of members with prefixes do not collide when
    /// the prefixes differ and contain no separator.
    pub fn of(members: Vec<Member>) -> Self {
        Self { members }
    }

    /// Its members, in order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The member and its own name that a client's tool or prompt name
    /// `exposed` reaches, if any: the first member whose prefix matches.
    pub fn route<'a>(&self, exposed: &'a str) -> Option<(&Member, &'a str)> {
        self.members
            .iter()
            .find_map(|member| member.own(exposed).map(|own| (member, own)))
    }

    /// The member and its own tool name that a client's tool name `exposed`
    /// reaches: the tool an override names so, else the first member (the
    /// longest prefix, as a toolset orders them) whose prefix matches and
    /// that shows that tool under its prefixed name. Slugs may hold
    /// underscores, so `a___x` is `a_` + `x` when `a_` shows `x`, else
    /// `a` + `_x`.
    pub fn route_tool<'a>(&'a self, exposed: &'a str) -> Option<(&'a Member, &'a str)> {
        let renamed = self
            .members
            .iter()
            .find_map(|member| member.renamed_to(exposed).map(|own| (member, own)));
        renamed.or_else(|| {
            self.members.iter().find_map(|member| {
                member
                    .own(exposed)
                    .filter(|own| member.shows_tool(own) && !member.is_renamed(own))
                    .map(|own| (member, own))
            })
        })
    }

    /// The member a resource `uri` is read from: the only one, or the first
    /// whose selection names it.
    pub fn resource_member(&self, uri: &str) -> Option<&Member> {
        match self.members.as_slice() {
            [only] => only.shows_resource(uri).then_some(only),
            members => members
                .iter()
                .find(|m| m.resources.as_ref().is_some_and(|r| r.contains(uri))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> IntegrationId {
        IntegrationId::new()
    }

    #[test]
    fn an_integration_passes_names_through() {
        let surface = Surface::integration(id());
        let (member, own) = surface.route("echo").expect("routed");
        assert_eq!(own, "echo");
        assert_eq!(member.exposed("echo"), "echo");
        assert!(surface.resource_member("file:///a").is_some());
    }

    #[test]
    fn prefixed_members_route_by_prefix_and_selection() {
        let (a, b) = (id(), id());
        let surface = Surface::of(vec![
            Member {
                prefix: Some("github".into()),
                tools: Some(["search".to_owned()].into()),
                ..Member::whole(a)
            },
            Member {
                prefix: Some("jira".into()),
                resources: Some(["jira://board".to_owned()].into()),
                ..Member::whole(b)
            },
        ]);
        let (member, own) = surface.route("jira__create").expect("routed");
        assert_eq!((member.integration, own), (b, "create"));
        assert_eq!(member.exposed("create"), "jira__create");
        let (member, own) = surface.route("github__search").expect("routed");
        assert_eq!((member.integration, own), (a, "search"));
        assert!(member.shows_tool("search"));
        assert!(!member.shows_tool("delete"));
        assert!(surface.route("create").is_none());
        assert!(surface.route("githubsearch").is_none());
        assert_eq!(
            surface
                .resource_member("jira://board")
                .map(|m| m.integration),
            Some(b)
        );
        assert!(surface.resource_member("file:///a").is_none());
    }
}
