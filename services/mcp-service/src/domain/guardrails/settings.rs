//! What an organization (in its policies) and an integration say the
//! guardrails do, over the deployment's defaults: an action for some
//! detectors in some places. The most specific says last: the deployment's
//! settings, then the organization's (the strongest action when two of its
//! policies set the same detector and place), then the integration's.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use switchboard_server::FieldViolation;

use super::{ALL, Action, Detector, Guardrails, Place};

/// The action of one detector in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// The detector, by its name.
    #[serde(with = "detector_name")]
    pub detector: Detector,
    /// Arguments or result.
    pub place: Place,
    /// What is done with its findings there.
    pub action: Action,
}

/// Settings of some detectors in some places, each detector and place at
/// most once (so at most twice as many as there are detectors).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GuardrailSettings(Vec<Setting>);

/// A setting as a caller writes it, by names.
#[derive(Debug, Clone, Default)]
pub struct SettingInput {
    /// The detector's name.
    pub detector: String,
    /// `arguments` or `result`.
    pub place: String,
    /// `off`, `flag`, `redact` or `block`.
    pub action: String,
}

impl GuardrailSettings {
    /// No setting: the levels above decide.
    pub fn none() -> Self {
        Self::default()
    }

    /// Settings as written under `field` (`integration.guardrails`, say),
    /// or the first one at fault, named by its index and field.
    pub fn parse(field: &str, written: &[SettingInput]) -> Result<Self, FieldViolation> {
        let mut settings: Vec<Setting> = Vec::new();
        for (i, w) in written.iter().enumerate() {
            let at = |name: &str| format!("{field}[{i}].{name}");
            if settings.len() == ALL.len() * 2 {
                return Err(FieldViolation::new(
                    field,
                    format!("has more than {} settings", ALL.len() * 2),
                ));
            }
            let detector = Detector::parse(&w.detector).ok_or_else(|| {
                let known: Vec<&str> = ALL.iter().map(|d| d.name()).collect();
                FieldViolation::new(
                    at("detector"),
                    format!("is not a detector; known: {}", known.join(", ")),
                )
            })?;
            let place = Place::parse(&w.place)
                .ok_or_else(|| FieldViolation::new(at("place"), "must be arguments or result"))?;
            let action = Action::parse(&w.action).ok_or_else(|| {
                FieldViolation::new(at("action"), "must be off, flag, redact or block")
            })?;
            if settings
                .iter()
                .any(|s| s.detector == detector && s.place == place)
            {
                return Err(FieldViolation::new(
                    at("detector"),
                    format!("sets {} on {} a second time", detector.name(), place.name()),
                ));
            }
            settings.push(Setting {
                detector,
                place,
                action,
            });
        }
        Ok(Self(settings))
    }

    /// The settings, in the order written.
    pub fn settings(&self) -> &[Setting] {
        &self.0
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The settings of several policies of one organization as one: where
    /// two set the same detector and place, the strongest action (block
    /// over redact over flag over off).
    pub fn strongest<'a>(all: impl IntoIterator<Item = &'a Self>) -> Self {
        let mut merged: Vec<Setting> = Vec::new();
        for setting in all.into_iter().flat_map(|s| &s.0) {
            match merged
                .iter_mut()
                .find(|m| m.detector == setting.detector && m.place == setting.place)
            {
                Some(m) => m.action = m.action.max(setting.action),
                None => merged.push(*setting),
            }
        }
        Self(merged)
    }
}

impl Guardrails {
    /// These guardrails as the organization's settings, then the
    /// integration's, change them; borrowed when neither sets anything.
    pub fn resolved(
        &self,
        organization: &GuardrailSettings,
        integration: &GuardrailSettings,
    ) -> Cow<'_, Self> {
        if organization.is_empty() && integration.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut resolved = self.clone();
        for setting in organization.0.iter().chain(&integration.0) {
            let actions = match setting.place {
                Place::Arguments => &mut resolved.arguments,
                Place::Result => &mut resolved.results,
            };
            actions.insert(setting.detector, setting.action);
        }
        Cow::Owned(resolved)
    }
}

/// A detector stored by its name.
mod detector_name {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use super::Detector;

    pub fn serialize<S: Serializer>(detector: &Detector, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(detector.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Detector, D::Error> {
        let name = String::deserialize(d)?;
        Detector::parse(&name).ok_or_else(|| D::Error::custom(format!("unknown detector {name}")))
    }
}
