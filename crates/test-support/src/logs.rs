//! Capturing the logs a test process writes, to prove what they do not say.

use std::{
    io,
    sync::{Arc, Mutex, OnceLock},
};

use switchboard_telemetry::{LogFormat, TelemetryConfig};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if let Ok(mut buffer) = self.0.lock() {
            buffer.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

static CAPTURE: OnceLock<Buffer> = OnceLock::new();

/// Installs (once per test process) a global subscriber that records every
/// log line at DEBUG and above, as JSON, into memory.
pub fn capture() {
    CAPTURE.get_or_init(|| {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let config = TelemetryConfig {
            log_format: LogFormat::Json,
            log_filter: "debug".into(),
            ..TelemetryConfig::new("test")
        };
        // Kept for the life of the process.
        std::mem::forget(
            switchboard_telemetry::init_with_writer(&config, move || writer.clone())
                .expect("the capturing subscriber is the first one installed"),
        );
        buffer
    });
}

/// Everything logged since [`capture`] was first called.
pub fn captured() -> String {
    CAPTURE
        .get()
        .and_then(|b| {
            b.0.lock()
                .ok()
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        })
        .unwrap_or_default()
}
