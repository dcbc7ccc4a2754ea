//! Printing: tables and text for people, protobuf JSON for scripts.

use std::{
    io::{self, IsTerminal as _, Write as _},
    sync::LazyLock,
};

use comfy_table::{ContentArrangement, Table, presets};
use prost_reflect::{DescriptorPool, DynamicMessage, SerializeOptions};
use switchboard_proto::{FILE_DESCRIPTOR_SET, mcp::v1 as mcp, runs::v1 as runs};

use crate::{
    error::CliError,
    terminal_text::{for_terminal, json_for_terminal},
};

/// A message with its fully qualified protobuf name, so that it can be
/// printed in the protobuf JSON mapping.
pub trait Proto: prost::Message {
    /// `package.Message`.
    const NAME: &'static str;
}

/// Implements [`Proto`] for messages of one package.
macro_rules! proto_names {
    ($package:literal, $module:ident: $($message:ident),* $(,)?) => {
        $(impl Proto for $module::$message {
            const NAME: &'static str = concat!($package, ".", stringify!($message));
        })*
    };
}

proto_names!("switchboard.mcp.v1", mcp:
    Integration, ListIntegrationsResponse, ListPredefinedIntegrationsResponse,
    ValidateIntegrationResponse, DiscoverResponse, DeleteIntegrationResponse,
    Policy, ListPoliciesResponse, ListPolicyVersionsResponse, DeletePolicyResponse,
    ExplainPolicyResponse, ListAuditEventsResponse, VerifyAuditChainResponse, Approval,
    ListApprovalsResponse, Toolset, ListToolsetsResponse, DeleteToolsetResponse,
);
proto_names!("switchboard.runs.v1", runs:
    Agent, ListAgentsResponse, DeleteAgentResponse, Thread, ListThreadsResponse,
    DeleteThreadResponse, ListMessagesResponse, DataSource, ListDataSourcesResponse, Run,
    ExecuteRunResponse, ListRunsResponse, GetUsageResponse, AcceptToolDefinitionResponse,
);

static POOL: LazyLock<Result<DescriptorPool, String>> = LazyLock::new(|| {
    DescriptorPool::decode(FILE_DESCRIPTOR_SET).map_err(|error| error.to_string())
});

/// The protobuf JSON mapping of `message` (lowerCamelCase names, enums by
/// name, default values left out), as grpcurl prints it.
pub fn to_json<M: Proto>(message: &M) -> Result<serde_json::Value, CliError> {
    let internal = |what: String| CliError::Failed(format!("cannot print {}: {what}", M::NAME));
    let pool = POOL.as_ref().map_err(|error| internal(error.clone()))?;
    let descriptor = pool
        .get_message_by_name(M::NAME)
        .ok_or_else(|| internal("unknown message".into()))?;
    let dynamic = DynamicMessage::decode(descriptor, message.encode_to_vec().as_slice())
        .map_err(|error| internal(error.to_string()))?;
    dynamic
        .serialize_with_options(
            serde_json::value::Serializer,
            &SerializeOptions::new().stringify_64_bit_integers(false),
        )
        .map_err(|error| internal(error.to_string()))
}

/// Where and how a command prints.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    json: bool,
}

impl Output {
    /// Prints JSON when `json`, else text.
    pub fn new(json: bool) -> Self {
        Self { json }
    }

    /// Whether the user asked for JSON.
    pub fn is_json(self) -> bool {
        self.json
    }

    /// One line on stdout, made safe for a terminal.
    pub fn line(self, text: impl std::fmt::Display) -> Result<(), CliError> {
        let text = text.to_string();
        let mut stdout = io::stdout().lock();
        writeln!(stdout, "{}", for_terminal(&text))?;
        Ok(())
    }

    /// Text on stdout without a line break, shown at once, made safe for a
    /// terminal.
    pub fn text(self, text: &str) -> Result<(), CliError> {
        let mut stdout = io::stdout().lock();
        stdout.write_all(for_terminal(text).as_bytes())?;
        stdout.flush()?;
        Ok(())
    }

    /// A message as one line of JSON, its value unchanged and its control
    /// characters escaped.
    pub fn proto<M: Proto>(self, message: &M) -> Result<(), CliError> {
        let json = to_json(message)?.to_string();
        let mut stdout = io::stdout().lock();
        writeln!(stdout, "{}", json_for_terminal(&json))?;
        Ok(())
    }

    /// `message` as JSON when asked for, else what `human` prints.
    pub fn either<M: Proto>(
        self,
        message: &M,
        human: impl FnOnce() -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        if self.json {
            self.proto(message)
        } else {
            human()
        }
    }

    /// The hint to fetch the next page, when there is one.
    pub fn next_page(self, token: &str) -> Result<(), CliError> {
        if token.is_empty() {
            Ok(())
        } else {
            self.line(format!("more: --page-token {token}"))
        }
    }
}

/// A line on stderr (errors, questions beside JSON output). A closed stderr
/// leaves nothing to tell, so a failed write is dropped.
pub fn to_stderr(line: impl std::fmt::Display) {
    let line = line.to_string();
    let _ = writeln!(io::stderr().lock(), "{}", for_terminal(&line));
}

/// A table with these column headers.
pub fn table(headers: &[&str]) -> Table {
    let mut table = Table::new();
    // In a terminal, long cells wrap to its width; piped, rows stay whole.
    let arrangement = if io::stdout().is_terminal() {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    };
    table
        .load_preset(presets::UTF8_BORDERS_ONLY)
        .set_content_arrangement(arrangement)
        .set_header(headers);
    table
}

/// The first line of `text`, cut to `max` characters.
pub fn short(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("").trim();
    if first.chars().count() > max {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else if text.trim().lines().nth(1).is_some() {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// A timestamp as RFC 3339 to the second, or `-`.
pub fn time(timestamp: Option<&prost_types::Timestamp>) -> String {
    timestamp
        .and_then(|t| {
            let nanos = u32::try_from(t.nanos).ok()?;
            let seconds = u64::try_from(t.seconds).ok()?;
            let at = std::time::UNIX_EPOCH
                + std::time::Duration::from_secs(seconds)
                + std::time::Duration::from_nanos(u64::from(nanos));
            Some(humantime::format_rfc3339_seconds(at).to_string())
        })
        .unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_print_in_the_protobuf_json_mapping() {
        let run = runs::Run {
            id: "r1".into(),
            status: runs::RunStatus::RequiresAction as i32,
            steps: 2,
            ..Default::default()
        };
        let json = to_json(&run).expect("prints");
        assert_eq!(
            json,
            serde_json::json!({"id": "r1", "status": "RUN_STATUS_REQUIRES_ACTION", "steps": 2})
        );
    }

    #[test]
    fn every_named_message_is_in_the_descriptors() {
        let event = runs::ExecuteRunResponse::default();
        assert!(to_json(&event).is_ok());
        assert!(to_json(&mcp::DiscoverResponse::default()).is_ok());
        assert!(to_json(&runs::ListMessagesResponse::default()).is_ok());
    }

    #[test]
    fn short_keeps_the_first_line_within_the_width() {
        assert_eq!(short("abc", 5), "abc");
        assert_eq!(short("abcdefgh", 5), "abcd…");
        assert_eq!(short("one\ntwo", 10), "one …");
    }
}
