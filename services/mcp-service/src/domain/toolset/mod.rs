//! Toolsets: named selections an organization's admin makes of its
//! integrations, their tools and their resources. The MCP endpoint serves
//! each one as a single MCP server at `/mcp/toolsets/{name}`, asking
//! [`serve::ToolsetResolver::resolve`] what a toolset holds for a caller.
//!
//! [`model`] holds what an admin writes, [`validate`] checks it on write,
//! [`ports`] is where toolsets are kept, [`admin`] the use cases behind
//! `ToolsetsService` and [`serve`] what the MCP endpoint reads.

pub mod admin;
pub mod model;
pub mod ports;
pub mod serve;
pub mod validate;

#[cfg(test)]
mod tests;
