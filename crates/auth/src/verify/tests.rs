//! Verification: keys, expiry, issuer and audience, and the principal read
//! from the claims.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{Claims, TokenMinter, token::unix_now};

const SECRET: &str = "a-test-secret-of-enough-length";

fn authenticator() -> Authenticator {
    Authenticator::new(&VerifierConfig::hs256(SECRET)).expect("valid config")
}

#[test]
fn a_minted_token_verifies_into_its_principal() {
    let token = TokenMinter::hs256(SECRET)
        .token("org-1", "user-1", &["admin"])
        .expect("mints");
    let principal = authenticator().verify(&token).expect("verifies");
    assert_eq!(principal.org_id, "org-1");
    assert_eq!(principal.user_id, "user-1");
    assert!(principal.is_admin());
}

#[test]
fn an_expired_token_is_refused() {
    let mut claims = Claims::new("org", "user", &[], Duration::ZERO);
    claims.exp = unix_now() - 3600;
    let token = TokenMinter::hs256(SECRET).mint(&claims).expect("mints");
    assert_eq!(authenticator().verify(&token), Err(AuthError::Expired));
}

#[test]
fn an_expired_token_is_refused_even_when_remembered_as_verified() {
    let auth = authenticator();
    let mut claims = Claims::new("org", "user", &[], Duration::ZERO);
    claims.exp = unix_now() - 3600;
    let token = TokenMinter::hs256(SECRET).mint(&claims).expect("mints");
    // As if it had been verified while still valid.
    let principal = Principal::new("org", "user", Vec::new());
    auth.verified.insert(&token, &principal, claims.exp);
    assert_eq!(auth.verify(&token), Err(AuthError::Expired));
    assert_eq!(auth.verified.len(), 0, "the stale entry is dropped");
}

#[test]
fn a_remembered_token_is_verified_again_after_the_longest_age() {
    let auth = authenticator();
    let minter = TokenMinter::hs256(SECRET);
    let token = minter.token("org", "user", &[]).expect("mints");
    auth.verify(&token).expect("verifies");
    // Its entry claims another user: served while fresh, replaced once
    // older than the longest age.
    let other = Principal::new("org", "someone-else", Vec::new());
    auth.verified.insert(&token, &other, unix_now() + 600);
    assert_eq!(
        auth.verify(&token).map(|p| p.user_id),
        Ok("someone-else".into())
    );
    let long_ago = std::time::Instant::now()
        .checked_sub(crate::cache::MAX_AGE + Duration::from_secs(1))
        .expect("the clock is past the longest age");
    auth.verified.age(&token, long_ago, unix_now() + 600);
    assert_eq!(auth.verify(&token).map(|p| p.user_id), Ok("user".into()));
}

#[test]
fn a_token_is_never_answered_from_another_tokens_entry() {
    let auth = authenticator();
    let minter = TokenMinter::hs256(SECRET);
    let alice = minter.token("org-a", "alice", &["admin"]).expect("mints");
    let bob = minter.token("org-b", "bob", &[]).expect("mints");
    assert_eq!(auth.verify(&alice).map(|p| p.user_id), Ok("alice".into()));
    assert_eq!(auth.verify(&bob).map(|p| p.org_id), Ok("org-b".into()));
    assert_eq!(auth.verify(&alice).map(|p| p.org_id), Ok("org-a".into()));
    // The same claims under another signature, and the remembered token
    // with one byte changed, are verified on their own and refused.
    let forged = TokenMinter::hs256("another-secret-of-enough-length")
        .token("org-a", "alice", &["admin"])
        .expect("mints");
    assert_eq!(auth.verify(&forged), Err(AuthError::Invalid));
    let signature = alice.rfind('.').expect("a token has three parts") + 1;
    let first = &alice[signature..=signature];
    let altered = format!(
        "{}{}{}",
        &alice[..signature],
        if first == "A" { "B" } else { "A" },
        &alice[signature + 1..]
    );
    assert_eq!(auth.verify(&altered), Err(AuthError::Invalid));
    assert_eq!(auth.verified.len(), 2);
}

