//! Integration tests of switchboard-auth: verification against a real JWKS
//! server on loopback, and the `switchboard-token` binary as `make run` and
//! `make demo` use it.

mod jwks;

use std::process::Command;

use switchboard_auth::{Authenticator, VerifierConfig};

const SECRET: &str = "switchboard-token-test-secret";

#[test]
fn switchboard_token_prints_a_token_the_services_accept() {
    let output = Command::new(env!("CARGO_BIN_EXE_switchboard-token"))
        .env("SWITCHBOARD_JWT_SECRET", SECRET)
        .args(["--org", "org-a", "--user", "user-a", "--role", "admin"])
        .output()
        .expect("switchboard-token runs");
    assert!(output.status.success(), "{output:?}");
    let token = String::from_utf8(output.stdout).expect("UTF-8");
    let verifier =
        Authenticator::new(&VerifierConfig::hs256(SECRET)).expect("the test secret is valid");
    let principal = verifier.verify(token.trim()).expect("the token verifies");
    assert_eq!(principal.org_id, "org-a");
    assert_eq!(principal.user_id, "user-a");
    assert!(principal.has_role("admin"));

    let other = Authenticator::new(&VerifierConfig::hs256("another-secret-0123456789"))
        .expect("a valid secret");
    assert!(other.verify(token.trim()).is_err());
}
