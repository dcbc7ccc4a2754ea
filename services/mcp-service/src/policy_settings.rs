//! The settings of tool policies: each organization's compiled policies'
//! time to live, and how many policies and rules an organization may have.

use std::time::Duration;

use crate::domain::policy::model::PolicyLimits;

/// Tool policies: how long each organization's compiled policies are
/// reused, and how many an organization may have.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicyArgs {
    /// How long an organization's compiled policies are reused by later
    /// calls; a policy change through another replica takes effect within
    /// this time (through this one, at once).
    #[arg(long = "policy-cache-ttl", env = "SWITCHBOARD_POLICY_CACHE_TTL", default_value = "2s", value_parser = humantime::parse_duration)]
    pub cache_ttl: Duration,
    /// Most rules one policy may hold.
    #[arg(long = "policy-max-rules", env = "SWITCHBOARD_POLICY_MAX_RULES", default_value_t = PolicyLimits::default().max_rules_per_policy)]
    pub max_rules: usize,
    /// Most policies one organization may hold.
    #[arg(long = "policy-max-policies", env = "SWITCHBOARD_POLICY_MAX_POLICIES", default_value_t = PolicyLimits::default().max_policies_per_org)]
    pub max_policies: usize,
}

impl Default for PolicyArgs {
    fn default() -> Self {
        let limits = PolicyLimits::default();
        Self {
            cache_ttl: Duration::from_secs(2),
            max_rules: limits.max_rules_per_policy,
            max_policies: limits.max_policies_per_org,
        }
    }
}

impl PolicyArgs {
    /// The bounds of each organization's policies.
    pub fn limits(&self) -> PolicyLimits {
        PolicyLimits {
            max_rules_per_policy: self.max_rules,
            max_policies_per_org: self.max_policies,
        }
    }
}
