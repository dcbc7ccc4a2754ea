//! Every HTTP request of the OAuth authorization code flow (metadata
//! discovery, registration, token requests) through the outbound address
//! policy, to `https` URLs only (see [`check_oauth_url`]), with a time limit
//! and a bounded body: authorization servers and the metadata that names
//! them are chosen by tenants, so every byte they send is treated as hostile.

use std::{sync::Arc, time::Duration};

use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

use crate::domain::{address_policy::AddressPolicy, oauth_url::check_oauth_url, ports::ByteSize};

/// The longest any one OAuth request may take.
const MAX_REQUEST_TIME: Duration = Duration::from_secs(30);

/// An [`OAuthHttpClient`] dialling through the address policy.
#[derive(Debug, Clone)]
pub struct PolicyOAuthHttp {
    /// Follows same-origin redirects (built by `build_client`).
    follow: reqwest::Client,
    /// Returns redirects unfollowed.
    stop: reqwest::Client,
    policy: Arc<AddressPolicy>,
    max_body_bytes: usize,
}

/// A response body past the bound.
#[derive(Debug, thiserror::Error)]
#[error("the OAuth server's answer is larger than {0}")]
struct TooLarge(ByteSize);

impl PolicyOAuthHttp {
    /// Requests with `follow` or `stop` (both enforcing `policy` on what
    /// they dial), reading bodies up to `max_body_bytes`.
    pub fn new(
        follow: reqwest::Client,
        stop: reqwest::Client,
        policy: Arc<AddressPolicy>,
        max_body_bytes: usize,
    ) -> Self {
        Self {
            follow,
            stop,
            policy,
            max_body_bytes,
        }
    }

    /// Sends `request` (a redirect followed or not as `redirect_policy`
    /// says, within `timeout` and never past [`MAX_REQUEST_TIME`]), its
    /// answer read up to the bound.
    pub async fn execute_bounded(
        &self,
        request: http::Request<Vec<u8>>,
        redirect_policy: OAuthHttpRedirectPolicy,
        timeout: Option<Duration>,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let client = match redirect_policy {
            OAuthHttpRedirectPolicy::Stop => &self.stop,
            _ => &self.follow,
        };
        // `https` only; IP literals never reach the policy's resolver.
        if let Err(refusal) = check_oauth_url(&self.policy, &request.uri().to_string()) {
            tracing::warn!(error = %refusal, "oauth request refused");
            return Err(Box::new(refusal));
        }
        let mut request = reqwest::Request::try_from(request)?;
        *request.timeout_mut() =
            Some(timeout.map_or(MAX_REQUEST_TIME, |t| t.min(MAX_REQUEST_TIME)));
        let mut response = client.execute(request).await?;
        let limit = self.max_body_bytes;
        if response
            .content_length()
            .is_some_and(|length| length > limit as u64)
        {
            return Err(Box::new(TooLarge(ByteSize(limit))));
        }
        let mut builder = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if chunk.len() > limit - body.len() {
                return Err(Box::new(TooLarge(ByteSize(limit))));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(builder.body(body)?)
    }
}

impl OAuthHttpClient for PolicyOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let OAuthHttpRequest {
            request,
            redirect_policy,
            timeout,
            ..
        } = request;
        Box::pin(self.execute_bounded(request, redirect_policy, timeout))
    }
}
