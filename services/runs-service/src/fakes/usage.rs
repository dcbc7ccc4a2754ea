//! The in-memory usage ledger of [`super::repository::MemoryRepository`],
//! added to as the SQL one is.

use std::collections::BTreeMap;

use crate::domain::{
    entities::{Message, Run, Thread},
    usage::{UsageDelta, UsageGroup, UsageQuery, UsageRow, day_of},
};

/// Usage by organization, day, agent and user.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    days: BTreeMap<(String, String, String, String), UsageDelta>,
}

impl Ledger {
    /// Adds what a write of `run` with `messages` used, its tokens stored
    /// as `before`.
    pub(super) fn add(
        &mut self,
        thread: &Thread,
        run: &Run,
        before: (i64, i64),
        messages: &[Message],
        started: bool,
    ) {
        let delta = UsageDelta::of_write(run, before, messages, started);
        if delta.is_empty() {
            return;
        }
        let key = (
            thread.org_id.clone(),
            day_of(run.updated_at),
            run.agent_id.to_string(),
            thread.user_id.clone(),
        );
        let day = self.days.entry(key).or_default();
        day.input_tokens += delta.input_tokens;
        day.output_tokens += delta.output_tokens;
        day.tool_calls += delta.tool_calls;
        day.runs += delta.runs;
    }

    /// The rows of `query`, as the SQL ledger gives them.
    pub(super) fn rows(&self, query: &UsageQuery) -> Vec<UsageRow> {
        let (from, to) = (
            query.from.format("%Y-%m-%d").to_string(),
            query.to.format("%Y-%m-%d").to_string(),
        );
        let mut rows: BTreeMap<(String, String, String), UsageDelta> = BTreeMap::new();
        for ((org, day, agent, user), used) in &self.days {
            if *org != query.org_id || *day < from || *day > to {
                continue;
            }
            let (agent, user) = match query.group {
                UsageGroup::Organization => (String::new(), String::new()),
                UsageGroup::Agent => (agent.clone(), String::new()),
                UsageGroup::User => (String::new(), user.clone()),
            };
            let row = rows.entry((day.clone(), agent, user)).or_default();
            row.input_tokens += used.input_tokens;
            row.output_tokens += used.output_tokens;
            row.tool_calls += used.tool_calls;
            row.runs += used.runs;
        }
        rows.into_iter()
            .map(|((period, agent_id, user_id), used)| UsageRow {
                period,
                agent_id,
                user_id,
                input_tokens: used.input_tokens,
                output_tokens: used.output_tokens,
                tool_calls: used.tool_calls,
                runs: used.runs,
            })
            .collect()
    }
}
