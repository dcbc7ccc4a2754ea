//! Domain types and the ports runs-service's adapters implement.

pub mod model;
