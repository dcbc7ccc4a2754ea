//! OAuth for integrations: client-credentials tokens, and the per-user
//! authorization code flow with its clients, HTTP, sealed storage and
//! refresh.

pub mod authorization_code;
pub mod client;
pub mod client_credentials;
pub mod dpop;
pub mod dpop_http;
pub mod http;
pub mod integration_token;
pub mod on_behalf_of;
pub mod pinned_issuer;
pub mod refresh;
pub mod store;
pub mod token_request;
mod token_response;