#[test]
fn remembered_tokens_are_bounded() {
    let auth = authenticator();
    let minter = TokenMinter::hs256(SECRET);
    for user in 0..=crate::cache::MAX_ENTRIES {
        let token = minter
            .token("org", &format!("user-{user}"), &[])
            .expect("mints");
        auth.verify(&token).expect("verifies");
        assert!(auth.verified.len() <= crate::cache::MAX_ENTRIES);
    }
    let long = minter
        .token("org", &"u".repeat(crate::cache::MAX_TOKEN_BYTES), &[])
        .expect("mints");
    let before = auth.verified.len();
    assert_eq!(auth.verify(&long).map(|p| p.org_id), Ok("org".into()));
    assert_eq!(auth.verified.len(), before, "too long to remember");
}

#[test]
fn a_token_signed_with_another_secret_is_refused() {
    let token = TokenMinter::hs256("another-secret-of-enough-length")
        .token("org", "user", &[])
        .expect("mints");
    assert_eq!(authenticator().verify(&token), Err(AuthError::Invalid));
}

/// Found by the `jwt` fuzz target: a verifier configured with an issuer
/// and audience accepted a token that carried neither.
#[test]
fn a_token_without_the_required_issuer_or_audience_is_refused() {
    let mut config = VerifierConfig::hs256(SECRET);
    config.issuer = Some("https://issuer.example".into());
    config.audience = Some("switchboard".into());
    let strict = Authenticator::new(&config).expect("valid config");
    let minter = TokenMinter::hs256(SECRET);
    let mut claims = Claims::new("org", "user", &[], Duration::from_secs(3600));
    claims.aud = Some("switchboard".into());
    let no_issuer = minter.mint(&claims).expect("mints");
    assert_eq!(strict.verify(&no_issuer), Err(AuthError::Invalid));
    claims.aud = None;
    claims.iss = Some("https://issuer.example".into());
    let no_audience = minter.mint(&claims).expect("mints");
    assert_eq!(strict.verify(&no_audience), Err(AuthError::Invalid));
    claims.aud = Some("switchboard".into());
    let both = minter.mint(&claims).expect("mints");
    assert!(strict.verify(&both).is_ok());
}

#[test]
fn the_audience_may_be_a_string_or_a_list_holding_it() {
    let mut config = VerifierConfig::hs256(SECRET);
    config.audience = Some("switchboard".into());
    let strict = Authenticator::new(&config).expect("valid config");
    let minter = TokenMinter::hs256(SECRET);
    let with_audience = |aud: Value| {
        let token = minter
            .mint(&json!({"sub": "u", "org": "o", "exp": unix_now() + 600, "aud": aud}))
            .expect("mints");
        strict.verify(&token).map(|p| p.user_id)
    };
    assert_eq!(with_audience(json!("switchboard")), Ok("u".into()));
    assert_eq!(
        with_audience(json!(["other", "switchboard"])),
        Ok("u".into())
    );
    assert_eq!(
        with_audience(json!(["other", "more"])),
        Err(AuthError::Invalid)
    );
    assert_eq!(with_audience(json!("other")), Err(AuthError::Invalid));
    assert_eq!(with_audience(json!([])), Err(AuthError::Invalid));
}

#[test]
fn organization_and_roles_are_read_under_their_configured_names() {
    let mut config = VerifierConfig::hs256(SECRET);
    config.claims = ClaimNames {
        org: "https://switchboard.dev/tenant".into(),
        roles: "realm_access.roles".into(),
        ..ClaimNames::default()
    };
    let custom = Authenticator::new(&config).expect("valid config");
    let minter = TokenMinter::hs256(SECRET);
    let token = minter
        .mint(&json!({
            "sub": "alice", "exp": unix_now() + 600,
            "https://switchboard.dev/tenant": "acme",
            "realm_access": {"roles": ["admin", "viewer"]},
            "org": "not-this-one", "roles": ["not-these"],
        }))
        .expect("mints");
    let principal = custom.verify(&token).expect("verifies");
    assert_eq!(principal.org_id, "acme");
    assert_eq!(principal.roles, ["admin", "viewer"]);

    // Roles as one space-separated string (the `scope` style).
    config.claims.roles = "scope".into();
    let scoped = Authenticator::new(&config).expect("valid config");
    let token = minter
        .mint(&json!({"sub": "bob", "exp": unix_now() + 600,
            "https://switchboard.dev/tenant": "acme", "scope": "admin  read"}))
        .expect("mints");
    assert_eq!(
        scoped.verify(&token).expect("verifies").roles,
        ["admin", "read"]
    );
}

