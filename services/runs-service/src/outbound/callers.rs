//! The callers of runs that continue on another replica: each run's bearer
//! token sealed with SWITCHBOARD_RUN_CALLER_KEYS and bound to the run's id
//! (a sealed token copied to another run does not open), and opened again
//! by the replica that takes the run over, which verifies it as it verifies
//! any caller's.

use std::sync::Arc;

use async_trait::async_trait;
use base64::{Engine as _, engine::general_purpose::STANDARD};
use secrecy::{ExposeSecret as _, SecretString};
use switchboard_auth::{Authenticator, BearerToken};
use switchboard_sealing::{KeyRing, Sealed};

use crate::domain::{
    ids::RunId,
    ports::{Caller, CallerKeeper, SealedCaller},
};

/// Seals callers' tokens with a key ring, and verifies them when opened.
pub struct SealedCallers {
    keys: KeyRing,
    authenticator: Arc<Authenticator>,
}

impl std::fmt::Debug for SealedCallers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedCallers")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl SealedCallers {
    /// Callers sealed with `keys`, verified by `authenticator`.
    pub fn new(keys: KeyRing, authenticator: Arc<Authenticator>) -> Self {
        Self {
            keys,
            authenticator,
        }
    }
}

/// What a sealed token is bound to.
fn binding(run_id: RunId) -> Vec<u8> {
    format!("run-caller/{run_id}").into_bytes()
}

#[async_trait]
impl CallerKeeper for SealedCallers {
    fn seal(&self, run_id: RunId, caller: &Caller) -> Option<SealedCaller> {
        let token = caller.token.as_ref()?;
        match self
            .keys
            .seal(token.0.expose_secret().as_bytes(), &binding(run_id))
        {
            Ok(sealed) => Some(SealedCaller {
                key_id: sealed.key_id,
                sealed: STANDARD.encode(sealed.bytes),
            }),
            Err(error) => {
                tracing::warn!(run_id = %run_id, error = %error, "failed to seal a run's caller; the run cannot continue on another replica");
                None
            }
        }
    }

    async fn open(&self, run_id: RunId, sealed: &SealedCaller) -> Result<Caller, String> {
        let bytes = STANDARD
            .decode(&sealed.sealed)
            .map_err(|_| "its caller's kept token is not readable".to_owned())?;
        let opened = self
            .keys
            .open(
                &Sealed {
                    key_id: sealed.key_id.clone(),
                    bytes,
                },
                &binding(run_id),
            )
            .map_err(|error| format!("its caller's kept token does not open: {error}"))?;
        let token = String::from_utf8(opened)
            .map_err(|_| "its caller's kept token is not text".to_owned())?;
        let principal = self
            .authenticator
            .authenticate(&token)
            .await
            .map_err(|error| format!("its caller's token is no longer valid: {error}"))?;
        Ok(Caller {
            principal,
            token: Some(BearerToken(Arc::new(SecretString::from(token)))),
        })
    }
}
