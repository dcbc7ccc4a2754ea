//! Hostile use of the shared server stack, as runs-service sees it.

#[test]
fn help_does_not_print_secret_environment_values() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_runs-service"))
        .arg("--help")
        .env("DATABASE_URL", "postgres://sb:hunter2-db@db.internal/sb")
        .env("SWITCHBOARD_JWT_SECRET", "hunter2-jwt-secret-0123456789")
        .env(
            "SWITCHBOARD_MODEL_PROVIDERS",
            "local=openai,https://user:hunter2-model@models.internal/v1",
        )
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://user:hunter2-otel@collector:4317",
        )
        .output()
        .expect("the binary runs");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("DATABASE_URL"), "{help}");
    assert!(!help.contains("hunter2"), "{help}");
}
