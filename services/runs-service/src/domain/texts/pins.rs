//! What the model reads when it calls a tool the run withholds: its server
//! changed the tool since the thread pinned it, and the agent's setting
//! does not let the change through (docs/model-contract.md, "Pinned
//! tools"). The new text is never quoted: it is what is not trusted.

/// `name` was not offered because its definition changed.
pub fn tool_withheld(name: &str) -> String {
    format!(
        "The tool {name} is withheld: its server changed its description or input schema since this conversation first used it, and the change has not been accepted. Do not call it again; tell the user if you need it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_withheld_tool_is_answered_word_for_word() {
        assert_eq!(
            tool_withheld("example__echo"),
            "The tool example__echo is withheld: its server changed its description or input schema since this conversation first used it, and the change has not been accepted. Do not call it again; tell the user if you need it."
        );
    }
}
