//! Whether message content (tool arguments and results, prompts) may be
//! recorded on spans: an operator's choice, off unless turned on.

use std::sync::atomic::{AtomicBool, Ordering};

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Turns content capture on or off from now on (set from the settings at
/// start; tests turn it on and off between runs).
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// Whether tool arguments, tool results and prompts may be recorded on spans
/// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`). Credentials are
/// never recorded, whatever this says.
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}
