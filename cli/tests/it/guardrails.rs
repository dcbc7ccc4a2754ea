//! `integrations create --guardrail` and `integrations guardrails`: an
//! integration's guardrail settings written, shown, replaced and cleared;
//! a misspelt detector refused with the field named.

use crate::world::World;

#[tokio::test]
async fn an_integrations_guardrails_are_set_shown_replaced_and_cleared() {
    let world = World::start(Vec::new()).await;
    let url = world.upstream.url();
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "payments",
            "--url",
            &url,
            "--guardrail",
            "card_number:result=off",
        ])
        .await;
    let shown = world.ok(&["integrations", "show", "payments"]).await;
    assert!(shown.contains("card_number:result=off"), "{shown}");

    let replaced = world
        .json(&[
            "integrations",
            "guardrails",
            "payments",
            "--set",
            "email:arguments=block",
            "--set",
            "high_entropy:result=redact",
        ])
        .await;
    assert_eq!(
        replaced["guardrails"],
        serde_json::json!([
            { "detector": "email", "place": "arguments", "action": "block" },
            { "detector": "high_entropy", "place": "result", "action": "redact" },
        ])
    );

    let refused = world
        .run(&[
            "integrations",
            "guardrails",
            "payments",
            "--set",
            "passport:result=block",
        ])
        .await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("integration.guardrails[0].detector"),
        "{said}"
    );

    world.ok(&["integrations", "guardrails", "payments"]).await;
    let shown = world.ok(&["integrations", "show", "payments"]).await;
    assert!(
        shown.contains("guardrails") && !shown.contains("email:arguments"),
        "{shown}"
    );
}
