use serde_json::json;

use super::*;

fn binding() -> Binding {
    Binding {
        org_id: "org-a".into(),
        requester: "alice".into(),
        integration_id: "int-1".into(),
        tool_name: "delete_repo".into(),
        arguments_digest: arguments_digest(&json!({"name": "x"})),
    }
}

#[test]
fn digest_ignores_key_order_at_every_depth() {
    let one = json!({"b": 1, "a": {"d": [1, {"y": 2, "x": 1}], "c": "s"}});
    let two = json!({"a": {"c": "s", "d": [1, {"x": 1, "y": 2}]}, "b": 1});
    assert_eq!(arguments_digest(&one), arguments_digest(&two));
    assert_ne!(arguments_digest(&one), arguments_digest(&json!({"b": 2})));
    assert_eq!(arguments_digest(&one).len(), 64);
}

#[test]
fn digest_of_known_text() {
    // SHA-256 of `{"a":1,"b":[true,null]}`.
    assert_eq!(
        arguments_digest(&json!({"b": [true, null], "a": 1})),
        "1cc69c7fa23616ca2ec3ee70d24390a6225c8832db8a4c814c7e0e7f942f8668"
    );
}

#[test]
fn approved_and_fitting_is_redeemable_until_expiry() {
    let b = binding();
    assert_eq!(refusal(&b, ApprovalState::Approved, "", 100, &b, 99), None);
    assert_eq!(
        refusal(&b, ApprovalState::Approved, "", 100, &b, 100),
        Some(RedeemRefusal::Expired)
    );
}

#[test]
fn each_mismatch_class_is_named() {
    let b = binding();
    let mut other = b.clone();
    other.requester = "mallory".into();
    other.tool_name = "other".into();
    assert_eq!(
        refusal(&b, ApprovalState::Approved, "", 100, &other, 0),
        Some(RedeemRefusal::Mismatch(Mismatch::Requester))
    );
    let mut other = b.clone();
    other.integration_id = "int-2".into();
    assert_eq!(mismatch(&b, &other), Some(Mismatch::Integration));
    let mut other = b.clone();
    other.tool_name = "other".into();
    assert_eq!(mismatch(&b, &other), Some(Mismatch::Tool));
    let mut other = b.clone();
    other.arguments_digest = arguments_digest(&json!({"name": "y"}));
    assert_eq!(
        Mismatch::Arguments.reason(),
        mismatch(&b, &other).map_or("", Mismatch::reason)
    );
    let mut other = b.clone();
    other.org_id = "org-b".into();
    assert_eq!(
        refusal(&b, ApprovalState::Approved, "", 100, &other, 0),
        Some(RedeemRefusal::NotFound)
    );
}

#[test]
fn used_denied_pending_and_expired_are_refused() {
    let b = binding();
    assert_eq!(
        refusal(&b, ApprovalState::Used, "", 100, &b, 0),
        Some(RedeemRefusal::AlreadyUsed)
    );
    assert_eq!(
        refusal(&b, ApprovalState::Denied, "no", 100, &b, 0),
        Some(RedeemRefusal::Denied {
            comment: "no".into()
        })
    );
    assert_eq!(
        refusal(&b, ApprovalState::Pending, "", 100, &b, 0),
        Some(RedeemRefusal::Pending)
    );
    assert_eq!(
        refusal(&b, ApprovalState::Expired, "", 100, &b, 0),
        Some(RedeemRefusal::Expired)
    );
}

#[test]
fn states_round_trip_their_stored_spelling() {
    for state in [
        ApprovalState::Pending,
        ApprovalState::Approved,
        ApprovalState::Denied,
        ApprovalState::Used,
        ApprovalState::Expired,
    ] {
        assert_eq!(ApprovalState::parse(state.as_str()), Some(state));
    }
    assert_eq!(ApprovalState::parse("PENDING"), None);
}
