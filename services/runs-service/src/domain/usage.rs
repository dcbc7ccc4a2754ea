//! What an organization used: tokens, tool calls and runs per agent, user
//! and UTC day, summed by day or by month for chargeback.

use std::collections::HashMap;

use chrono::{Datelike as _, NaiveDate};
use serde::{Deserialize, Serialize};

use super::entities::{Message, Role, Run};

/// The most days one usage query may span.
pub const MAX_USAGE_DAYS: i64 = 400;

/// How usage rows are split besides the period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGroup {
    /// One row per period for the whole organization.
    Organization,
    /// One row per period and agent.
    Agent,
    /// One row per period and user.
    User,
}

/// How long one row's period is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsagePeriod {
    /// A UTC day, `YYYY-MM-DD`.
    Day,
    /// A UTC month, `YYYY-MM`.
    Month,
}

/// Which usage to sum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageQuery {
    /// The caller's organization.
    pub org_id: String,
    /// The first day, inclusive.
    pub from: NaiveDate,
    /// The last day, inclusive.
    pub to: NaiveDate,
    /// How rows are split.
    pub group: UsageGroup,
    /// How long a row's period is.
    pub period: UsagePeriod,
}

/// Usage summed over one period (and agent or user, when grouped so).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageRow {
    /// `YYYY-MM-DD` or `YYYY-MM`.
    pub period: String,
    /// The agent, when grouped by agent.
    pub agent_id: String,
    /// The user, when grouped by user.
    pub user_id: String,
    /// Tokens sent to the model.
    pub input_tokens: i64,
    /// Tokens the model produced.
    pub output_tokens: i64,
    /// Tool calls answered (MCP, built-in and client tools).
    pub tool_calls: i64,
    /// Runs started.
    pub runs: i64,
}

/// The usage a run write adds, and to whom.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageDelta {
    /// Tokens sent to the model.
    pub input_tokens: i64,
    /// Tokens the model produced.
    pub output_tokens: i64,
    /// Tool calls answered.
    pub tool_calls: i64,
    /// Runs started.
    pub runs: i64,
}

impl UsageDelta {
    /// What a write of `run` with `messages` adds: its tokens were stored
    /// as `before` (zero for a new run), `started` when it inserts the run,
    /// a tool call per tool result among the messages.
    #[must_use]
    pub fn of_write(run: &Run, before: (i64, i64), messages: &[Message], started: bool) -> Self {
        Self {
            // Totals only grow; a smaller one (a write replayed out of
            // order) adds nothing.
            input_tokens: run.usage.input_tokens.saturating_sub(before.0).max(0),
            output_tokens: run.usage.output_tokens.saturating_sub(before.1).max(0),
            tool_calls: Self::tool_calls(messages),
            runs: i64::from(started),
        }
    }

    /// The tool calls `messages` answer: one per tool result.
    #[must_use]
    pub fn tool_calls(messages: &[Message]) -> i64 {
        let answered = messages.iter().filter(|m| m.role == Role::Tool).count();
        i64::try_from(answered).unwrap_or(i64::MAX)
    }

    /// Whether it adds nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Each organization's hard budget of tokens (in and out) per UTC month:
/// one for all, and overrides per organization. A run does not start once
/// its organization used its budget this month; runs in flight finish, so
/// usage may go past the budget by what they use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budgets {
    /// The budget of an organization without an override; `None` for none.
    pub monthly_tokens: Option<u64>,
    /// Budgets of named organizations, `None` for none.
    pub overrides: HashMap<String, Option<u64>>,
    /// The soft budget of an organization without an override: past it a
    /// new run starts with a warning; `None` for none.
    pub soft_monthly_tokens: Option<u64>,
    /// Soft budgets of named organizations, `None` for none.
    pub soft_overrides: HashMap<String, Option<u64>>,
}

/// An organization past its soft monthly budget, told when a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftBudgetPassed {
    /// Tokens used this month when the run started.
    pub used_tokens: u64,
    /// The soft budget.
    pub soft_budget_tokens: u64,
}

impl Budgets {
    /// `org`'s monthly token budget, if it has one.
    #[must_use]
    pub fn monthly_tokens(&self, org: &str) -> Option<u64> {
        self.overrides
            .get(org)
            .copied()
            .unwrap_or(self.monthly_tokens)
    }

    /// `org`'s soft monthly token budget, if it has one.
    #[must_use]
    pub fn soft_monthly_tokens(&self, org: &str) -> Option<u64> {
        self.soft_overrides
            .get(org)
            .copied()
            .unwrap_or(self.soft_monthly_tokens)
    }

