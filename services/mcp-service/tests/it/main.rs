//! Integration tests of mcp-service over real gRPC on loopback.

mod calls;
mod changes;
mod chassis;
mod everything;
mod exact_json;
mod hostile_authorization;
mod hostile_calls;
mod hostile_config;
mod hostile_metrics;
mod hostile_oauth;
mod hostile_sandbox;
mod hostile_server;
mod hostile_stdio;
mod input_required;
mod integrations;
mod oauth_organization;
mod oauth_users;
mod protocol;
mod repository;
mod secrets;
mod support;
mod tasks;
mod tls;
mod validate;
