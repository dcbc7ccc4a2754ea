//! Integration tests of runs-service over real gRPC on loopback.

mod agent_settings;
mod chassis;
mod counting;
mod data_sources_suite;
mod datasource_objects;
mod datasource_pieces;
mod datasource_replicas;
mod datasource_uploads;
mod datasources;
mod hostile_datasources;
mod hostile_model;
mod hostile_queries;
mod hostile_server;
mod leases;
mod repository;
mod run_writes;
mod stores;
mod takeovers;
mod tool_pins;
mod usage;
