//! Agents, threads and messages: tenancy, roles and validation.

use bytes::Bytes;
use std::sync::Arc;

use switchboard_auth::Principal;
use switchboard_db::now_millis;
use switchboard_server::FieldViolation;

use super::{
    datasource::{DataSource, DataSources, ImportError},
    entities::{Agent, AgentConfig, MAX_FALLBACK_MODELS, Message, ModelChoice, Run, Thread},
    error::RunsError,
    ids::{AgentId, RunId, ThreadId},
    pins::ChangeAnswer,
    ports::{Cursor, RunsRepository},
    texts,
    tools::valid_tool_name,
    usage::{UsageQuery, UsageRow, by_period},
};

/// Manages agents, threads and messages for the caller.
#[derive(Clone)]
pub struct RunsService {
    repo: Arc<dyn RunsRepository>,
    known_providers: Arc<Vec<String>>,
    sources: Arc<dyn DataSources>,
}

impl std::fmt::Debug for RunsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunsService").finish_non_exhaustive()
    }
}

/// A page and where the next one starts.
#[derive(Debug)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Resume point, `None` on the last page.
    pub next: Cursor,
}

fn require_admin(caller: &Principal) -> Result<(), RunsError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(RunsError::Forbidden("changing agents needs the admin role"))
    }
}

/// A new agent or the new state of one: name and settings.
#[derive(Debug, Clone)]
pub struct AgentInput {
    /// Name.
    pub name: String,
    /// Settings.
    pub config: AgentConfig,
}

impl RunsService {
    /// A service over `repo`; agents may only name `known_providers`.
    pub fn new(
        repo: Arc<dyn RunsRepository>,
        known_providers: Vec<String>,
        sources: Arc<dyn DataSources>,
    ) -> Self {
        Self {
            repo,
            known_providers: Arc::new(known_providers),
            sources,
        }
    }

    fn validate_fallbacks(
        &self,
        field: &str,
        fallbacks: &[ModelChoice],
        violations: &mut Vec<FieldViolation>,
    ) {
        if fallbacks.len() > MAX_FALLBACK_MODELS {
            violations.push(FieldViolation::new(
                format!("{field}.fallback_models"),
                format!("must be at most {MAX_FALLBACK_MODELS}"),
            ));
            return;
        }
        for (i, fallback) in fallbacks.iter().enumerate() {
            if !self.known_providers.contains(&fallback.provider) {
                violations.push(FieldViolation::new(
                    format!("{field}.fallback_models[{i}].provider"),
                    format!(
                        "must be a configured provider ({})",
                        self.known_providers.join(", ")
                    ),
                ));
            }
            if fallback.model.trim().is_empty() {
                violations.push(FieldViolation::new(
                    format!("{field}.fallback_models[{i}].model"),
                    "is required",
                ));
            }
        }
    }

    fn validate(&self, field: &str, input: &AgentInput) -> Result<(), RunsError> {
        let mut violations = Vec::new();
        if input.name.trim().is_empty() || input.name.chars().count() > 200 {
            violations.push(FieldViolation::new(
                format!("{field}.name"),
                "is required, at most 200 characters",
            ));
        }
        if !self.known_providers.contains(&input.config.provider) {
            violations.push(FieldViolation::new(
                format!("{field}.model.provider"),
                format!(
                    "must be a configured provider ({})",
                    self.known_providers.join(", ")
                ),
            ));
        }
        if input.config.model.trim().is_empty() {
            violations.push(FieldViolation::new(
                format!("{field}.model.model"),
                "is required",
            ));
        }
        self.validate_fallbacks(field, &input.config.fallback_models, &mut violations);
        let mut names = std::collections::HashSet::new();
        for (i, tool) in input.config.client_tools.iter().enumerate() {
            if !valid_tool_name(&tool.name) {
                violations.push(FieldViolation::new(
                    format!("{field}.client_tools[{i}].name"),
                    "must match ^[a-zA-Z0-9_-]{1,64}$",
                ));
            } else if !names.insert(tool.name.as_str()) {
                violations.push(FieldViolation::new(
                    format!("{field}.client_tools[{i}].name"),
                    "is used twice",
                ));
            }
        }
        if input.config.max_steps > 1000 {
            violations.push(FieldViolation::new(
                format!("{field}.max_steps"),
                "must be at most 1000",
            ));
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(RunsError::Invalid(violations))
        }
    }