    /// Whether the operator named `org` in the budgets file (so that it
    /// may be a metric's label value: the file bounds them).
    #[must_use]
    pub fn names(&self, org: &str) -> bool {
        self.overrides.contains_key(org) || self.soft_overrides.contains_key(org)
    }

    /// Whether any budget, hard or soft, may apply to some organization.
    #[must_use]
    pub fn any(&self) -> bool {
        self.monthly_tokens.is_some()
            || self.soft_monthly_tokens.is_some()
            || self.overrides.values().any(Option::is_some)
            || self.soft_overrides.values().any(Option::is_some)
    }

    /// The query of `org`'s usage this month, up to `today`.
    #[must_use]
    pub fn month_to_date(org: &str, today: NaiveDate) -> UsageQuery {
        UsageQuery {
            org_id: org.to_owned(),
            from: today.with_day(1).unwrap_or(today),
            to: today,
            group: UsageGroup::Organization,
            period: UsagePeriod::Month,
        }
    }
}

/// The UTC day of a time in Unix milliseconds, `YYYY-MM-DD`.
#[must_use]
pub fn day_of(unix_millis: i64) -> String {
    chrono::DateTime::from_timestamp_millis(unix_millis)
        .unwrap_or_default()
        .format("%Y-%m-%d")
        .to_string()
}

/// Sums `rows` of days into rows of `period`, keeping their order (days
/// ascending, then agent and user).
#[must_use]
pub fn by_period(rows: Vec<UsageRow>, period: UsagePeriod) -> Vec<UsageRow> {
    if period == UsagePeriod::Day {
        return rows;
    }
    let mut summed: Vec<UsageRow> = Vec::new();
    let mut monthly: Vec<UsageRow> = rows
        .into_iter()
        .map(|mut row| {
            row.period.truncate(7);
            row
        })
        .collect();
    monthly.sort_by(|a, b| {
        (&a.period, &a.agent_id, &a.user_id).cmp(&(&b.period, &b.agent_id, &b.user_id))
    });
    for row in monthly {
        match summed.last_mut() {
            Some(last)
                if last.period == row.period
                    && last.agent_id == row.agent_id
                    && last.user_id == row.user_id =>
            {
                last.input_tokens = last.input_tokens.saturating_add(row.input_tokens);
                last.output_tokens = last.output_tokens.saturating_add(row.output_tokens);
                last.tool_calls = last.tool_calls.saturating_add(row.tool_calls);
                last.runs = last.runs.saturating_add(row.runs);
            }
            _ => summed.push(row),
        }
    }
    summed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(period: &str, agent: &str, tokens: i64) -> UsageRow {
        UsageRow {
            period: period.into(),
            agent_id: agent.into(),
            input_tokens: tokens,
            runs: 1,
            ..UsageRow::default()
        }
    }

    #[test]
    fn days_sum_into_months_per_agent() {
        let days = vec![
            row("2026-10-31", "a", 1),
            row("2026-11-01", "a", 2),
            row("2026-11-01", "b", 4),
            row("2026-11-30", "a", 8),
        ];
        let months = by_period(days.clone(), UsagePeriod::Month);
        assert_eq!(
            months,
            [
                row("2026-10", "a", 1),
                UsageRow {
                    runs: 2,
                    ..row("2026-11", "a", 10)
                },
                row("2026-11", "b", 4),
            ]
        );
        assert_eq!(by_period(days.clone(), UsagePeriod::Day), days);
    }

    #[test]
    fn an_override_wins_over_the_budget_of_all_even_when_it_lifts_it() {
        let budgets = Budgets {
            monthly_tokens: Some(1_000),
            overrides: HashMap::from([
                ("big".to_owned(), Some(1_000_000)),
                ("exempt".to_owned(), None),
            ]),
            ..Budgets::default()
        };
        assert_eq!(budgets.monthly_tokens("any"), Some(1_000));
        assert_eq!(budgets.monthly_tokens("big"), Some(1_000_000));
        assert_eq!(budgets.monthly_tokens("exempt"), None);
        let today = NaiveDate::from_ymd_opt(2026, 11, 26).expect("a day");
        let query = Budgets::month_to_date("any", today);
        assert_eq!(
            query.from,
            NaiveDate::from_ymd_opt(2026, 11, 1).expect("a day")
        );
        assert_eq!(query.to, today);
    }

    #[test]
    fn a_day_is_the_utc_date() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(1_795_000_000_000), "2026-11-18");
        assert_eq!(
            day_of(i64::MAX),
            "1970-01-01",
            "out of range reads as the epoch"
        );
    }
}
