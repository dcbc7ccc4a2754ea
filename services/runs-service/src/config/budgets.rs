//! Settings of each organization's monthly token budget: one for all, and
//! overrides per organization in a file a platform operator mounts.

use std::{collections::HashMap, path::PathBuf};

use anyhow::{Context as _, ensure};
use serde::Deserialize;

use crate::domain::usage::Budgets;

/// The largest budgets file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most organizations one budgets file names.
const MAX_ORGANIZATIONS: usize = 10_000;

/// Monthly token budgets.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BudgetArgs {
    /// Tokens (in and out) one organization may use per UTC month before
    /// its new runs are refused with RESOURCE_EXHAUSTED; 0 for no budget.
    #[arg(
        long,
        env = "SWITCHBOARD_ORG_MONTHLY_TOKEN_BUDGET",
        default_value_t = 0
    )]
    pub org_monthly_token_budget: u64,
    /// Tokens one organization may use per UTC month before each new run
    /// starts with a `soft_budget_exceeded` event (and a metric); 0 for
    /// none.
    #[arg(
        long,
        env = "SWITCHBOARD_ORG_MONTHLY_TOKEN_SOFT_BUDGET",
        default_value_t = 0
    )]
    pub org_monthly_token_soft_budget: u64,
    /// A TOML file of budgets per organization, overriding the one for
    /// all: `[orgs."<org id>"]` with `monthly_tokens = N` and
    /// `soft_monthly_tokens = N` (0 for none; a key left out keeps the
    /// budget of all).
    #[arg(long, env = "SWITCHBOARD_ORG_BUDGETS_FILE")]
    pub org_budgets_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetsFile {
    #[serde(default)]
    orgs: HashMap<String, OrgBudget>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OrgBudget {
    monthly_tokens: Option<u64>,
    soft_monthly_tokens: Option<u64>,
}

/// 0 means none.
fn budget(tokens: u64) -> Option<u64> {
    (tokens > 0).then_some(tokens)
}

impl BudgetArgs {
    /// The budgets, the file read and checked.
    pub fn budgets(&self) -> anyhow::Result<Budgets> {
        let mut budgets = Budgets {
            monthly_tokens: budget(self.org_monthly_token_budget),
            soft_monthly_tokens: budget(self.org_monthly_token_soft_budget),
            ..Budgets::default()
        };
        if let Some(path) = &self.org_budgets_file {
            let shown = path.display();
            let size = std::fs::metadata(path)
                .with_context(|| format!("SWITCHBOARD_ORG_BUDGETS_FILE {shown}"))?
                .len();
            ensure!(
                size <= MAX_FILE_BYTES,
                "SWITCHBOARD_ORG_BUDGETS_FILE {shown} is larger than {MAX_FILE_BYTES} bytes"
            );
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("SWITCHBOARD_ORG_BUDGETS_FILE {shown}"))?;
            let file: BudgetsFile = toml::from_str(&text)
                .with_context(|| format!("SWITCHBOARD_ORG_BUDGETS_FILE {shown}"))?;
            ensure!(
                file.orgs.len() <= MAX_ORGANIZATIONS,
                "SWITCHBOARD_ORG_BUDGETS_FILE {shown} names more than {MAX_ORGANIZATIONS} organizations"
            );
            for (org, named) in file.orgs {
                if let Some(tokens) = named.monthly_tokens {
                    budgets.overrides.insert(org.clone(), budget(tokens));
                }
                if let Some(tokens) = named.soft_monthly_tokens {
                    budgets.soft_overrides.insert(org, budget(tokens));
                }
            }
        }
        Ok(budgets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().expect("a file");
        std::fs::write(file.path(), text).expect("written");
        file
    }

    #[test]
    fn the_file_overrides_the_budget_of_all() {
        let overrides = file(
            "[orgs.big]\nmonthly_tokens = 5000000\nsoft_monthly_tokens = 4000000\n\
             [orgs.\"exempt-1\"]\nmonthly_tokens = 0\n[orgs.watched]\nsoft_monthly_tokens = 10\n",
        );
        let args = BudgetArgs {
            org_monthly_token_budget: 1000,
            org_monthly_token_soft_budget: 800,
            org_budgets_file: Some(overrides.path().to_owned()),
        };
        let budgets = args.budgets().expect("read");
        assert_eq!(budgets.monthly_tokens("trial"), Some(1000));
        assert_eq!(budgets.monthly_tokens("big"), Some(5_000_000));
        assert_eq!(budgets.monthly_tokens("exempt-1"), None);
        assert_eq!(budgets.soft_monthly_tokens("trial"), Some(800));
        assert_eq!(budgets.soft_monthly_tokens("big"), Some(4_000_000));
        // A key left out keeps the budget of all.
        assert_eq!(budgets.soft_monthly_tokens("exempt-1"), Some(800));
        assert_eq!(budgets.monthly_tokens("watched"), Some(1000));
        assert_eq!(budgets.soft_monthly_tokens("watched"), Some(10));
        assert!(budgets.names("watched") && !budgets.names("trial"));
        assert_eq!(
            BudgetArgs::default()
                .budgets()
                .expect("none")
                .monthly_tokens("x"),
            None
        );
    }

    #[test]
    fn a_file_naming_the_most_organizations_is_read() {
        let most: String = (0..MAX_ORGANIZATIONS)
            .map(|i| format!("[orgs.o{i}]\nmonthly_tokens = 1\n"))
            .collect();
        let file = file(&most);
        let args = BudgetArgs {
            org_budgets_file: Some(file.path().to_owned()),
            ..BudgetArgs::default()
        };
        assert_eq!(
            args.budgets().expect("read").overrides.len(),
            MAX_ORGANIZATIONS
        );
    }

    #[test]
    fn a_file_with_an_unknown_key_or_past_its_size_is_refused() {
        for text in [
            "[orgs.a]\nmonthly_token = 5\n".to_owned(),
            "[orgs.a]\nmonthly_tokens = -5\n".to_owned(),
            "# x\n".repeat(400_000),
            (0..=MAX_ORGANIZATIONS)
                .map(|i| format!("[orgs.o{i}]\nmonthly_tokens = 1\n"))
                .collect(),
        ] {
            let bad = file(&text);
            let args = BudgetArgs {
                org_budgets_file: Some(bad.path().to_owned()),
                ..BudgetArgs::default()
            };
            assert!(args.budgets().is_err(), "{}", &text[..20.min(text.len())]);
        }
    }
}
