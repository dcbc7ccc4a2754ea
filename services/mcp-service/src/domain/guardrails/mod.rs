//! Guardrails on tool traffic, on every front door: before a call's
//! arguments leave for the server, and before its result is returned, the
//! [`detectors`] look for secrets, private keys and personal data, and each
//! finding is acted on as the deployment's settings say: `block` (the call
//! is refused before it leaves, or its result withheld), `redact` (the
//! finding replaced in place by `[redacted {detector}]`), `flag` (left as
//! is, recorded) or `off`. What was found, never the text itself, goes to
//! the audit trail and with the result to its caller, so that a model can
//! be told plainly what was removed.

pub mod detectors;
mod redact;
mod settings;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use rmcp::model::{CallToolResult, GetPromptResult, JsonObject, ReadResourceResult};
use serde::{Deserialize, Serialize};

use super::outcome::{Outcome, ToolOutcome};

pub use detectors::{ALL, Detector};
pub use redact::{redact_text, redact_value};
pub use settings::{GuardrailSettings, Setting, SettingInput};

/// What is done with a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Nothing: the detector does not run.
    Off,
    /// Left as is; recorded.
    Flag,
    /// Replaced by `[redacted {detector}]`; recorded.
    Redact,
    /// The call refused before it leaves, or its result withheld; recorded.
    Block,
}

impl Action {
    /// Its name in settings and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Flag => "flag",
            Self::Redact => "redact",
            Self::Block => "block",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "off" => Some(Self::Off),
            "flag" => Some(Self::Flag),
            "redact" => Some(Self::Redact),
            "block" => Some(Self::Block),
            _ => None,
        }
    }
}

/// Where a finding was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// In the call's arguments, before they left.
    Arguments,
    /// In the tool's result, before it was returned.
    Result,
}

impl Place {
    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::Arguments => "arguments",
            Self::Result => "result",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "arguments" => Some(Self::Arguments),
            "result" => Some(Self::Result),
            _ => None,
        }
    }
}

/// What the guardrails found of one detector in one place, and did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The detector's name.
    pub detector: String,
    /// What was done.
    pub action: Action,
    /// Where.
    pub place: Place,
    /// How many times.
    pub count: u32,
}

/// A call's answer and what the guardrails found in it and in the call's
/// arguments, for the audit trail and the caller.
#[derive(Debug, Clone)]
pub struct Checked<T> {
    /// The answer, redacted or withheld as the settings say.
    pub value: T,
    /// What was found, arguments' findings first.
    pub findings: Vec<Finding>,
    /// The policy rule (`policy@version/rule`) that withheld a tool's
    /// result for what it carried, when one did.
    pub withheld_by: Option<String>,
}

impl<T> Checked<T> {
    /// `value`, with nothing found.
    pub fn clean(value: T) -> Self {
        Self {
            value,
            findings: Vec::new(),
            withheld_by: None,
        }
    }
}

/// The actions of each detector, on arguments and on results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guardrails {
    arguments: BTreeMap<Detector, Action>,
    results: BTreeMap<Detector, Action>,
}

impl Default for Guardrails {
    /// Secrets and private keys blocked in arguments and redacted in
    /// results; card numbers the same; e-mail addresses and high-entropy
    /// tokens flagged.
    fn default() -> Self {
        let action = |detector: Detector, secret: Action| match detector {
            Detector::Email | Detector::HighEntropy => Action::Flag,
            _ => secret,
        };
        Self {
            arguments: ALL.iter().map(|&d| (d, action(d, Action::Block))).collect(),
            results: ALL
                .iter()
                .map(|&d| (d, action(d, Action::Redact)))
                .collect(),
        }
    }
}

impl Guardrails {
    /// No detector runs.
    pub fn off() -> Self {
        Self {
            arguments: ALL.iter().map(|&d| (d, Action::Off)).collect(),
            results: ALL.iter().map(|&d| (d, Action::Off)).collect(),
        }
    }

