//! The tools of a Chat Completions request, in strict form where their
//! schemas have one.

use std::{borrow::Cow, collections::HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::{
    domain::model::ChatRequest,
    outbound::llm::schema::{NullFields, openai_strict},
};

/// The tools of `request` as Chat Completions takes them, and the `null`s
/// of the strict ones' arguments, by tool name.
pub(super) fn tools_body(
    request: &ChatRequest,
    strict_tools: bool,
) -> (Vec<OutTool<'_>>, HashMap<String, NullFields>) {
    let mut nulls = HashMap::new();
    let tools = request
        .tools
        .iter()
        .map(|tool| {
            let strict = strict_tools
                .then(|| openai_strict(&tool.parameters))
                .and_then(|form| {
                    form.inspect_err(|unfit| {
                    tracing::debug!(tool = %tool.name, %unfit, "tool offered without strict mode");
                })
                .ok()
                });
            let (parameters, strict) = match strict {
                Some(form) => {
                    if !form.nulls.is_empty() {
                        nulls.insert(tool.name.clone(), form.nulls);
                    }
                    (Cow::Owned(form.parameters), Some(true))
                }
                None => (Cow::Borrowed(&tool.parameters), None),
            };
            OutTool {
                kind: "function",
                function: OutFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters,
                    strict,
                },
            }
        })
        .collect();
    (tools, nulls)
}

#[derive(Debug, Serialize)]
pub(super) struct OutTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutFunction<'a>,
}

#[derive(Debug, Serialize)]
struct OutFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}
