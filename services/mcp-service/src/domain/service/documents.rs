//! OpenAPI documents given by URL: fetched when the transport is written
//! (created, or changed by an update), so that the tools offered are those
//! of the document the admin saw accepted, not whatever the URL serves at
//! the next call; writing the transport again fetches it again.

use url::Url;

use super::IntegrationService;
use crate::domain::{
    error::McpError,
    transport::{Transport, TransportInput},
    url_secrets,
};

impl IntegrationService {
    /// `input` with its OpenAPI document fetched from its `document_url`,
    /// when it has one (the `document` given beside it replaced); field
    /// names under `transport_field`.
    pub(super) async fn fetched(
        &self,
        transport_field: &str,
        mut input: TransportInput,
    ) -> Result<TransportInput, McpError> {
        let Transport::OpenApi(api) = &mut input.transport else {
            return Ok(input);
        };
        api.document_url = api.document_url.take().filter(|url| !url.is_empty());
        let Some(url) = &api.document_url else {
            return Ok(input);
        };
        let field = format!("{transport_field}.openapi.document_url");
        let parsed = Url::parse(url).map_err(|e| McpError::invalid(&field, e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(McpError::invalid(&field, "must be an http or https URL"));
        }
        if let Some(why) = url_secrets::credentials_in(&parsed) {
            return Err(McpError::invalid(&field, why));
        }
        let documents = self
            .documents
            .as_ref()
            .ok_or_else(|| McpError::invalid(&field, "cannot be fetched by this service"))?;
        api.document = documents
            .fetch(url, self.policy.openapi.max_document_bytes)
            .await
            .map_err(|why| McpError::invalid(&field, why))?;
        Ok(input)
    }
}
