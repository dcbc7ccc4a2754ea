//! The model port: how a run talks to a language model.

use std::sync::Arc;

use crate::domain::model::{ChatRequest, ModelError, ModelEvent};

/// The events of one model call; dropping it cancels the call.
pub type ModelStream = futures::stream::BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A language model provider.
#[async_trait::async_trait]
pub trait ModelProvider: Send + Sync + std::fmt::Debug + 'static {
    /// Starts one streamed model call. Errors before the first event
    /// (connect, HTTP status) are returned here after retries; errors
    /// mid-stream come through the stream. Dropping the stream cancels the
    /// HTTP request.
    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ModelError>;
}

/// Looks up a configured model provider by name.
pub trait ModelProviders: Send + Sync + 'static {
    /// The provider called `name`.
    fn provider(&self, name: &str) -> Option<Arc<dyn ModelProvider>>;
}