#[test]
fn claims_of_the_wrong_shape_are_refused() {
    let minter = TokenMinter::hs256(SECRET);
    for claims in [
        json!({"sub": "u", "exp": unix_now() + 600}),
        json!({"sub": "u", "org": 7, "exp": unix_now() + 600}),
        json!({"sub": 7, "org": "o", "exp": unix_now() + 600}),
        json!({"sub": "u", "org": "o", "roles": [1], "exp": unix_now() + 600}),
        json!({"sub": "u", "org": "o", "roles": {"a": 1}, "exp": unix_now() + 600}),
    ] {
        let token = minter.mint(&claims).expect("mints");
        assert_eq!(
            authenticator().verify(&token),
            Err(AuthError::Invalid),
            "{claims}"
        );
    }
}

#[test]
fn groups_teams_and_the_calling_service_are_read_for_policies() {
    let minter = TokenMinter::hs256(SECRET);
    let token = minter
        .mint(&json!({"sub": "u", "org": "o", "exp": unix_now() + 600,
            "groups": ["eng", "oncall"], "teams": "payments search",
            "azp": "billing-service", "client_id": "not-this-one"}))
        .expect("mints");
    let principal = authenticator().verify(&token).expect("verifies");
    assert_eq!(principal.groups, ["eng", "oncall"]);
    assert_eq!(principal.teams, ["payments", "search"]);
    assert_eq!(principal.service, "billing-service");
    let token = minter
        .mint(&json!({"sub": "u", "org": "o", "exp": unix_now() + 600, "client_id": "cli"}))
        .expect("mints");
    assert_eq!(
        authenticator().verify(&token).expect("verifies").service,
        "cli"
    );
    let token = minter.token("o", "u", &[]).expect("mints");
    let bare = authenticator().verify(&token).expect("verifies");
    assert!(bare.groups.is_empty() && bare.teams.is_empty() && bare.service.is_empty());
}

#[test]
fn lists_at_their_bounds_verify_and_past_them_are_refused() {
    let limits = ClaimLimits::default();
    let minter = TokenMinter::hs256(SECRET);
    let verify = |claim: &str, value: Value| {
        let mut claims = json!({"sub": "u", "org": "o", "exp": unix_now() + 600});
        claims[claim] = value;
        authenticator().verify(&minter.mint(&claims).expect("mints"))
    };
    let names = |n: usize| (0..n).map(|i| format!("g{i}")).collect::<Vec<_>>();
    let long = "x".repeat(limits.max_value_bytes);
    for claim in ["roles", "groups", "teams"] {
        assert!(verify(claim, json!(names(limits.max_values))).is_ok());
        assert!(verify(claim, json!(names(limits.max_values).join(" "))).is_ok());
        assert!(verify(claim, json!([long.clone()])).is_ok());
        for over in [
            json!(names(limits.max_values + 1)),
            json!(names(limits.max_values + 1).join(" ")),
            json!([format!("{long}x")]),
            json!(format!("{long}x")),
        ] {
            assert_eq!(verify(claim, over), Err(AuthError::Invalid), "{claim}");
        }
    }
    assert!(verify("azp", json!(long.clone())).is_ok());
    assert_eq!(
        verify("azp", json!(format!("{long}x"))),
        Err(AuthError::Invalid)
    );
}

#[test]
fn a_short_hs256_secret_or_an_empty_claim_name_is_refused() {
    assert!(matches!(
        Authenticator::new(&VerifierConfig::hs256("short")),
        Err(AuthError::Key(_))
    ));
    let mut config = VerifierConfig::hs256(SECRET);
    config.claims.org = " ".into();
    assert!(matches!(
        Authenticator::new(&config),
        Err(AuthError::Key(_))
    ));
}

#[test]
fn a_token_without_organization_is_refused() {
    let token = TokenMinter::hs256(SECRET)
        .token("", "user", &[])
        .expect("mints");
    assert_eq!(authenticator().verify(&token), Err(AuthError::Invalid));
}
