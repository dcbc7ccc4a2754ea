//! The models a run's steps may ask: the agent's, then its fallbacks, in
//! order, and which failures move a step from one to the next.

use std::sync::Arc;

use crate::domain::{
    entities::{AgentConfig, ModelChoice},
    error::RunsError,
    model::ModelError,
    ports::{ModelProvider, ModelProviders},
};

/// The agent's model and its fallbacks that are configured, in order.
#[derive(Debug, Clone)]
pub(super) struct Models(Vec<(ModelChoice, Arc<dyn ModelProvider>)>);

impl Models {
    /// The models of `config` among `providers`: its own model must be
    /// configured; a fallback whose provider no longer is is passed over.
    pub(super) fn of(
        config: &AgentConfig,
        providers: &dyn ModelProviders,
    ) -> Result<Self, RunsError> {
        let provider = providers.provider(&config.provider).ok_or_else(|| {
            RunsError::FailedPrecondition(format!(
                "the model provider `{}` of the agent is not configured",
                config.provider
            ))
        })?;
        let mut models = vec![(config.model_choice(), provider)];
        for fallback in &config.fallback_models {
            match providers.provider(&fallback.provider) {
                Some(provider) => models.push((fallback.clone(), provider)),
                None => tracing::warn!(
                    provider = fallback.provider,
                    "a fallback model's provider is not configured; passed over"
                ),
            }
        }
        Ok(Self(models))
    }

    /// The models, the agent's first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &(ModelChoice, Arc<dyn ModelProvider>)> {
        self.0.iter()
    }

    /// The model after the `i`th, if there is one.
    pub(super) fn after(&self, i: usize) -> Option<&ModelChoice> {
        self.0.get(i + 1).map(|(choice, _)| choice)
    }
}

/// Whether `error`, before a model produced any output, moves the step to
/// the next model: the provider is down, overloaded or unreachable, not
/// refusing the request itself (a 4xx other than 408 and 429 would be
/// refused by the next one too, or says the request is wrong).
pub(super) fn moves_on(error: &ModelError) -> bool {
    match error {
        ModelError::Connect(_) | ModelError::Timeout | ModelError::RateLimited { .. } => true,
        ModelError::Http { status, .. } => *status >= 500 || *status == 408,
        ModelError::Protocol(_) | ModelError::Limit(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::StreamLimit;

    #[test]
    fn only_a_provider_that_is_down_or_overloaded_moves_a_step_on() {
        let http = |status| ModelError::Http {
            status,
            body: String::new(),
        };
        for moving in [
            ModelError::Connect("refused".into()),
            ModelError::Timeout,
            ModelError::RateLimited { retry_after: None },
            http(500),
            http(503),
            http(408),
        ] {
            assert!(moves_on(&moving), "{moving}");
        }
        for staying in [
            http(400),
            http(401),
            http(404),
            ModelError::Protocol("junk".into()),
            ModelError::Limit(StreamLimit::ResponseBytes(10)),
        ] {
            assert!(!moves_on(&staying), "{staying}");
        }
    }
}
