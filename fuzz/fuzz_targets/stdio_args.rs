//! The stdio allow-list's argument matcher: an argument pattern an operator
//! writes and an argument an admin sends.
//!
//! Checked on every input: no panic; an argument the pattern matches holds
//! no more `/` than the pattern writes (wildcards never match one), no more
//! `..` components than the pattern writes, starts with `-` only when the
//! pattern does, and holds no control character.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use switchboard_mcp_service::domain::stdio_args::{ArgPattern, parent_components};

#[derive(Debug, Arbitrary)]
struct Input {
    pattern: String,
    arg: String,
}

fuzz_target!(|input: Input| {
    let Ok(pattern) = ArgPattern::new(&input.pattern) else {
        return;
    };
    let arg = input.arg.as_str();
    if !pattern.matches(arg) {
        return;
    }
    let slashes = |text: &str| text.matches('/').count();
    assert!(slashes(arg) <= slashes(&input.pattern), "{input:?}");
    assert!(
        parent_components(arg) <= parent_components(&input.pattern),
        "{input:?}"
    );
    assert!(!arg.starts_with('-') || input.pattern.starts_with('-'), "{input:?}");
    assert!(!arg.chars().any(char::is_control), "{input:?}");
});
