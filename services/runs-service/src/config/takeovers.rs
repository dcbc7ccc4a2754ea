//! Settings of runs that continue on another replica when theirs stops
//! (an agent's `recovery` CONTINUE): the keys their callers' tokens are
//! sealed with, and how many takeovers one run may have.

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context as _, bail, ensure};
use switchboard_auth::Authenticator;
use switchboard_sealing::KeyRing;

use crate::outbound::callers::SealedCallers;

/// The largest keys file read.
const MAX_KEYS_FILE_BYTES: u64 = 64 * 1024;

/// Runs that continue on another replica.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TakeoverArgs {
    /// Keys sealing the tokens of the callers of runs that continue on
    /// another replica: `id:base64(32 bytes)` entries, comma-separated;
    /// the first seals, all open (rotation). Every replica needs the same
    /// keys. Unset: no run continues on another replica (each ends
    /// interrupted when its replica stops, whatever its agent says).
    #[arg(long, env = "SWITCHBOARD_RUN_CALLER_KEYS", hide_env_values = true)]
    pub run_caller_keys: Option<String>,
    /// File holding the caller keys (a mounted Kubernetes Secret).
    #[arg(long, env = "SWITCHBOARD_RUN_CALLER_KEYS_FILE")]
    pub run_caller_keys_file: Option<PathBuf>,
    /// Times one run may be taken over by another replica; past it, the
    /// run ends interrupted (a run whose work stops every replica that
    /// takes it does not go round them all). 1 to 10.
    #[arg(long, env = "SWITCHBOARD_RUN_MAX_TAKEOVERS", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub run_max_takeovers: u32,
}

impl TakeoverArgs {
    /// The sealed callers of runs that continue, when keys are set.
    pub fn callers(
        &self,
        authenticator: &Arc<Authenticator>,
    ) -> anyhow::Result<Option<SealedCallers>> {
        let spec = match (&self.run_caller_keys, &self.run_caller_keys_file) {
            (Some(spec), None) => spec.clone(),
            (None, Some(path)) => read_keys(path)?,
            (Some(_), Some(_)) => bail!(
                "set only one of SWITCHBOARD_RUN_CALLER_KEYS and SWITCHBOARD_RUN_CALLER_KEYS_FILE"
            ),
            (None, None) => return Ok(None),
        };
        let keys = KeyRing::parse(&spec).context("invalid SWITCHBOARD_RUN_CALLER_KEYS")?;
        Ok(Some(SealedCallers::new(keys, Arc::clone(authenticator))))
    }
}

fn read_keys(path: &PathBuf) -> anyhow::Result<String> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("failed to read {}", path.display()))?
        .len();
    ensure!(
        size <= MAX_KEYS_FILE_BYTES,
        "{} has {size} bytes; a caller keys file has at most {MAX_KEYS_FILE_BYTES}",
        path.display()
    );
    std::fs::read_to_string(path).with_context(|| format!("failed to read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticator() -> Arc<Authenticator> {
        Arc::new(
            Authenticator::new(&switchboard_auth::VerifierConfig::hs256(
                "a-test-secret-of-at-least-32-bytes!!",
            ))
            .expect("an authenticator"),
        )
    }

    #[test]
    fn without_keys_no_run_continues_and_bad_keys_are_refused() {
        let none = TakeoverArgs::default();
        assert!(none.callers(&authenticator()).expect("valid").is_none());
        let bad = TakeoverArgs {
            run_caller_keys: Some("k1:short".into()),
            ..TakeoverArgs::default()
        };
        let error = bad.callers(&authenticator()).expect_err("refused");
        assert!(
            format!("{error:#}").contains("SWITCHBOARD_RUN_CALLER_KEYS"),
            "{error:#}"
        );
        let good = TakeoverArgs {
            run_caller_keys: Some(KeyRing::random_spec("k1")),
            ..TakeoverArgs::default()
        };
        assert!(good.callers(&authenticator()).expect("valid").is_some());
    }
}
