//! Settings of runs in flight per organization and per user.

use anyhow::ensure;

use crate::domain::run::RunLimits;

/// Runs of one organization in flight on a replica: a run holds a model
/// stream and up to `SWITCHBOARD_MAX_PARALLEL_TOOLS` tool calls, so 64 of
/// them are hundreds of upstream calls, a quarter of the default
/// per-organization call limit.
const DEFAULT_MAX_RUNS_PER_ORG: usize = 64;
/// Runs of one user in flight on a replica: enough for a person with several
/// threads going, not for one script to take its organization's share.
const DEFAULT_MAX_RUNS_PER_USER: usize = 16;

/// How many runs may be in flight at once, counted over every replica (the
/// runs running in the database, read when a run starts).
#[derive(Debug, Clone, clap::Args)]
pub struct RunLimitArgs {
    /// Runs of one organization in flight at once on all replicas together
    /// (detached ones included); more are refused with RESOURCE_EXHAUSTED.
    #[arg(long, env = "SWITCHBOARD_MAX_RUNS_PER_ORG", default_value_t = DEFAULT_MAX_RUNS_PER_ORG)]
    pub max_runs_per_org: usize,
    /// Runs of one user in flight at once on all replicas together; at most
    /// SWITCHBOARD_MAX_RUNS_PER_ORG.
    #[arg(long, env = "SWITCHBOARD_MAX_RUNS_PER_USER", default_value_t = DEFAULT_MAX_RUNS_PER_USER)]
    pub max_runs_per_user: usize,
}

impl Default for RunLimitArgs {
    fn default() -> Self {
        Self {
            max_runs_per_org: DEFAULT_MAX_RUNS_PER_ORG,
            max_runs_per_user: DEFAULT_MAX_RUNS_PER_USER,
        }
    }
}

impl RunLimitArgs {
    /// The limits, or why they contradict each other.
    pub fn run_limits(&self) -> anyhow::Result<RunLimits> {
        ensure!(
            self.max_runs_per_user >= 1 && self.max_runs_per_user <= self.max_runs_per_org,
            "SWITCHBOARD_MAX_RUNS_PER_USER ({}) must be at least 1 and at most \
             SWITCHBOARD_MAX_RUNS_PER_ORG ({})",
            self.max_runs_per_user,
            self.max_runs_per_org
        );
        Ok(RunLimits {
            per_org: self.max_runs_per_org,
            per_user: self.max_runs_per_user,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Limits {
        #[command(flatten)]
        limits: RunLimitArgs,
    }

    #[test]
    fn the_defaults_match_the_flags_and_a_user_limit_above_the_organization_is_refused() {
        let parsed = Limits::try_parse_from(["runs-service"]).expect("defaults parse");
        assert_eq!(
            parsed.limits.run_limits().expect("valid"),
            RunLimitArgs::default().run_limits().expect("valid")
        );
        let parsed = Limits::try_parse_from([
            "runs-service",
            "--max-runs-per-org",
            "2",
            "--max-runs-per-user",
            "3",
        ])
        .expect("parsed");
        let error = parsed
            .limits
            .run_limits()
            .expect_err("3 per user, 2 per org");
        assert!(
            error.to_string().contains("SWITCHBOARD_MAX_RUNS_PER_USER"),
            "{error}"
        );
    }
}
