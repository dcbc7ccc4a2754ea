//! Integration tests of mcp-service over real gRPC on loopback.

mod chassis;
