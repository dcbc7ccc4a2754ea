//! [`RunsRepository`] in memory, with the same rules as the SQL one: one
//! active run per thread, messages numbered per thread, scoped reads. The
//! repository suite in `tests/it` holds it to them.

use std::sync::Mutex;

use async_trait::async_trait;

use self::state::State;
use crate::domain::{
    entities::{Agent, Message, Run, RunStatus, Thread},
    events::Envelope,
    history::{HistoryLimits, WindowMeter},
    ids::{AgentId, RunId, ThreadId},
    pins::{ChangeAnswer, ToolPin},
    ports::{Cursor, LeaseState, LiveRuns, RepositoryError, RunsRepository},
    usage::{UsageQuery, UsageRow},
};

mod inspect;
mod pins;
mod state;

/// Agents, threads, messages and runs in memory.
#[derive(Debug, Default)]
pub struct MemoryRepository {
    state: Mutex<State>,
}

impl MemoryRepository {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self
            .state
            .lock()
            .expect("a test never panics holding the lock");
        f(&mut state)
    }
}

fn active(status: RunStatus) -> bool {
    matches!(status, RunStatus::Running | RunStatus::RequiresAction)
}

#[async_trait]
impl RunsRepository for MemoryRepository {
    async fn insert_agent(&self, agent: &Agent) -> Result<(), RepositoryError> {
        self.with(|s| s.agents.push(agent.clone()));
        Ok(())
    }

    async fn get_agent(&self, org: &str, id: AgentId) -> Result<Option<Agent>, RepositoryError> {
        Ok(self.with(|s| {
            s.agents
                .iter()
                .find(|a| a.org_id == org && a.id == id)
                .cloned()
        }))
    }

    async fn list_agents(
        &self,
        org: &str,
        after: Cursor,
        limit: u32,
    ) -> Result<Vec<Agent>, RepositoryError> {
        Ok(self.with(|s| {
            let mut agents: Vec<Agent> = s
                .agents
                .iter()
                .filter(|a| a.org_id == org)
                .filter(|a| {
                    after
                        .as_ref()
                        .is_none_or(|(at, id)| (a.created_at, a.id.to_string()) > (*at, id.clone()))
                })
                .cloned()
                .collect();
            agents.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            agents.truncate(limit as usize);
            agents
        }))
    }

    async fn update_agent(&self, agent: &Agent) -> Result<bool, RepositoryError> {
        Ok(self.with(|s| {
            s.agents
                .iter_mut()
                .find(|a| a.org_id == agent.org_id && a.id == agent.id)
                .map(|stored| *stored = agent.clone())
                .is_some()
        }))
    }

    async fn delete_agent(&self, org: &str, id: AgentId) -> Result<bool, RepositoryError> {
        Ok(self.with(|s| {
            let before = s.agents.len();
            s.agents.retain(|a| !(a.org_id == org && a.id == id));
            s.agents.len() < before
        }))
    }

    async fn insert_thread(&self, thread: &Thread) -> Result<(), RepositoryError> {
        self.with(|s| s.threads.push(thread.clone()));
        Ok(())
    }

