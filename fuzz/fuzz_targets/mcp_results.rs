//! What an MCP server answers, as far as the model: the server's JSON read
//! into the protocol's types (as the MCP client does), converted to the
//! gRPC response (mcp-service), encoded and decoded again (the hop to
//! runs-service), and rendered as the text the model reads.
//!
//! Input: one selector byte, then the server's JSON. The selector picks the
//! result kind (tool call, resource read, prompt, discovery), whether a tool
//! call's request for input is a task's, and the URI of a read; the JSON is
//! read into the protocol's types first, as the MCP client reads it.
//!
//! Checked on every input: no panic; the response decodes on the other side
//! of the hop as it was sent; neither the response nor the model's text is
//! more than a fixed factor larger than the server's JSON.

#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use rmcp::model::{
    CallToolResult, GetPromptResult, InputRequiredResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, ReadResourceResult,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_mcp_service::{
    domain::{
        outcome::{InputRequired, Outcome},
        ports::{Discovery, ServerIdentity},
    },
    wire,
};
use switchboard_runs_service::{domain::texts, outbound::mcp::tool_output};

/// How much larger than the server's JSON a response or text may be: binary
/// framing of small JSON values (a one-byte `0` is an eleven-byte protobuf
/// number) stays well under it; a conversion that copies or expands content
/// does not.
const GROWTH: usize = 32;
const SLACK: usize = 4096;

/// Resource URIs the reads are made for (the kind depends on them).
const URIS: [&str; 4] = [
    "file:///data/sales.csv",
    "https://example.com/readme.md",
    "mem://blob",
    "",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, json)) = data.split_first() else {
        return;
    };
    let Ok(value) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let bound = GROWTH * json.len() + SLACK;
    // A task's request for input carries the task's id, which the client
    // knows from the task, not from the answer.
    let task_id = (selector & 1 == 1).then(|| "fuzz-task".to_owned());
    match (selector >> 1) % 4 {
        0 => {
            let Some(outcome) = answer::<CallToolResult>(value, task_id) else {
                return;
            };
            let response = hop(wire::tool_result(Ok(outcome), "fuzz_tool"), bound);
            let (text, _) = texts::tool_output("fuzz_tool", &tool_output(response));
            assert!(text.len() <= bound, "{} bytes of text", text.len());
        }
        1 => {
            let Some(result) = answer::<ReadResourceResult>(value, None) else {
                return;
            };
            let uri = URIS[usize::from(selector >> 3) % URIS.len()];
            hop(wire::resource_read(uri.to_owned(), result), bound);
        }
        2 => {
            let Some(result) = answer::<GetPromptResult>(value, None) else {
                return;
            };
            hop(wire::prompt_result(&result), bound);
        }
        _ => {
            let discovery = discovery(&value);
            hop(wire::discovery(&discovery), bound);
        }
    }
});

/// A server's answer as the MCP client reads it: the result `T`, or the
/// server's request for input (a task's, when `task_id`); `None` when it is
/// neither.
fn answer<T: DeserializeOwned>(value: Value, task_id: Option<String>) -> Option<Outcome<T>> {
    match serde_json::from_value::<T>(value.clone()) {
        Ok(result) => Some(Outcome::Complete(result)),
        Err(_) => {
            let asked: InputRequiredResult = serde_json::from_value(value).ok()?;
            Some(Outcome::InputRequired(InputRequired {
                requests: asked.input_requests.unwrap_or_default(),
                request_state: asked.request_state,
                task_id,
            }))
        }
    }
}

/// The items of the list `key` of `value`, read as the page type `P` (as
/// the MCP client reads a listing); none when `P` refuses the page.
fn items<P: DeserializeOwned, T>(value: &Value, key: &str, of: impl FnOnce(P) -> Vec<T>) -> Vec<T> {
    let page = match value.get(key) {
        Some(Value::Array(items)) => Value::Object(serde_json::Map::from_iter([(
            key.to_owned(),
            Value::Array(items.clone()),
        )])),
        _ => return Vec::new(),
    };
    serde_json::from_value::<P>(page)
        .map(of)
        .unwrap_or_default()
}

fn discovery(value: &Value) -> Discovery {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    Discovery {
        server: ServerIdentity {
            name: text("name").unwrap_or_default(),
            title: text("title"),
            version: text("version").unwrap_or_default(),
            protocol_version: text("protocolVersion").unwrap_or_default(),
            instructions: text("instructions"),
        },
        tools: items(value, "tools", |page: ListToolsResult| page.tools),
        resources: items(value, "resources", |page: ListResourcesResult| {
            page.resources
        }),
        resource_templates: items(
            value,
            "resourceTemplates",
            |page: ListResourceTemplatesResult| page.resource_templates,
        ),
        prompts: items(value, "prompts", |page: ListPromptsResult| page.prompts),
        discovered_at: value
            .get("discoveredAt")
            .and_then(Value::as_i64)
            .unwrap_or_default(),
        fresh_for: value
            .get("ttlMs")
            .and_then(Value::as_u64)
            .map(std::time::Duration::from_millis),
    }
}

/// `response` after the gRPC hop: encoded, bounded, decoded, and equal.
fn hop<M: Message + Default + PartialEq + std::fmt::Debug>(response: M, bound: usize) -> M {
    let bytes = response.encode_to_vec();
    assert!(bytes.len() <= bound, "{} bytes encoded", bytes.len());
    let decoded = M::decode(bytes.as_slice())
        .unwrap_or_else(|e| panic!("the response does not decode on the other side: {e}"));
    assert_eq!(decoded, response);
    decoded
}
