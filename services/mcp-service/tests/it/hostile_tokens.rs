//! Tokens signed with the right key but issued for another audience: a signer
//! shared with other services must not open this one.

use switchboard_auth::Claims;
use switchboard_proto::mcp::v1 as pb;
use switchboard_test_support::{DbKind, db_tests, minter};
use tonic::Code;

use crate::support::{req, start};

fn admin_token(audience: Option<&str>) -> String {
    let mut claims = Claims::new(
        "org-a",
        "admin-user",
        &["admin"],
        std::time::Duration::from_secs(600),
    );
    claims.aud = audience.map(str::to_owned);
    minter()
        .mint(&claims)
        .expect("the test secret signs tokens")
}

async fn a_token_for_another_audience_is_refused(kind: DbKind) {
    let mut h = start(kind).await;
    for (audience, allowed) in [
        (Some("billing"), false),
        (None, false),
        (Some(switchboard_auth::DEFAULT_AUDIENCE), true),
    ] {
        let answer = h
            .client
            .list_integrations(req(
                pb::ListIntegrationsRequest::default(),
                &admin_token(audience),
            ))
            .await;
        match (answer, allowed) {
            (Ok(_), true) => {}
            (Err(status), false) => {
                assert_eq!(
                    status.code(),
                    Code::Unauthenticated,
                    "{audience:?}: {status:?}"
                );
            }
            (answer, _) => panic!("{audience:?}: {answer:?}"),
        }
    }
}

db_tests!(a_token_for_another_audience_is_refused);
