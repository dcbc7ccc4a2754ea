//! What an admin writes: a named toolset of integrations, each with an
//! optional selection of its tools and resources and overrides of how its
//! tools are shown.

use crate::domain::integration::IntegrationId;

/// Whether `name` may name a toolset: `^[a-z0-9][a-z0-9-]{0,62}$`, short,
/// lowercase and safe as a segment of the endpoint's URL path.
pub fn is_valid_name(name: &str) -> bool {
    let lower_or_digit = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match name.as_bytes() {
        [first, rest @ ..] => {
            rest.len() <= 62
                && lower_or_digit(first)
                && rest.iter().all(|b| lower_or_digit(b) || *b == b'-')
        }
        [] => false,
    }
}

/// The pattern [`is_valid_name`] checks, for error messages.
pub const NAME_PATTERN: &str = "^[a-z0-9][a-z0-9-]{0,62}$";

/// A toolset's name, unique in its organization.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolsetName(String);

impl ToolsetName {
    /// The name, when it has the shape of one.
    pub fn parse(name: &str) -> Option<Self> {
        is_valid_name(name).then(|| Self(name.to_owned()))
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ToolsetName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One integration of a toolset and what of it the toolset serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The integration, kept by id so that a renamed slug follows.
    pub integration_id: IntegrationId,
    /// The tools served, by the server's own names; every tool when `None`.
    pub tools: Option<Vec<String>>,
    /// The resources and templates served, by URI or URI template as the
    /// server lists them; every one when `None`.
    pub resources: Option<Vec<String>>,
    /// How some of its tools are shown, each tool at most once.
    pub overrides: Vec<ToolOverride>,
}

/// How a toolset shows one of a member's tools; the call still reaches the
/// server's own tool, under its own name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOverride {
    /// The server's own name of the tool.
    pub tool: String,
    /// The whole name the client sees instead of `{prefix}__{tool}`.
    pub name: Option<String>,
    /// The description the client reads instead of the server's.
    pub description: Option<String>,
    /// Not shown, and not callable.
    pub hidden: bool,
}

/// A toolset as written, before the service stamps who and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsetBody {
    /// What the toolset is for, for people.
    pub description: String,
    /// Its integrations, each at most once, in the order written.
    pub members: Vec<Member>,
}

/// A stored toolset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolset {
    /// Its name.
    pub name: ToolsetName,
    /// What was written.
    pub body: ToolsetBody,
    /// Who created it.
    pub created_by: String,
    /// When, Unix milliseconds.
    pub created_at: i64,
    /// Who changed it last.
    pub updated_by: String,
    /// When, Unix milliseconds.
    pub updated_at: i64,
}

/// The bounds of an organization's toolsets, set per deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolsetLimits {
    /// Most integrations one toolset may hold.
    pub max_members: usize,
    /// Most entries one tool or resource selection may hold.
    pub max_selection: usize,
    /// Most toolsets one organization may hold.
    pub max_toolsets_per_org: usize,
}

impl Default for ToolsetLimits {
    /// 32 members per toolset, 256 entries per selection, 100 toolsets per
    /// organization.
    fn default() -> Self {
        Self {
            max_members: 32,
            max_selection: 256,
            max_toolsets_per_org: 100,
        }
    }
}
