//! mcp-service's domain: the integration model, its use cases and the ports
//! they need.

pub mod address_policy;
pub mod admission;
pub mod approvals;
pub mod audit;
pub mod calls;
pub mod catalog;
pub mod digest;
pub mod elicitation;
pub mod error;
pub mod input;
pub mod integration;
pub mod oauth_input;
pub mod oauth_url;
pub mod policy;
pub mod ports;
pub mod resolve;
pub mod resource;
pub mod service;
pub mod stdio_args;
pub mod stdio_env;
pub mod stdio_policy;
pub mod surface;
pub mod transport;
pub mod url_secrets;
