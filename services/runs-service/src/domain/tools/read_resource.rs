//! `mcp_read_resource`, the resource tool bridge plan's tool: a resource by
//! URI or by name alone, looked up across the run's integrations and read
//! through the same path as `retrieve_mcp_resource` (CSV import included).
//! When the model names nothing readable, the answer lists what is. The
//! plan's log lines are kept: "Successfully read resource: …" (debug) and
//! "Error reading resource …: …" (error); a URI or name is logged with its
//! control characters escaped, so that the model cannot forge log lines.

use serde_json::Map;

use super::{
    ToolArguments,
    lookup::{self, Found},
    outcome::ToolOutcome,
    resources::Reader,
};
use crate::domain::texts;

fn read_failed(message: &str) -> String {
    texts::read_failed(message)
}

/// Reads the resource the model names by `uri` (preferred) or
/// `resourceName`.
pub(super) async fn read(reader: &Reader<'_>, arguments: &ToolArguments) -> ToolOutcome {
    let capabilities = &reader.context.capabilities;
    let (named, found) = match (
        arguments.text_arg("uri"),
        arguments.text_arg("resourceName"),
    ) {
        (Some(uri), _) => (uri, lookup::by_uri(capabilities, uri)),
        (None, Some(name)) => (name, lookup::by_name(capabilities, name)),
        (None, None) => {
            return ToolOutcome::failed(texts::with_available_resources(
                texts::READ_INPUT_REQUIRED,
                capabilities,
            ));
        }
    };
    match found {
        Found::One(wanted) => {
            let outcome = reader.read(&wanted, &Map::new(), read_failed).await;
            let uri = loggable(&wanted.uri);
            if outcome.is_error {
                let error = loggable(&outcome.text);
                tracing::error!("Error reading resource {uri}: {error}");
            } else {
                tracing::debug!("Successfully read resource: {uri}");
            }
            outcome
        }
        Found::Several(integrations) => {
            tracing::info!(
                resource = named,
                integrations = integrations.len(),
                "the resource is offered by several integrations"
            );
            ToolOutcome::failed(read_failed(&texts::offered_by_several(
                named,
                &integrations,
            )))
        }
        // A URI nobody lists is said so; a name nobody lists reads as the
        // plan's "valid resourceName is required".
        Found::Nothing => {
            let message = match arguments.text_arg("uri") {
                Some(uri) => texts::failed_to_read(texts::no_resource_at(uri)),
                None => texts::READ_INPUT_REQUIRED.to_owned(),
            };
            ToolOutcome::failed(texts::with_available_resources(&message, capabilities))
        }
    }
}

/// Most characters of a server's or model's text in one log line.
const LOGGED_CHARS: usize = 1000;

/// `text` for a log line: its control characters escaped (a line break
/// cannot start a forged line), at most [`LOGGED_CHARS`] characters.
fn loggable(text: &str) -> String {
    let kept: String = text.chars().take(LOGGED_CHARS).collect();
    switchboard_telemetry::escape_controls(&kept)
}

#[cfg(test)]
#[path = "read_resource_tests.rs"]
mod tests;