    async fn get_thread(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<Thread>, RepositoryError> {
        Ok(self.with(|s| {
            s.threads
                .iter()
                .find(|t| t.org_id == org && t.user_id == user && t.id == id)
                .cloned()
        }))
    }

    async fn get_thread_with_agent(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<Option<(Thread, Option<Agent>)>, RepositoryError> {
        let Some(thread) = self.get_thread(org, user, id).await? else {
            return Ok(None);
        };
        let agent = self.get_agent(org, thread.agent_id).await?;
        Ok(Some((thread, agent)))
    }

    async fn list_threads(
        &self,
        org: &str,
        user: &str,
        agent: Option<AgentId>,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Thread>, RepositoryError> {
        Ok(self.with(|s| {
            let mut threads: Vec<Thread> = s
                .threads
                .iter()
                .filter(|t| t.org_id == org && t.user_id == user)
                .filter(|t| agent.is_none_or(|agent| t.agent_id == agent))
                .filter(|t| {
                    before
                        .as_ref()
                        .is_none_or(|(at, id)| (t.created_at, t.id.to_string()) < (*at, id.clone()))
                })
                .cloned()
                .collect();
            threads.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
            threads.truncate(limit as usize);
            threads
        }))
    }

    async fn delete_thread(
        &self,
        org: &str,
        user: &str,
        id: ThreadId,
    ) -> Result<bool, RepositoryError> {
        Ok(self.with(|s| {
            let before = s.threads.len();
            s.threads
                .retain(|t| !(t.org_id == org && t.user_id == user && t.id == id));
            let deleted = s.threads.len() < before;
            // As in SQL: a thread's messages, pins, runs and their events go
            // with it.
            if deleted {
                s.messages.retain(|m| m.thread_id != id);
                s.pins.forget(id);
                let (gone, kept) = std::mem::take(&mut s.runs)
                    .into_iter()
                    .partition::<Vec<Run>, _>(|r| r.thread_id == id);
                s.runs = kept;
                s.events.retain(|e| gone.iter().all(|r| r.id != e.run_id));
            }
            deleted
        }))
    }

    async fn append_messages(
        &self,
        thread_id: ThreadId,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        // As in SQL: nothing to append is no write, whatever the thread.
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        self.with(|s| s.append(thread_id, messages))
    }

    async fn list_messages(
        &self,
        thread_id: ThreadId,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Message>, RepositoryError> {
        Ok(self.with(|s| {
            s.messages
                .iter()
                .filter(|m| m.thread_id == thread_id && m.seq > after_seq)
                .take(limit as usize)
                .cloned()
                .collect()
        }))
    }

    async fn recent_messages(
        &self,
        thread_id: ThreadId,
        limits: HistoryLimits,
    ) -> Result<Vec<Message>, RepositoryError> {
        let mut meter = WindowMeter::new(limits);
        let mut newest_first: Vec<Message> = self
            .messages(thread_id)
            .into_iter()
            .rev()
            .take(limits.max_messages as usize)
            .take_while(|m| meter.admits(m.size()))
            .collect();
        newest_first.reverse();
        Ok(newest_first)
    }

    async fn start_run_with(
        &self,
        run: &Run,
        input: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        self.with(|s| {
            if s.runs
                .iter()
                .any(|r| r.thread_id == run.thread_id && active(r.status))
            {
                return Err(RepositoryError::ThreadBusy);
            }
            // As in SQL: the run and its input are stored together or not at
            // all, and a run needs its thread.
            let seqs = s.append(run.thread_id, input)?;
            s.runs.push(run.clone());
            s.record_usage(run, (0, 0), input, true);
            Ok(seqs)
        })
    }

    async fn update_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Vec<i64>, RepositoryError> {
        self.with(|s| {
            // As in SQL: a run that ended elsewhere is never overwritten.
            if !s.runs.iter().any(|r| r.id == run.id && active(r.status)) {
                return Err(RepositoryError::RunEnded);
            }
            let seqs = s.append(run.thread_id, messages)?;
            s.save_run(run, messages);
            Ok(seqs)
        })
    }

    async fn resume_run(&self, run_id: RunId, now: i64) -> Result<bool, RepositoryError> {
        Ok(self.with(|s| {
            s.runs
                .iter_mut()
                .find(|r| r.id == run_id && r.status == RunStatus::RequiresAction)
                .map(|r| {
                    r.status = RunStatus::Running;
                    r.updated_at = now;
                })
                .is_some()
        }))
    }

    async fn resume_run_with(
        &self,
        run: &Run,
        messages: &[Message],
    ) -> Result<Option<Vec<i64>>, RepositoryError> {
        self.with(|s| {
            let paused = s
                .runs
                .iter()
                .any(|r| r.id == run.id && r.status == RunStatus::RequiresAction);
            if !paused {
                return Ok(None);
            }
            let seqs = s.append(run.thread_id, messages)?;
            s.save_run(run, messages);
            Ok(Some(seqs))
        })
    }

    async fn get_run(
        &self,
        thread_id: ThreadId,
        id: RunId,
    ) -> Result<Option<Run>, RepositoryError> {
        Ok(self.run(id).filter(|r| r.thread_id == thread_id))
    }

    async fn find_run(&self, id: RunId) -> Result<Option<Run>, RepositoryError> {
        Ok(self.run(id))
    }

    async fn heartbeat(
        &self,
        run_ids: &[RunId],
    ) -> Result<Vec<(RunId, LeaseState)>, RepositoryError> {
        // Leases in memory never expire: there is no other process.
        Ok(self.with(|s| {
            run_ids
                .iter()
                .map(|id| {
                    // As in SQL: only another process's end takes a run.
                    let state = match s.runs.iter().find(|r| r.id == *id).map(|r| r.status) {
                        None | Some(RunStatus::Interrupted | RunStatus::Cancelled) => {
                            LeaseState::Lost
                        }
                        Some(RunStatus::Running) if s.cancel_requested.contains(id) => {
                            LeaseState::CancelRequested
                        }
                        Some(_) => LeaseState::Held,
                    };
                    (*id, state)
                })
                .collect()
        }))
    }

    async fn interrupt_expired_runs(&self) -> Result<u64, RepositoryError> {
        Ok(0)
    }

    async fn interrupt_previous_process_runs(&self) -> Result<u64, RepositoryError> {
        Ok(0)
    }

    async fn list_runs(
        &self,
        thread_id: ThreadId,
        before: Cursor,
        limit: u32,
    ) -> Result<Vec<Run>, RepositoryError> {
        Ok(self.with(|s| {
            let mut runs: Vec<Run> = s
                .runs
                .iter()
                .filter(|r| r.thread_id == thread_id)
                .filter(|r| {
                    before.as_ref().is_none_or(|(time, id)| {
                        (r.created_at, r.id.to_string()) < (*time, id.clone())
                    })
                })
                .cloned()
                .collect();
            runs.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
            runs.truncate(limit as usize);
            runs
        }))
    }

    async fn request_cancel(
        &self,
        run_id: RunId,
        reason: &str,
    ) -> Result<Option<Run>, RepositoryError> {
        Ok(self.with(|s| {
            let run = s.runs.iter_mut().find(|r| r.id == run_id)?;
            match run.status {
                RunStatus::RequiresAction => {
                    run.status = RunStatus::Cancelled;
                    run.error = Some(reason.to_owned());
                    run.pending.clear();
                }
                RunStatus::Running => s.cancel_requested.push(run_id),
                _ => {}
            }
            s.runs.iter().find(|r| r.id == run_id).cloned()
        }))
    }

    async fn append_run_events(&self, events: &[Envelope]) -> Result<(), RepositoryError> {
        self.with(|s| {
            for event in events {
                let stored = s
                    .events
                    .iter()
                    .any(|e| e.run_id == event.run_id && e.sequence == event.sequence);
                if !stored {
                    s.events.push(event.clone());
                }
            }
        });
        Ok(())
    }

    async fn run_events(
        &self,
        run_id: RunId,
        from: i64,
        limit: u32,
    ) -> Result<Vec<Envelope>, RepositoryError> {
        Ok(self.with(|s| {
            s.events
                .iter()
                .filter(|e| e.run_id == run_id && e.sequence >= from)
                .take(limit as usize)
                .cloned()
                .collect()
        }))
    }

    async fn last_run_event(&self, run_id: RunId) -> Result<i64, RepositoryError> {
        Ok(self.with(|s| {
            s.events
                .iter()
                .filter(|e| e.run_id == run_id)
                .map(|e| e.sequence)
                .max()
                .unwrap_or(0)
        }))
    }

    async fn pin_tools(
        &self,
        thread_id: ThreadId,
        offered: &[ToolPin],
    ) -> Result<Vec<ToolPin>, RepositoryError> {
        self.with(|s| s.pins.pin(&s.threads, thread_id, offered))
    }

    async fn repin_tools(
        &self,
        thread_id: ThreadId,
        pins: &[ToolPin],
    ) -> Result<(), RepositoryError> {
        self.with(|s| s.pins.repin(&s.threads, thread_id, pins))
    }

    async fn keep_tool_changes(
        &self,
        thread_id: ThreadId,
        changed: &[ToolPin],
    ) -> Result<(), RepositoryError> {
        self.with(|s| s.pins.keep_changes(&s.threads, thread_id, changed))
    }

    async fn accept_tool_change(
        &self,
        thread_id: ThreadId,
        name: &str,
        digest: &str,
    ) -> Result<ChangeAnswer, RepositoryError> {
        Ok(self.with(|s| s.pins.accept_change(thread_id, name, digest)))
    }

    async fn usage(&self, query: &UsageQuery) -> Result<Vec<UsageRow>, RepositoryError> {
        Ok(self.with(|s| s.usage.rows(query)))
    }

    async fn live_runs(&self, org: &str, user: &str) -> Result<LiveRuns, RepositoryError> {
        Ok(self.with(|s| {
            let mut live = LiveRuns::default();
            for run in s.runs.iter().filter(|r| r.status == RunStatus::Running) {
                let Some(thread) = s.threads.iter().find(|t| t.id == run.thread_id) else {
                    continue;
                };
                if thread.org_id == org {
                    live.org += 1;
                    live.user += u64::from(thread.user_id == user);
                }
            }
            live
        }))
    }
}
