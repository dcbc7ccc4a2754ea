//! gRPC integrations: a gRPC service described by its descriptors (an
//! uploaded `FileDescriptorSet`, or what the server's reflection gives),
//! each unary and server-streaming method offered as a tool. Descriptors are
//! hostile until bounded: their size, their number of methods, and each
//! method's input schema (its nodes, its depth, its enums' sizes) are
//! bounded, and the whole set is refused past a bound, naming it. A method
//! the mapping cannot offer (client streaming, a request message that
//! contains itself) is left out, with why ([`ServiceSchema::skipped`]).
//!
//! Arguments and results follow the proto3 JSON mapping ([`message`]):
//! fields by their JSON names, 64-bit integers as decimal strings (so they
//! arrive exact), enums by name, well-known types as the mapping writes
//! them.

mod bounds;
pub mod check;
pub mod message;
mod schema;
#[cfg(test)]
mod tests;

use prost::Message as _;
use prost_reflect::{DescriptorPool, MethodDescriptor};
use prost_types::FileDescriptorSet;
use serde_json::{Map, Value};

use bounds::Skip;
pub use bounds::{GrpcLimits, SchemaError};

/// A method offered as a tool.
#[derive(Debug, Clone)]
pub struct Method {
    /// The tool's name: `Service_Method`.
    pub tool: String,
    /// The request path: `/pkg.Service/Method`.
    pub path: String,
    /// What the tool does: the method's comment, or its name and kind.
    pub description: String,
    /// The request message's JSON Schema.
    pub input_schema: Map<String, Value>,
    /// Whether the server answers with a stream of messages.
    pub server_streaming: bool,
    /// The method's descriptor: its request and response messages.
    pub descriptor: MethodDescriptor,
}

impl Method {
    /// `pkg.Service/Method`.
    pub fn label(&self) -> &str {
        self.path.trim_start_matches('/')
    }
}

/// A descriptor set read: the methods offered as tools.
#[derive(Debug, Clone)]
pub struct ServiceSchema {
    /// The services' full names, ordered.
    pub services: Vec<String>,
    /// The methods offered, ordered by tool name.
    pub methods: Vec<Method>,
    /// The methods left out, with why.
    pub skipped: Vec<SchemaError>,
}

impl ServiceSchema {
    /// Reads `bytes` (an encoded `FileDescriptorSet`) within `limits`,
    /// offering the methods `selection` names (`pkg.Service/Method` or
    /// `pkg.Service`; empty: all).
    pub fn read(
        bytes: &[u8],
        selection: &[String],
        limits: &GrpcLimits,
    ) -> Result<Self, SchemaError> {
        let pool = pool(bytes, limits)?;
        let mut methods: Vec<Method> = Vec::new();
        let mut skipped = Vec::new();
        for method in pool
            .services()
            .flat_map(|s| s.methods().collect::<Vec<_>>())
        {
            if !selected(selection, &method) {
                continue;
            }
            match read_method(&method, limits) {
                Ok(read) if methods.iter().any(|m| m.tool == read.tool) => {
                    skipped.push(SchemaError::at(
                        read.label(),
                        format!("its tool name {} is taken", read.tool),
                    ))
                }
                Ok(read) => methods.push(read),
                // A descriptor set that amplifies is refused whole.
                Err(Skip::Refused(error)) => return Err(error),
                Err(Skip::Unsupported(error)) => skipped.push(error),
            }
        }
        methods.sort_by(|a, b| a.tool.cmp(&b.tool));
        let mut services: Vec<String> = pool.services().map(|s| s.full_name().to_owned()).collect();
        services.sort();
        Ok(Self {
            services,
            methods,
            skipped,
        })
    }

