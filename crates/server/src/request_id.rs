//! Idempotency keys (`request_id`) on creating RPCs: a repeat returns the
//! first result instead of creating twice (docs/errors.md).
//!
//! The handler parses the key, fingerprints the request without it, and lets
//! [`Idempotency::once`] serve the request or replay the recorded response.

use std::{future::Future, sync::Arc, time::Duration};

use sha2::{Digest as _, Sha256};
use switchboard_db::request_ids::{Claim, RequestIds, RequestKey};
use tonic::Status;

use crate::{ApiError, FieldViolation, Refusal};

/// Longest accepted key, in bytes.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// How long a repeat of a request still being served should wait.
const IN_PROGRESS_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A valid key, or `None` when the caller sent none.
pub fn parse_request_id(value: &str) -> Result<Option<&str>, FieldViolation> {
    if value.is_empty() {
        return Ok(None);
    }
    if value.len() > MAX_REQUEST_ID_LEN {
        return Err(FieldViolation::new(
            "request_id",
            format!("must be at most {MAX_REQUEST_ID_LEN} characters"),
        ));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(FieldViolation::new(
            "request_id",
            "must be printable ASCII without spaces",
        ));
    }
    Ok(Some(value))
}

/// What identifies a request: the SHA-256 of the caller's user id and of the
/// request's encoding (taken with the `request_id` field cleared), hex. The
/// user is part of it because threads and runs belong to their user: another
/// user of the organization repeating a key is refused, never answered with
/// someone else's result.
pub fn fingerprint(user_id: &str, request: &impl prost::Message) -> String {
    let mut hash = Sha256::new();
    hash.update(user_id.len().to_le_bytes());
    hash.update(user_id.as_bytes());
    hash.update(request.encode_to_vec());
    hash.finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// How a keyed request goes on.
#[derive(Debug)]
pub enum Begun {
    /// Serve it; then [`Idempotency::finish`] or [`Idempotency::forget`].
    First(RequestKey),
    /// The same request was served: its recorded response.
    Replay(Vec<u8>),
}

/// Idempotency keys of one service.
#[derive(Debug, Clone)]
pub struct Idempotency {
    ids: Arc<RequestIds>,
}

fn internal(error: anyhow::Error) -> Status {
    ApiError::Internal(error).into()
}

impl Idempotency {
    /// Keys kept in `ids`.
    pub fn new(ids: RequestIds) -> Self {
        Self { ids: Arc::new(ids) }
    }

    /// Claims `request_id` of `org` for `method`, or replays or refuses.
    pub async fn begin(
        &self,
        org_id: &str,
        method: &'static str,
        request_id: &str,
        fingerprint: &str,
    ) -> Result<Begun, Status> {
        let key = RequestKey {
            org_id: org_id.to_owned(),
            method,
            request_id: request_id.to_owned(),
        };
        match self.ids.claim(&key, fingerprint).await.map_err(internal)? {
            Claim::First => Ok(Begun::First(key)),
            Claim::Done(response) => Ok(Begun::Replay(response)),
            Claim::Pending => Err(ApiError::refused(
                Refusal::RequestInProgress {
                    retry_after: IN_PROGRESS_RETRY_AFTER,
                },
                "a request with this request_id is still being served; retry to get its result",
            )
            .into()),
            Claim::Reused => Err(ApiError::refused(
                Refusal::RequestIdReused,
                "this request_id was used for a different request; use a new one",
            )
            .into()),
        }
    }

    /// Records `response` as the result of the claimed key.
    pub async fn finish(&self, key: &RequestKey, response: &[u8]) -> Result<(), Status> {
        self.ids.finish(key, response).await.map_err(internal)
    }

    /// Frees the claimed key after its request failed.
    pub async fn forget(&self, key: &RequestKey) {
        if let Err(error) = self.ids.forget(key).await {
            // The claim then lapses after its lease; a repeat is told to
            // wait until it does.
            tracing::warn!(error = ?error, method = key.method, "failed to free a request id");
        }
    }

    /// Serves a unary request at most once per key: `serve` runs for the
    /// first request, and a repeat gets its recorded response.
    ///
    /// `request_id` must have been checked with [`parse_request_id`]; an
    /// empty one serves the request without a key.
    pub async fn once<R, F, Fut>(
        &self,
        org_id: &str,
        method: &'static str,
        request_id: Option<&str>,
        fingerprint: &str,
        serve: F,
    ) -> Result<R, Status>
    where
        R: prost::Message + Default,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<R, Status>>,
    {
        let Some(request_id) = request_id else {
            return serve().await;
        };
        let key = match self.begin(org_id, method, request_id, fingerprint).await? {
            Begun::Replay(bytes) => {
                return R::decode(bytes.as_slice()).map_err(|e| internal(e.into()));
            }
            Begun::First(key) => key,
        };
        match serve().await {
            Ok(response) => {
                self.finish(&key, &response.encode_to_vec()).await?;
                Ok(response)
            }
            Err(status) => {
                self.forget(&key).await;
                Err(status)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_printable_ascii() {
        assert_eq!(parse_request_id(""), Ok(None));
        assert_eq!(
            parse_request_id("0192f1c4-7a1e-7c3b-9d7e-2b3c4d5e6f70"),
            Ok(Some("0192f1c4-7a1e-7c3b-9d7e-2b3c4d5e6f70"))
        );
        assert!(parse_request_id(&"x".repeat(MAX_REQUEST_ID_LEN)).is_ok());
        assert!(parse_request_id(&"x".repeat(MAX_REQUEST_ID_LEN + 1)).is_err());
        assert!(parse_request_id("has space").is_err());
        assert!(parse_request_id("é").is_err());
    }

    #[test]
    fn a_fingerprint_follows_the_content() {
        let a = prost_types::Duration {
            seconds: 1,
            nanos: 0,
        };
        let b = prost_types::Duration {
            seconds: 2,
            nanos: 0,
        };
        assert_eq!(fingerprint("u", &a), fingerprint("u", &a.clone()));
        assert_ne!(fingerprint("u", &a), fingerprint("u", &b));
        assert_ne!(fingerprint("u", &a), fingerprint("v", &a));
        assert_eq!(fingerprint("u", &a).len(), 64);
    }
}
