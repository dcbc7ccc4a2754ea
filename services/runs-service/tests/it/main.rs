//! Integration tests of runs-service over real gRPC on loopback.

mod chassis;
mod datasources;
mod hostile_datasources;
mod repository;
