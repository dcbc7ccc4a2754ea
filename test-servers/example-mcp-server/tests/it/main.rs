//! Integration tests: rmcp's client side against the example server.

mod common;
mod prompts;
mod resources;
mod sessions;
mod stdio;
mod tools;
