//! `switchboard policies`: a policy written from a file, read back,
//! versioned, explained and deleted.

use crate::world::World;

#[tokio::test]
async fn a_policy_is_written_from_a_file_explained_versioned_and_deleted() {
    let world = World::start(Vec::new()).await;
    world.agent(&[]).await;
    let dir = tempfile::tempdir().expect("a directory");
    let json = dir.path().join("guard.json");
    std::fs::write(
        &json,
        r#"{"name": "guard", "rules": [{"name": "no-fail", "condition": "tool.name == 'fail'",
            "effect": "deny", "reason": "failing is off"}]}"#,
    )
    .expect("written");
    let written = world
        .json(&["policies", "put", json.to_str().expect("utf-8")])
        .await;
    assert_eq!(
        (written["name"].as_str(), written["version"].as_i64()),
        (Some("guard"), Some(1))
    );
    assert_eq!(written["rules"][0]["effect"], "POLICY_EFFECT_DENY");

    let toml = dir.path().join("guard.toml");
    std::fs::write(
        &toml,
        "name = \"guard\"\ndefault_effect = \"allow\"\n[[rules]]\nname = \"gate\"\ncondition = \"tool.destructive\"\neffect = \"require_approval\"\napprover_role = \"admin\"\n",
    )
    .expect("written");
    let path = toml.to_str().expect("utf-8");
    let stale = world.run(&["policies", "put", path]).await;
    assert!(!stale.status.success(), "version 1 exists");
    let second = world
        .json(&["policies", "put", path, "--expected-version", "1"])
        .await;
    assert_eq!(second["version"], 2);

    let versions = world.json(&["policies", "versions", "guard"]).await;
    let numbers: Vec<i64> = versions["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter_map(|v| v["version"].as_i64())
        .collect();
    assert_eq!(numbers, [2, 1]);
    let first = world
        .json(&["policies", "get", "guard", "--version", "1"])
        .await;
    assert_eq!(first["rules"][0]["name"], "no-fail");

    let explained = world
        .ok(&["policies", "explain", "example", "--tool", "sleep"])
        .await;
    assert!(
        explained.starts_with("require_approval by guard@2/gate"),
        "{explained}"
    );

    let listed = world.ok(&["policies", "list"]).await;
    assert!(listed.contains("guard"), "{listed}");
    world
        .ok(&["policies", "delete", "guard", "--expected-version", "2"])
        .await;
    let gone = world.run(&["policies", "get", "guard"]).await;
    assert!(!gone.status.success());
}
