//! The methods a server serves, read from the protobuf descriptors of its
//! services: the only values the RPC metrics and span names take. A path no
//! service serves is `_other`, whatever the caller sent, so that no caller
//! (with or without a token) chooses a label or a span name.

use std::{collections::HashMap, sync::Arc};

use anyhow::Context as _;
use prost::Message as _;
use switchboard_telemetry::OTHER;

/// One served method, as its labels.
#[derive(Debug, Clone)]
pub(crate) struct RpcMethod {
    /// `package.Service`.
    pub service: Arc<str>,
    /// `Method`.
    pub method: Arc<str>,
    /// `package.Service/Method`, the span's name.
    pub name: Arc<str>,
}

impl RpcMethod {
    fn other() -> Self {
        let other: Arc<str> = OTHER.into();
        Self {
            service: other.clone(),
            method: other.clone(),
            name: other,
        }
    }
}

/// The methods of a server's API services, by request path.
#[derive(Debug, Clone)]
pub(crate) struct RpcMethods {
    by_path: Arc<HashMap<String, RpcMethod>>,
    other: RpcMethod,
}

impl RpcMethods {
    /// The methods of `services` (fully qualified names), as the descriptor
    /// set of Switchboard's protos declares them.
    pub(crate) fn of(services: &[&str]) -> anyhow::Result<Self> {
        let set = prost_types::FileDescriptorSet::decode(switchboard_proto::FILE_DESCRIPTOR_SET)
            .context("failed to read the protobuf descriptors")?;
        let mut by_path = HashMap::new();
        for file in &set.file {
            let package = file.package();
            for service in &file.service {
                let full: Arc<str> = if package.is_empty() {
                    service.name().into()
                } else {
                    format!("{package}.{}", service.name()).into()
                };
                if !services.contains(&&*full) {
                    continue;
                }
                for method in &service.method {
                    let name: Arc<str> = format!("{full}/{}", method.name()).into();
                    by_path.insert(
                        format!("/{name}"),
                        RpcMethod {
                            service: full.clone(),
                            method: method.name().into(),
                            name,
                        },
                    );
                }
            }
        }
        Ok(Self {
            by_path: Arc::new(by_path),
            other: RpcMethod::other(),
        })
    }

    /// The labels of a call to `path`: its method's, or `_other`.
    pub(crate) fn get(&self, path: &str) -> &RpcMethod {
        self.by_path.get(path).unwrap_or(&self.other)
    }

    /// Whether `path` is a method served.
    pub(crate) fn serves(&self, path: &str) -> bool {
        self.by_path.contains_key(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_methods_keep_their_names_and_any_other_path_is_other() {
        let methods = RpcMethods::of(&[switchboard_proto::MCP_SERVICE_NAME]).expect("read");
        let execute = methods.get("/switchboard.mcp.v1.McpService/ExecuteTool");
        assert_eq!(&*execute.service, "switchboard.mcp.v1.McpService");
        assert_eq!(&*execute.method, "ExecuteTool");
        assert_eq!(&*execute.name, "switchboard.mcp.v1.McpService/ExecuteTool");
        for path in [
            "/switchboard.mcp.v1.McpService/Nope",
            "/switchboard.runs.v1.RunsService/ExecuteRun",
            "/random-7f3a/x",
            "",
        ] {
            assert_eq!(&*methods.get(path).method, OTHER, "{path}");
            assert!(!methods.serves(path));
        }
    }
}
