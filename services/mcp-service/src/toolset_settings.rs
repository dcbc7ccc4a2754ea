//! The settings of toolsets: how many members, selection entries and
//! toolsets an organization may have.

use crate::domain::toolset::model::ToolsetLimits;

/// Toolsets: the bounds of each organization's.
#[derive(Debug, Clone, clap::Args)]
pub struct ToolsetArgs {
    /// Most integrations one toolset may hold.
    #[arg(long = "toolset-max-members", env = "SWITCHBOARD_TOOLSET_MAX_MEMBERS", default_value_t = ToolsetLimits::default().max_members)]
    pub max_members: usize,
    /// Most entries one member's tool or resource selection may hold.
    #[arg(long = "toolset-max-selection", env = "SWITCHBOARD_TOOLSET_MAX_SELECTION", default_value_t = ToolsetLimits::default().max_selection)]
    pub max_selection: usize,
    /// Most toolsets one organization may hold.
    #[arg(long = "toolset-max-toolsets", env = "SWITCHBOARD_TOOLSET_MAX_TOOLSETS", default_value_t = ToolsetLimits::default().max_toolsets_per_org)]
    pub max_toolsets: usize,
}

impl Default for ToolsetArgs {
    fn default() -> Self {
        let limits = ToolsetLimits::default();
        Self {
            max_members: limits.max_members,
            max_selection: limits.max_selection,
            max_toolsets: limits.max_toolsets_per_org,
        }
    }
}

impl ToolsetArgs {
    /// The bounds of each organization's toolsets.
    pub fn limits(&self) -> ToolsetLimits {
        ToolsetLimits {
            max_members: self.max_members,
            max_selection: self.max_selection,
            max_toolsets_per_org: self.max_toolsets,
        }
    }
}