    /// The defaults changed by `arguments` and `results`, each a list such
    /// as `email=redact,high_entropy=off` (empty changes nothing); an
    /// unknown detector or action is an error naming it.
    pub fn with(arguments: &str, results: &str) -> Result<Self, String> {
        let mut guardrails = Self::default();
        for (spec, actions) in [
            (arguments, &mut guardrails.arguments),
            (results, &mut guardrails.results),
        ] {
            for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let (name, action) = entry
                    .split_once('=')
                    .ok_or_else(|| format!("{entry:?}: expected DETECTOR=ACTION"))?;
                let detector = Detector::parse(name.trim()).ok_or_else(|| {
                    let known: Vec<&str> = ALL.iter().map(|d| d.name()).collect();
                    format!("unknown detector {name:?}; known: {}", known.join(", "))
                })?;
                let action = Action::parse(action.trim()).ok_or_else(|| {
                    format!("unknown action {action:?}: off, flag, redact or block")
                })?;
                actions.insert(detector, action);
            }
        }
        Ok(guardrails)
    }

    /// Checks a call's arguments before they leave: the findings, the
    /// arguments redacted in place where the settings say so; or the first
    /// detector whose finding blocks the call.
    pub fn check_arguments(&self, arguments: &mut JsonObject) -> Result<Vec<Finding>, Detector> {
        let mut tally = Tally::new(&self.arguments, Place::Arguments);
        for value in arguments.values_mut() {
            redact_value(value, &mut |found| tally.act(found));
        }
        tally.finish()
    }

    /// Checks a call's outcome before it is returned: a complete result as
    /// [`Self::check_result`] says, its findings after `flagged` (the
    /// arguments').
    pub fn check_outcome(
        &self,
        outcome: ToolOutcome,
        flagged: Vec<Finding>,
    ) -> Checked<ToolOutcome> {
        let mut findings = flagged;
        let value = match outcome {
            Outcome::Complete(mut result) => {
                findings.extend(self.check_result(&mut result));
                Outcome::Complete(result)
            }
            other => other,
        };
        Checked {
            value,
            findings,
            withheld_by: None,
        }
    }

    /// Checks a tool's result before it is returned: redacted in place
    /// where the settings say so; or, when a finding blocks it, replaced by
    /// an error result saying what it carried. Returns the findings.
    pub fn check_result(&self, result: &mut CallToolResult) -> Vec<Finding> {
        let mut tally = Tally::new(&self.results, Place::Result);
        redact::redact_result(result, &mut |found| tally.act(found));
        match tally.finish() {
            Ok(findings) => findings,
            Err(detector) => {
                *result = withheld(format!(
                    "The tool's result was withheld: it carried a {} (Switchboard's guardrails).",
                    detector.described()
                ));
                vec![blocked(detector)]
            }
        }
    }

    /// Checks a resource's text contents before they are returned:
    /// redacted in place where the settings say so. Returns the findings,
    /// or the first detector whose finding blocks the read.
    pub fn check_resource(&self, read: &mut ReadResourceResult) -> Result<Vec<Finding>, Detector> {
        let mut tally = Tally::new(&self.results, Place::Result);
        redact::redact_contents(&mut read.contents, &mut |found| tally.act(found));
        tally.finish()
    }

    /// Checks a rendered prompt's messages and description before they are
    /// returned, as for a resource.
    pub fn check_prompt(&self, prompt: &mut GetPromptResult) -> Result<Vec<Finding>, Detector> {
        let mut tally = Tally::new(&self.results, Place::Result);
        let act = &mut |found| tally.act(found);
        if let Some(description) = &mut prompt.description
            && let Some(redacted) = redact_text(description, act)
        {
            *description = redacted;
        }
        for message in &mut prompt.messages {
            redact::redact_block(&mut message.content, act);
        }
        tally.finish()
    }
}

/// An error result in place of a tool's result, saying why.
pub fn withheld(why: String) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(why)])
}

fn blocked(detector: Detector) -> Finding {
    Finding {
        detector: detector.name().to_owned(),
        action: Action::Block,
        place: Place::Result,
        count: 1,
    }
}

/// What `findings` were, for the audit trail: `guardrails: result redact
/// aws_access_key x2, arguments flag email x1`; none without findings.
pub fn summary(findings: &[Finding]) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    let items: Vec<String> = findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {} x{}",
                f.place.name(),
                f.action.name(),
                f.detector,
                f.count
            )
        })
        .collect();
    Some(format!("guardrails: {}", items.join(", ")))
}

/// Findings counted as they are acted on, and whether one blocks.
struct Tally<'a> {
    actions: &'a BTreeMap<Detector, Action>,
    place: Place,
    counts: BTreeMap<Detector, u32>,
    blocked: Option<Detector>,
}

impl<'a> Tally<'a> {
    fn new(actions: &'a BTreeMap<Detector, Action>, place: Place) -> Self {
        Self {
            actions,
            place,
            counts: BTreeMap::new(),
            blocked: None,
        }
    }

    /// Counts a finding of `detector`; whether to redact it.
    fn act(&mut self, detector: Detector) -> bool {
        let action = self.actions.get(&detector).copied().unwrap_or(Action::Off);
        if action == Action::Off {
            return false;
        }
        *self.counts.entry(detector).or_default() += 1;
        if action == Action::Block && self.blocked.is_none() {
            self.blocked = Some(detector);
        }
        action == Action::Redact
    }

    fn finish(self) -> Result<Vec<Finding>, Detector> {
        if let Some(detector) = self.blocked {
            return Err(detector);
        }
        Ok(self
            .counts
            .into_iter()
            .map(|(detector, count)| Finding {
                detector: detector.name().to_owned(),
                action: self.actions.get(&detector).copied().unwrap_or(Action::Off),
                place: self.place,
                count,
            })
            .collect())
    }
}
