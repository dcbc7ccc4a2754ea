//! Failures read as one line naming the gRPC code and the reason, with an
//! exit code that says what kind of failure it was.

use switchboard_auth::TokenMinter;

use crate::world::{ORG, World};

fn one_line_on_stderr(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
    assert!(output.stdout.is_empty(), "nothing on stdout: {output:?}");
    stderr.trim_end().to_owned()
}

#[tokio::test]
async fn a_wrong_token_prints_one_line_and_exits_4() {
    let world = World::start(Vec::new()).await;
    let forged = TokenMinter::hs256("some-other-secret-0123456789")
        .token(ORG, "user-cli", &["admin"])
        .expect("a token");
    for args in [
        vec!["--token", forged.as_str(), "integrations", "list"],
        vec!["--token", forged.as_str(), "agents", "list"],
        vec!["--token", "not-a-jwt", "--json", "threads", "list"],
    ] {
        let output = world.run(&args).await;
        let line = one_line_on_stderr(&output);
        assert!(
            line.starts_with("error: ")
                && line.contains(": UNAUTHENTICATED (ERROR_REASON_UNAUTHENTICATED)"),
            "{line}"
        );
        assert_eq!(output.status.code(), Some(4), "{line}");
    }
}

#[tokio::test]
async fn a_missing_object_is_exit_5_and_a_refused_one_exit_6() {
    let world = World::start(Vec::new()).await;
    let output = world.run(&["integrations", "show", "nothing-here"]).await;
    assert_eq!(
        one_line_on_stderr(&output),
        r#"error: no integration with id or slug "nothing-here""#
    );
    assert_eq!(output.status.code(), Some(5));

    let output = world
        .run(&["threads", "show", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"])
        .await;
    assert!(
        one_line_on_stderr(&output).contains("NOT_FOUND (ERROR_REASON_NOT_FOUND)"),
        "{output:?}"
    );
    assert_eq!(output.status.code(), Some(5));

    let output = world
        .run(&[
            "integrations",
            "create",
            "--slug",
            "Bad Slug",
            "--url",
            "http://127.0.0.1:1/mcp",
        ])
        .await;
    let line = one_line_on_stderr(&output);
    assert!(
        line.contains("INVALID_ARGUMENT (ERROR_REASON_INVALID_ARGUMENT)"),
        "{line}"
    );
    assert!(line.contains("slug"), "{line}");
    assert_eq!(output.status.code(), Some(6));
}

#[tokio::test]
async fn an_unreachable_service_is_exit_3_and_no_token_exit_4() {
    let world = World::start(Vec::new()).await;
    let output = world
        .run(&["--runs-addr", "127.0.0.1:1", "agents", "list"])
        .await;
    let line = one_line_on_stderr(&output);
    assert!(
        line.starts_with("error: runs-service: UNAVAILABLE"),
        "{line}"
    );
    assert_eq!(output.status.code(), Some(3));

    let output = world.run(&["--token", "", "agents", "list"]).await;
    assert!(one_line_on_stderr(&output).starts_with("error: no token"));
    assert_eq!(output.status.code(), Some(4));
}

#[tokio::test]
async fn a_failed_validation_says_why_and_exits_1() {
    let world = World::start(Vec::new()).await;
    world
        .ok(&[
            "integrations",
            "create",
            "--slug",
            "gone",
            "--url",
            "http://127.0.0.1:1/mcp",
        ])
        .await;
    let output = world.run(&["integrations", "validate", "gone"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("✗ could not connect"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: validation failed"), "{stderr}");
}
