//! Integration tests of mcp-service over real gRPC on loopback.

mod chassis;
mod integrations;
mod repository;
mod secrets;
mod support;
mod validate;
