//! The settings of the guardrails on tool traffic: whether they run, and
//! the action of each detector on arguments and on results.

use crate::domain::guardrails::Guardrails;

/// Guardrails: what each detector's finding does.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GuardrailArgs {
    /// Turn every detector off.
    #[arg(long = "guardrails-off", env = "SWITCHBOARD_GUARDRAILS_OFF")]
    pub off: bool,
    /// Changes to the actions on a call's arguments, as
    /// `DETECTOR=ACTION,…` (actions: off, flag, redact, block; defaults:
    /// secrets, private keys and card numbers block, e-mail addresses and
    /// high-entropy tokens flag).
    #[arg(
        long = "guardrail-arguments",
        env = "SWITCHBOARD_GUARDRAIL_ARGUMENTS",
        default_value = ""
    )]
    pub arguments: String,
    /// Changes to the actions on a tool's result, as for arguments
    /// (defaults: secrets, private keys and card numbers redact, e-mail
    /// addresses and high-entropy tokens flag).
    #[arg(
        long = "guardrail-results",
        env = "SWITCHBOARD_GUARDRAIL_RESULTS",
        default_value = ""
    )]
    pub results: String,
}

impl GuardrailArgs {
    /// The guardrails these settings make, or what is wrong with them.
    pub fn guardrails(&self) -> anyhow::Result<Guardrails> {
        if self.off {
            return Ok(Guardrails::off());
        }
        Guardrails::with(&self.arguments, &self.results)
            .map_err(|problem| anyhow::anyhow!("SWITCHBOARD_GUARDRAIL_*: {problem}"))
    }
}
