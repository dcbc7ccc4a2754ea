//! Integration tests of mcp-service over real gRPC on loopback.

mod calls;
mod chassis;
mod everything;
mod integrations;
mod repository;
mod secrets;
mod support;
mod validate;