    /// The method offered as `tool`.
    pub fn method(&self, tool: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.tool == tool)
    }

    /// The entries of `selection` that name no service or method of this
    /// set, with their index.
    pub fn unknown(&self, selection: &[String]) -> Vec<(usize, String)> {
        let known = |entry: &str| {
            self.services.iter().any(|s| s == entry)
                || self.methods.iter().any(|m| m.label() == entry)
                || self.skipped.iter().any(|s| s.at == entry)
        };
        selection
            .iter()
            .enumerate()
            .filter(|(_, entry)| !known(entry))
            .map(|(i, entry)| (i, entry.clone()))
            .collect()
    }
}

/// The descriptor set's pool, within its size and its number of methods.
fn pool(bytes: &[u8], limits: &GrpcLimits) -> Result<DescriptorPool, SchemaError> {
    let refused = |message: String| SchemaError::at("descriptor set", message);
    if bytes.len() > limits.max_descriptor_bytes {
        return Err(refused(format!(
            "is {} bytes, more than {}",
            bytes.len(),
            limits.max_descriptor_bytes
        )));
    }
    let set =
        FileDescriptorSet::decode(bytes).map_err(|e| refused(format!("is not valid: {e}")))?;
    // A syntax prost-reflect does not read makes it index past its files
    // (a panic, not an error), so it is refused here first; editions are
    // not read either.
    if let Some(file) = set
        .file
        .iter()
        .find(|f| !matches!(f.syntax.as_deref(), None | Some("proto2" | "proto3")))
    {
        return Err(refused(format!(
            "{} has syntax {:?}; proto2 and proto3 are read",
            file.name(),
            file.syntax()
        )));
    }
    // Whatever else a hostile set may trip in the library ends as a
    // refusal, never a panic of the request.
    let built = std::panic::catch_unwind(move || DescriptorPool::from_file_descriptor_set(set))
        .map_err(|_| refused("could not be read".to_owned()))?;
    let pool = built.map_err(|e| refused(format!("is not valid: {e}")))?;
    let count: usize = pool.services().map(|s| s.methods().len()).sum();
    if count > limits.max_methods {
        return Err(refused(format!(
            "has {count} methods, more than {}",
            limits.max_methods
        )));
    }
    Ok(pool)
}

fn selected(selection: &[String], method: &MethodDescriptor) -> bool {
    let service = method.parent_service();
    selection.is_empty()
        || selection.iter().any(|entry| {
            entry == service.full_name()
                || entry
                    .split_once('/')
                    .is_some_and(|(s, m)| s == service.full_name() && m == method.name())
        })
}

fn read_method(method: &MethodDescriptor, limits: &GrpcLimits) -> Result<Method, Skip> {
    let service = method.parent_service();
    let label = format!("{}/{}", service.full_name(), method.name());
    if method.is_client_streaming() {
        return Err(Skip::Unsupported(SchemaError::at(
            &label,
            "client streaming is not offered: a tool call sends one request",
        )));
    }
    let tool = format!("{}_{}", service.name(), method.name());
    if tool.len() > 64 {
        return Err(Skip::Unsupported(SchemaError::at(
            &label,
            format!("its tool name {tool} is longer than 64 characters"),
        )));
    }
    let input_schema = schema::input_schema(&label, &method.input(), limits)?;
    Ok(Method {
        description: description(method, &label),
        path: format!("/{label}"),
        tool,
        input_schema,
        server_streaming: method.is_server_streaming(),
        descriptor: method.clone(),
    })
}

/// The method's leading comment, or what it is.
fn description(method: &MethodDescriptor, label: &str) -> String {
    let file = method.parent_file();
    let comment = file
        .file_descriptor_proto()
        .source_code_info
        .as_ref()
        .and_then(|info| info.location.iter().find(|l| l.path == method.path()))
        .and_then(|l| l.leading_comments.as_deref())
        .map(str::trim)
        .filter(|c| !c.is_empty());
    let kind = if method.is_server_streaming() {
        "server-streaming: its messages are collected into `messages`"
    } else {
        "unary"
    };
    match comment {
        Some(comment) => format!("{comment}\n\n(gRPC {label}, {kind})"),
        None => format!("Calls gRPC {label} ({kind})."),
    }
}
