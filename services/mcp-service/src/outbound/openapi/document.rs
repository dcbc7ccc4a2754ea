//! OpenAPI documents fetched from the URL an admin gave: under the
//! outbound address policy, with the same client as the API's calls (which
//! follows no redirect: a redirect would take the fetch to an address the
//! admin did not name), carrying no credential (the integration's go to
//! its API only), read up to the document bound and within a time limit.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;

use crate::{
    domain::{address_policy::AddressPolicy, ports::DocumentSource},
    outbound::http::check_request_url,
};

/// Fetches OpenAPI documents.
#[derive(Debug, Clone)]
pub struct DocumentFetcher {
    http: reqwest::Client,
    policy: Arc<AddressPolicy>,
    timeout: Duration,
}

impl DocumentFetcher {
    /// Fetches with `http` (which follows no redirect and resolves names
    /// under `policy`), each fetch within `timeout`.
    pub fn new(http: reqwest::Client, policy: Arc<AddressPolicy>, timeout: Duration) -> Self {
        Self {
            http,
            policy,
            timeout,
        }
    }

    async fn read(&self, url: &str, max_bytes: usize) -> Result<String, String> {
        let mut response = self
            .http
            .get(url)
            .header(
                http::header::ACCEPT,
                "application/json, application/yaml, text/yaml, */*;q=0.1",
            )
            .send()
            .await
            .map_err(|e| format!("could not be fetched: {}", e.without_url()))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(format!(
                "answered {status}: redirects are not followed (give the document's own URL)"
            ));
        }
        if !status.is_success() {
            return Err(format!("answered {status}"));
        }
        if response
            .content_length()
            .is_some_and(|n| n > max_bytes as u64)
        {
            return Err(format!("is more than {max_bytes} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("could not be read: {}", e.without_url()))?
        {
            if body.len() + chunk.len() > max_bytes {
                return Err(format!("is more than {max_bytes} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|_| "is not UTF-8 text".to_owned())
    }
}

#[async_trait]
impl DocumentSource for DocumentFetcher {
    async fn fetch(&self, url: &str, max_bytes: usize) -> Result<String, String> {
        check_request_url(&self.policy, url).map_err(|e| e.to_string())?;
        tokio::time::timeout(self.timeout, self.read(url, max_bytes))
            .await
            .map_err(|_| format!("was not fetched within {:?}", self.timeout))?
    }
}
