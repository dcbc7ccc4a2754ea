//! End-to-end tests: both services on loopback, real MCP servers and a
//! scripted model, called as other teams call them.

mod argument_checks;
mod config_docs;
mod continued_runs;
mod exact_json;
mod examples;
mod failover;
mod grpc;
mod guardrails;
mod hostile_resources;
mod input_required;
mod large_results;
mod mcp_port_suite;
mod mcp_replicas;
mod mutual_tls;
mod openapi;
mod policy;
mod polyglot;
mod read_resource;
mod replicas;
mod request_ids;
mod resources;
mod runs;
mod server_failures;
mod tool_overrides;
mod tool_pins;
mod tool_search;
mod usage;
mod world;