    /// Creates an agent (admins only).
    pub async fn create_agent(
        &self,
        caller: &Principal,
        input: AgentInput,
    ) -> Result<Agent, RunsError> {
        require_admin(caller)?;
        self.validate("agent", &input)?;
        let now = now_millis();
        let agent = Agent {
            id: AgentId::new(),
            org_id: caller.org_id.clone(),
            name: input.name,
            config: input.config,
            created_at: now,
            updated_at: now,
        };
        self.repo.insert_agent(&agent).await?;
        tracing::info!(agent_id = %agent.id, "agent created");
        Ok(agent)
    }

    /// An agent of the caller's organization.
    pub async fn get_agent(&self, caller: &Principal, id: AgentId) -> Result<Agent, RunsError> {
        self.repo
            .get_agent(&caller.org_id, id)
            .await?
            .ok_or(RunsError::NotFound("agent"))
    }

    /// A page of the organization's agents.
    pub async fn list_agents(
        &self,
        caller: &Principal,
        after: Cursor,
        limit: u32,
    ) -> Result<Page<Agent>, RunsError> {
        let mut items = self
            .repo
            .list_agents(&caller.org_id, after, limit + 1)
            .await?;
        let next = trim_page(&mut items, limit, |a| (a.created_at, a.id.to_string()));
        Ok(Page { items, next })
    }

    /// Replaces an agent's name and settings with `change(current)` (admins only).
    pub async fn update_agent(
        &self,
        caller: &Principal,
        id: AgentId,
        change: impl FnOnce(&Agent) -> Result<AgentInput, RunsError>,
    ) -> Result<Agent, RunsError> {
        require_admin(caller)?;
        let mut agent = self.get_agent(caller, id).await?;
        let input = change(&agent)?;
        self.validate("agent", &input)?;
        agent.name = input.name;
        agent.config = input.config;
        agent.updated_at = now_millis();
        if !self.repo.update_agent(&agent).await? {
            return Err(RunsError::NotFound("agent"));
        }
        Ok(agent)
    }

    /// Deletes an agent (admins only).
    pub async fn delete_agent(&self, caller: &Principal, id: AgentId) -> Result<(), RunsError> {
        require_admin(caller)?;
        if self.repo.delete_agent(&caller.org_id, id).await? {
            Ok(())
        } else {
            Err(RunsError::NotFound("agent"))
        }
    }

    /// Starts a thread of the caller with an agent of their organization.
    pub async fn create_thread(
        &self,
        caller: &Principal,
        agent_id: AgentId,
        title: String,
    ) -> Result<Thread, RunsError> {
        let agent = self
            .get_agent(caller, agent_id)
            .await
            .map_err(|e| match e {
                RunsError::NotFound(_) => {
                    RunsError::invalid("agent_id", "is not an agent of your organization")
                }
                other => other,
            })?;
        let now = now_millis();
        let thread = Thread {
            id: ThreadId::new(),
            org_id: caller.org_id.clone(),
            user_id: caller.user_id.clone(),
            agent_id: agent.id,
            title,
            created_at: now,
            updated_at: now,
        };
        self.repo.insert_thread(&thread).await?;
        Ok(thread)
    }

    /// A thread of the caller.
    pub async fn get_thread(&self, caller: &Principal, id: ThreadId) -> Result<Thread, RunsError> {
        self.repo
            .get_thread(&caller.org_id, &caller.user_id, id)
            .await?
            .ok_or(RunsError::NotFound("thread"))
    }

    /// A page of the caller's threads, newest first.
    pub async fn list_threads(
        &self,
        caller: &Principal,
        agent: Option<AgentId>,
        before: Cursor,
        limit: u32,
    ) -> Result<Page<Thread>, RunsError> {
        let mut items = self
            .repo
            .list_threads(&caller.org_id, &caller.user_id, agent, before, limit + 1)
            .await?;
        let next = trim_page(&mut items, limit, |t| (t.created_at, t.id.to_string()));
        Ok(Page { items, next })
    }

    /// Deletes a thread of the caller with everything in it.
    pub async fn delete_thread(&self, caller: &Principal, id: ThreadId) -> Result<(), RunsError> {
        self.sources.thread_deleting(id).await?;
        if self
            .repo
            .delete_thread(&caller.org_id, &caller.user_id, id)
            .await?
        {
            self.sources.thread_deleted(id).await;
            Ok(())
        } else {
            Err(RunsError::NotFound("thread"))
        }
    }

