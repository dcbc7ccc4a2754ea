//! Adapters to the systems runs-service calls.

pub mod llm;
