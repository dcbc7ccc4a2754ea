//! Domain types and the ports runs-service's adapters implement.

pub mod builtins;
pub mod datasource;
pub mod entities;
pub mod error;
pub mod history;
pub mod input;
pub mod model;
pub mod orchestrator;
pub mod ports;
pub mod service;
pub mod texts;
pub mod toolset;