    /// Pins the thread's changed definition of `tool_name` kept under
    /// `tool_drift` ASK, if its digest is `digest` (the `new_digest` the
    /// application read), so that the next run offers it. A digest other
    /// than the one kept (the server changed the tool again after the event
    /// answered) pins nothing: an answer accepts only the text it saw.
    pub async fn accept_tool_definition(
        &self,
        caller: &Principal,
        thread_id: ThreadId,
        tool_name: &str,
        digest: &str,
    ) -> Result<(), RunsError> {
        self.get_thread(caller, thread_id).await?;
        match self
            .repo
            .accept_tool_change(thread_id, tool_name, digest)
            .await?
        {
            ChangeAnswer::Pinned(_) => {
                tracing::info!(%thread_id, tool = tool_name, digest, "a changed tool definition was accepted");
                Ok(())
            }
            ChangeAnswer::NoneWaiting => Err(RunsError::FailedPrecondition(format!(
                "the thread has no changed definition of tool {tool_name} waiting for an answer"
            ))),
            ChangeAnswer::Differs { waiting } => Err(RunsError::FailedPrecondition(format!(
                "digest {digest} is not the changed definition of tool {tool_name} waiting \
                 for an answer: its server changed it again since, to digest {waiting}; \
                 answer the latest tool_definition_changed event"
            ))),
        }
    }

    /// A page of a thread's messages after `after_seq`.
    pub async fn list_messages(
        &self,
        caller: &Principal,
        thread_id: ThreadId,
        after_seq: i64,
        limit: u32,
    ) -> Result<(Vec<Message>, Option<i64>), RunsError> {
        let thread = self.get_thread(caller, thread_id).await?;
        let mut messages = self
            .repo
            .list_messages(thread.id, after_seq, limit + 1)
            .await?;
        let next = if messages.len() > limit as usize {
            messages.truncate(limit as usize);
            messages.last().map(|m| m.seq)
        } else {
            None
        };
        Ok((messages, next))
    }

    /// The data sources of one of the caller's threads, oldest first.
    pub async fn list_data_sources(
        &self,
        caller: &Principal,
        thread_id: ThreadId,
    ) -> Result<Vec<DataSource>, RunsError> {
        let thread = self.get_thread(caller, thread_id).await?;
        Ok(self.sources.list(thread.id).await?)
    }

    /// Imports CSV bytes as a data source of one of the caller's threads.
    pub async fn import_data_source(
        &self,
        caller: &Principal,
        thread_id: ThreadId,
        name: &str,
        csv: Bytes,
    ) -> Result<DataSource, RunsError> {
        if name.trim().is_empty() {
            return Err(RunsError::invalid("name", "is required"));
        }
        let thread = self.get_thread(caller, thread_id).await?;
        self.sources
            .import_csv(thread.id, name, name, None, csv)
            .await
            .map_err(|error| match error {
                ImportError::Storage(error) => RunsError::Internal(error),
                busy @ ImportError::Busy(_) => RunsError::Busy(texts::import_failed(&busy)),
                quota @ ImportError::OrgQuotaExceeded { .. } => {
                    RunsError::QuotaExceeded(texts::import_failed(&quota))
                }
                other => RunsError::invalid("csv", texts::import_failed(&other)),
            })
    }

    /// A run of one of the caller's threads.
    pub async fn get_run(&self, caller: &Principal, id: RunId) -> Result<Run, RunsError> {
        let run = self
            .repo
            .find_run(id)
            .await?
            .ok_or(RunsError::NotFound("run"))?;
        self.get_thread(caller, run.thread_id)
            .await
            .map_err(|_| RunsError::NotFound("run"))?;
        Ok(run)
    }
}

impl RunsService {
    /// The usage of the caller's organization (admins only).
    pub async fn usage(
        &self,
        caller: &Principal,
        mut query: UsageQuery,
    ) -> Result<Vec<UsageRow>, RunsError> {
        if !caller.is_admin() {
            return Err(RunsError::Forbidden("reading usage needs the admin role"));
        }
        query.org_id.clone_from(&caller.org_id);
        let period = query.period;
        Ok(by_period(self.repo.usage(&query).await?, period))
    }
}

impl RunsService {
    /// A page of the caller's thread's runs, newest first, with the cursor
    /// of the next page.
    pub async fn list_runs(
        &self,
        caller: &Principal,
        thread_id: ThreadId,
        before: Cursor,
        limit: u32,
    ) -> Result<(Vec<Run>, Cursor), RunsError> {
        self.get_thread(caller, thread_id).await?;
        let mut runs = self
            .repo
            .list_runs(thread_id, before, limit.saturating_add(1))
            .await?;
        let next = trim_page(&mut runs, limit, |r| (r.created_at, r.id.to_string()));
        Ok((runs, next))
    }
}

fn trim_page<T>(items: &mut Vec<T>, limit: u32, key: impl Fn(&T) -> (i64, String)) -> Cursor {
    if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(key)
    } else {
        None
    }
}
