//! DPoP proofs on the token requests of a grant whose tokens are bound to
//! a key: every POST to the authorization server's token endpoint (the
//! authorization code's exchange, each refresh) carries a fresh proof, with
//! the server's nonce once it gave one. A token request refused with
//! `use_dpop_nonce` is made once more with the nonce the refusal carried,
//! never more: a server that refuses that one too has its refusal passed on.

use std::sync::Arc;

use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRequest,
};

use super::{
    dpop::{DPOP_HEADER, DpopKey, Nonce, USE_NONCE, htu},
    http::PolicyOAuthHttp,
};

/// How many times one token request is sent at most: once, and once more
/// with the nonce a `use_dpop_nonce` refusal gave.
const MAX_SENDS: usize = 2;

/// An [`OAuthHttpClient`] adding DPoP proofs signed with `key` to the
/// requests it sends to `token_endpoint`; anything else passes unchanged.
pub struct DpopOAuthHttp {
    inner: Arc<PolicyOAuthHttp>,
    key: DpopKey,
    token_endpoint: String,
    nonce: Nonce,
}

impl std::fmt::Debug for DpopOAuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopOAuthHttp")
            .field("token_endpoint", &self.token_endpoint)
            .finish_non_exhaustive()
    }
}

impl DpopOAuthHttp {
    /// Sends through `inner`, proving possession of `key` at
    /// `token_endpoint`.
    pub fn new(inner: Arc<PolicyOAuthHttp>, key: DpopKey, token_endpoint: &str) -> Self {
        Self {
            inner,
            key,
            token_endpoint: htu(token_endpoint),
            nonce: Nonce::default(),
        }
    }

    async fn execute_with_proof(
        &self,
        request: OAuthHttpRequest,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let OAuthHttpRequest {
            request,
            redirect_policy,
            timeout,
            ..
        } = request;
        let (parts, body) = request.into_parts();
        let mut sends = 0;
        loop {
            sends += 1;
            let used = self.nonce.get();
            let proof = self.key.proof(
                parts.method.as_str(),
                &self.token_endpoint,
                used.as_deref(),
                None,
            )?;
            let mut request = http::Request::from_parts(parts.clone(), body.clone());
            request
                .headers_mut()
                .insert(DPOP_HEADER, http::HeaderValue::from_str(&proof)?);
            let response = self
                .inner
                .execute_bounded(request, redirect_policy, timeout)
                .await?;
            let learned = self.nonce.learn(response.headers());
            let refused_for_nonce = response.status() == http::StatusCode::BAD_REQUEST
                && oauth_error(response.body()).as_deref() == Some(USE_NONCE);
            if refused_for_nonce && learned && sends < MAX_SENDS && self.nonce.get() != used {
                tracing::debug!("token endpoint asked for its dpop nonce; sending once more");
                continue;
            }
            return Ok(response);
        }
    }
}

/// The `error` code of an OAuth error response.
fn oauth_error(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()?
        .get("error")?
        .as_str()
        .map(str::to_owned)
}

impl OAuthHttpClient for DpopOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let to_token_endpoint = request.request.method() == http::Method::POST
            && htu(&request.request.uri().to_string()) == self.token_endpoint;
        if to_token_endpoint {
            Box::pin(self.execute_with_proof(request))
        } else {
            self.inner.execute(request)
        }
    }
}
