//! Tool schemas in the form each provider accepts.
//!
//! MCP servers publish their tools' input schemas in JSON Schema 2020-12,
//! with `$ref`, `oneOf`, formats and open or closed objects. Providers accept
//! different subsets: OpenAI's strict mode a small, exact one
//! ([`openai_strict`]), Anthropic nearly all of it but no combinator at the
//! top ([`anthropic_form`]). The translations here keep every constraint a
//! provider can carry; what it cannot carry is said in the property's
//! description, and the arguments of every call are still validated against
//! the server's own schema before they leave runs-service
//! (`domain/tools/argument_check.rs`), so a translation never widens what
//! reaches an MCP server.

mod anthropic;
mod nulls;
mod strict;

#[cfg(test)]
use self::strict::{StrictTool, Unfit};
pub use self::{anthropic::anthropic_form, nulls::NullFields, strict::openai_strict};

/// The note appended to a description: the constraints the provider's form
/// could not carry, in the schema's own words.
fn with_notes(description: Option<&str>, notes: &[String]) -> Option<String> {
    if notes.is_empty() {
        return description.map(str::to_owned);
    }
    let notes = notes.join("; ");
    Some(match description {
        Some(text) if !text.is_empty() => format!("{text} ({notes})"),
        _ => format!("({notes})"),
    })
}

#[cfg(test)]
pub(super) mod tests;
