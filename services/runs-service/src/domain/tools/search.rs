//! Tool search: for an agent with many tools, the model is offered
//! `search_tools` and `call_tool` instead of every MCP tool. A search ranks
//! the run's MCP tools (the same tools, names and schemas the model would
//! otherwise be offered, after the agent's allow-lists, overrides and the
//! pins' withholding) by BM25 over their names, descriptions and input
//! schemas, and answers the best ones with their schemas; a call names one
//! and runs exactly as a direct call would.

use std::sync::{Arc, OnceLock};

use bm25::{Language, SearchEngine, SearchEngineBuilder};
use serde::Deserialize;
use serde_json::{Value, value::RawValue};

use super::ToolArguments;
use crate::domain::{
    entities::{ToolBinding, ToolTarget},
    model::{ToolCall, ToolSpec},
};

/// The name of the tool that searches.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the tool that calls a found tool.
pub const CALL_TOOL: &str = "call_tool";
/// Tools a search answers when the model names no `limit`.
pub const DEFAULT_RESULTS: usize = 5;
/// The most tools one search answers.
pub const MAX_RESULTS: usize = 20;
/// The longest query searched, in characters; the rest is ignored.
pub const MAX_QUERY_CHARS: usize = 1_000;
/// The most text of one tool's input schema indexed, in bytes.
const MAX_SCHEMA_TEXT: usize = 4_096;

/// The MCP tools of a run, indexed for search once, at the first search.
#[derive(Debug, Clone, Default)]
pub struct Searchable {
    index: Arc<OnceLock<ToolIndex>>,
}

impl Searchable {
    /// The index of the MCP tools among `specs` and `bindings` (in the same
    /// order), made at the first call.
    pub fn index(&self, specs: &[ToolSpec], bindings: &[ToolBinding]) -> &ToolIndex {
        self.index.get_or_init(|| ToolIndex::new(specs, bindings))
    }
}

/// A run's MCP tools, ranked by text.
pub struct ToolIndex {
    /// The tools found, by position.
    specs: Vec<ToolSpec>,
    engine: SearchEngine<usize>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.specs.len())
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// The index of the MCP tools among `specs` (`bindings` in the same
    /// order say which are).
    pub fn new(specs: &[ToolSpec], bindings: &[ToolBinding]) -> Self {
        let specs: Vec<ToolSpec> = specs
            .iter()
            .zip(bindings)
            .filter(|(_, binding)| matches!(binding.target, ToolTarget::Mcp { .. }))
            .map(|(spec, _)| spec.clone())
            .collect();
        let documents: Vec<bm25::Document<usize>> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| bm25::Document::new(i, document(spec)))
            .collect();
        let engine =
            SearchEngineBuilder::<usize>::with_documents(Language::English, documents).build();
        Self { specs, engine }
    }

    /// Up to `limit` tools for `query`, best first; ties keep the order the
    /// tools were assembled in.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&ToolSpec> {
        let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
        let mut found: Vec<(usize, f32)> = self
            .engine
            .search(&words(&query), None)
            .into_iter()
            .map(|result| (result.document.id, result.score))
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found
            .into_iter()
            .take(limit)
            .filter_map(|(i, _)| self.specs.get(i))
            .collect()
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
}

/// A `call_tool`'s arguments: the tool's name, and its own arguments kept
/// as the model wrote them (a 64-bit id or `1.0` unchanged); arguments
/// written as a JSON string of an object are read as that object.
pub(super) fn found_call(raw: &str) -> Result<(String, ToolArguments), String> {
    #[derive(Deserialize)]
    struct Found<'a> {
        name: Option<String>,
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
    }
    let found: Found<'_> = serde_json::from_str(raw).map_err(|error| error.to_string())?;
    let name = found
        .name
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| "no `name`".to_owned())?;
    let arguments = match found.arguments.map(RawValue::get) {
        None | Some("null") => ToolArguments::parse("")?,
        Some(text) => match serde_json::from_str::<String>(text) {
            Ok(written) => ToolArguments::parse(&written)?,
            Err(_) => ToolArguments::parse(text)?,
        },
    };
    Ok((name, arguments))
}

/// The name of the tool `call` runs: the one a `call_tool` names, else
/// its own; `None` for a `call_tool` naming none.
pub fn called_tool(call: &ToolCall) -> Option<String> {
    if call.name == CALL_TOOL {
        found_call(&call.arguments).ok().map(|(name, _)| name)
    } else {
        Some(call.name.clone())
    }
}

/// What a tool is found by: its name's words (twice), its description (at
/// most [`MAX_SCHEMA_TEXT`] bytes of it), and its
/// input schema's property names and descriptions (at most
/// [`MAX_SCHEMA_TEXT`] bytes of them).
fn document(spec: &ToolSpec) -> String {
    let mut schema = String::new();
    schema_text(&spec.parameters, &mut schema, 0);
    let schema = cut(&schema, MAX_SCHEMA_TEXT);
    let description = cut(&spec.description, MAX_SCHEMA_TEXT);
    // The name's words count twice: they say what the tool does most
    // tersely (measured on the labelled set in the tests).
    let name = words(&spec.name);
    format!("{name} {name} {} {}", words(description), words(schema))
}

/// `text` cut at `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The property names and descriptions of `schema`, depth-first, to depth
/// 4 and until [`MAX_SCHEMA_TEXT`] bytes.
fn schema_text(schema: &Value, out: &mut String, depth: usize) {
    if depth > 4 || out.len() >= MAX_SCHEMA_TEXT {
        return;
    }
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(Value::String(description)) = object.get("description") {
        out.push_str(description);
        out.push(' ');
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            out.push_str(name);
            out.push(' ');
            schema_text(property, out, depth + 1);
        }
    }
    if let Some(items) = object.get("items") {
        schema_text(items, out, depth + 1);
    }
}

/// `text` with identifiers split into words: `create_issue`,
/// `create-issue`, `createIssue` and `github__create_issue` all read as
/// their words.
fn words(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut previous: Option<char> = None;
    for c in text.chars() {
        match c {
            '_' | '-' | '.' | '/' | ':' => out.push(' '),
            c if c.is_uppercase() && previous.is_some_and(char::is_lowercase) => {
                out.push(' ');
                out.push(c);
            }
            c => out.push(c),
        }
        previous = Some(c);
    }
    out
}

#[cfg(test)]
mod tests;
